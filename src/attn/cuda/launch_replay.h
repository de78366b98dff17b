/* Eager replay of cuBLAS's launches, on by default (ATTNPROF_GEMM_REPLAY=0
 * turns it off). A cuBLAS GEMM call redoes its host work on every call
 * (descriptors, heuristics, the kernel's parameter block with its TMA
 * descriptors) to issue the same launches for the same arguments; that is
 * most of the host time of naive and math (docs/gpu-baselines.md, "Host
 * time"). Here a call seen a second time with the same key (every argument
 * of the cuBLAS call, pointers included) is captured once on a private
 * stream, and when it captures to a chain of kernels and memsets, those are
 * kept and from then on re-issued on the caller's stream: the same
 * function, geometry, cluster attributes and parameter bytes, through
 * cuLaunchKernelEx when the parameters were captured as one packed buffer
 * and cudaLaunchKernelExC when captured one by one (for cuBLAS 13.0 exactly
 * the API it uses itself: nvjet bf16/f16 kernels and sm80 FP32 kernels),
 * memsets through cudaMemsetAsync. The same GPU ops and launch APIs in the
 * profile, none of cuBLAS's per-call host work (6-9 us per GEMM, H200). Anything
 * else (another node kind, a caller's stream under capture, a forward being
 * captured by attn_cuda_graph_run) runs the plain call. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_LAUNCH_REPLAY_H
#define ATTNPROF_SRC_ATTN_CUDA_LAUNCH_REPLAY_H

#include "attn/cuda/cuda_ctx.h"

/* The longest key (bytes) a call may give. */
#define ATTN_CUDA_REPLAY_KEY 160

/* Issues one library call's GPU work on `stream` using ctx->blas. */
typedef attn_status (*attn_cuda_issue_fn)(void *arg, cudaStream_t stream);

attn_status attn_cuda_replay_run(attn_cuda_ctx *ctx, const void *key, size_t key_len,
                                 attn_cuda_issue_fn issue, void *arg, cudaStream_t stream);
/* Whether replay is on (the driver entry points found, not switched off). */
int attn_cuda_replay_enabled(void);
/* The kept launches of `key` as text ("memset 4 B; kernel NAME grid ..."):
 * 1 when the key is replayed, 0 otherwise. For benches and tests. */
int attn_cuda_replay_describe(const attn_cuda_ctx *ctx, const void *key, size_t key_len,
                              char *out, size_t len);
/* Drops the kept launches (the buffers they name moved or were freed). */
void attn_cuda_replays_clear(attn_cuda_ctx *ctx);
void attn_cuda_replays_free(attn_cuda_ctx *ctx);

#endif
