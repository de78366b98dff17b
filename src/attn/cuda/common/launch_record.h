/* The handle's launch record for one device: what the kernel launchers learn
 * once and then look up (a kernel's shared-memory opt-in done, an occupancy
 * answer), keyed by the kernel's host pointer and a small integer. It lives
 * in attn_ctx (ctx.h, `launch`), so two handles never share it; calls on one
 * handle are serialized by the caller or by opts.locked, as for the rest of
 * the handle's state. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_COMMON_LAUNCH_RECORD_H
#define ATTNPROF_SRC_ATTN_CUDA_COMMON_LAUNCH_RECORD_H

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 and *val when (key, sub) was recorded for `device` in ctx, else 0. */
int attn_launch_find(const attn_ctx *ctx, int device, const void *key, int sub, int *val);

/* Records (key, sub) -> val for `device`; a later put of the same key and sub
 * replaces it. ATTN_STATUS_OUT_OF_MEMORY when the record cannot grow. With a
 * NULL ctx (a planner called without a handle) nothing is kept: find then
 * says 0 and the caller asks the driver again. */
attn_status attn_launch_put(attn_ctx *ctx, int device, const void *key, int sub, int val);

/* Raises `kernel`'s dynamic shared-memory limit to `bytes` (above 48 KB) on
 * the current device, once per handle and device. */
attn_status attn_launch_smem_limit(attn_ctx *ctx, const void *kernel, int bytes);

/* Frees every device's record (attn_ctx_destroy). */
void attn_launch_release(attn_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
