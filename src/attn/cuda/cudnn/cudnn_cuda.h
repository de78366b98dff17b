/* What the cudnn backend shows tests and benches beyond attn.h: a fault to
 * inject, and a description of the plan serving given inputs. The graph form
 * is the handle's opts.cudnn_graph; the plan cache is the handle's cache
 * (attn_ctx_stats_get). No cuDNN or CUDA type appears here. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDA_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/attn.h"

/* Test hook: while on (for ctx), plans are built with a batch of -1 in Q's
 * descriptor, which cuDNN refuses (CUDNN_STATUS_BAD_PARAM), so the refusal path (cuDNN's status in
 * the reason, the refusal cached) runs on any cuDNN version. Part of the
 * cache key. */
void attn_cudnn_set_fault(attn_ctx *ctx, int on);

/* Builds (or finds) the plan for these inputs and writes one line: the
 * graph form, engine, heuristics mode, workspace, build time; or why no
 * plan exists. The status is the why-not check's. */
attn_status attn_cudnn_describe(attn_ctx *ctx, const attn_args *a, char *buf, size_t len);

#endif
