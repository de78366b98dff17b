/* The engine handle's insides (attn_ctx of attn.h): options, the one cache,
 * the lock, and per-device state the CUDA half hangs here. Nothing of it is
 * global or per thread: a backend reaches state only through the ctx it is
 * called with. */
#ifndef ATTNPROF_SRC_ATTN_CTX_H
#define ATTNPROF_SRC_ATTN_CTX_H

#include <pthread.h>

#include "attn/cache.h"
#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_CTX_MAX_DEVICES = 64 };

struct attn_cuda_ctx;      /* cuda/common/device_state.h */
struct cudnn_device;       /* cuda/cudnn/cudnn_state.h */
struct attn_launch_record; /* cuda/common/launch_record.c */

struct attn_ctx {
  attn_ctx_opts opts;
  char cpu_isa[16]; /* opts.cpu_isa points here */
  attn_cache *cache;
  pthread_mutex_t lock; /* taken around every call when opts.locked */
  struct attn_cuda_ctx *cuda[ATTN_CTX_MAX_DEVICES];
  struct cudnn_device *cudnn[ATTN_CTX_MAX_DEVICES];
  struct attn_launch_record *launch[ATTN_CTX_MAX_DEVICES]; /* kernels' opt-ins, occupancy */
  int cudnn_fault; /* test hook: attn_cudnn_set_fault (cuda/cudnn/cudnn_cuda.h) */
};

/* The CUDA half's teardown and accounting of a handle's device state
 * (defined under src/attn/cuda; no-ops in a CPU-only build). */
void attn_cuda_ctx_release(attn_ctx *ctx, int keep_handles);
size_t attn_cuda_ctx_bytes(const attn_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
