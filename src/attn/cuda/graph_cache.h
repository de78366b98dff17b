/* The forwards of the cuBLAS-driven backends replayed as CUDA graphs, an
 * opt-in (ATTNPROF_CUDA_GRAPHS=1): a forward called again with exactly the
 * arguments of the call before it (every pointer, shape, stride, flag; the
 * stream aside) is captured once into a graph and from then on launched with
 * one cudaGraphLaunch. That brings a forward of 5 to 7 GPU ops from 22-37 us
 * of host time (eager, cuBLAS launches replayed as below) to about 6 (H200). It is off by default because it changes
 * what the profiler shows: every op is launched through cudaGraphLaunch, and
 * the driver may run the captured device-to-device memcpy as a copy kernel
 * (seen on the H200: `run --backend naive` then counted 6 kernels and no
 * memcpy), which hides the very copy naive exists to show. A call whose
 * arguments differ from the last one runs eagerly, so a loop over ever-new
 * buffers never pays a capture per call; a stream that is itself being
 * captured always gets the eager ops (they join the caller's graph). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_GRAPH_CACHE_H
#define ATTNPROF_SRC_ATTN_CUDA_GRAPH_CACHE_H

#include "attn/cuda/cuda_ctx.h"

/* The GPU ops of one forward, enqueued on `stream` (the caller's stream, or
 * the capture stream). Must not allocate or synchronize: everything it
 * needs was prepared before (scratch, cached masks). */
typedef attn_status (*attn_cuda_ops_fn)(const attn_args *a, attn_cuda_ctx *ctx,
                                        cudaStream_t stream, void *state);

/* Runs ops for args on args->stream: replayed from the cache, captured, or
 * eagerly (see above). `tag` tells apart backends sharing one context. */
attn_status attn_cuda_graph_run(attn_cuda_ctx *ctx, int tag, const attn_args *a,
                                attn_cuda_ops_fn ops, void *state);

/* Drops every cached graph of ctx (its buffers moved or were freed). */
void attn_cuda_graphs_clear(attn_cuda_ctx *ctx);
/* Frees the cache itself (context teardown). */
void attn_cuda_graphs_free(attn_cuda_ctx *ctx);

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
