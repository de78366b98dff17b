/* The forwards of the cuBLAS-driven backends replayed as CUDA graphs, an
 * opt-in (ATTNPROF_CUDA_GRAPHS=1): a forward called again with exactly the
 * arguments of the call before it (every pointer, shape, stride, flag; the
 * stream aside) is captured once into a graph and from then on launched with
 * one cudaGraphLaunch. That brings a forward of 5 to 7 GPU ops from 22-44 us
 * of host time (eager, cuBLAS launches replayed: launch_replay.h) to about 4-6
 * (H200). It is off by default because it changes what the profiler shows: every op is launched through cudaGraphLaunch, and
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

#endif
