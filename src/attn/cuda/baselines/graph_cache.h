/* The graph mode of the cuBLAS-driven backends, an option of the engine
 * handle (opts.cuda_graphs; the CLI's --cuda-graphs): a forward called again
 * with exactly the arguments of the call before it (every pointer, shape,
 * stride, flag; the stream aside) is captured once into a CUDA graph, kept in
 * the handle's cache, and from then on launched with one cudaGraphLaunch.
 * That takes most of a forward's host time away (docs/engine.md). Off by default because the profile then shows cudaGraphLaunch
 * and the kernels the graph ran (attributed to the range that launched it),
 * and the driver may run the captured device-to-device memcpy as a copy
 * kernel. A call whose arguments differ from the last one runs eagerly, so a
 * loop over ever-new buffers never pays a capture per call; a stream that is
 * itself being captured always gets the eager ops (they join the caller's
 * graph). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_GRAPH_CACHE_H
#define ATTNPROF_SRC_ATTN_CUDA_GRAPH_CACHE_H

#include "attn/cuda/baselines/cuda_ctx.h"

/* The GPU ops of one forward, enqueued on `stream` (the caller's stream, or
 * the capture stream). Must not allocate or synchronize: everything it
 * needs was prepared before (scratch, cached masks). */
typedef attn_status (*attn_cuda_ops_fn)(const attn_args *a, attn_cuda_ctx *ctx, cudaStream_t stream,
                                        void *state);

/* Runs ops for args on args->stream: replayed from the cache, captured, or
 * eagerly (see above). `tag` tells apart backends sharing one context; `keep`
 * is the cached mask the ops read (NULL if none), which a graph bakes in. */
attn_status attn_cuda_graph_run(attn_cuda_ctx *ctx, int tag, const attn_args *a, const void *keep,
                                attn_cuda_ops_fn ops, void *state);

/* Frees the capture stream and the last call's key (device teardown). */
void attn_cuda_graphs_free(attn_cuda_ctx *ctx);

#endif
