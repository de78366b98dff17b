/* The engine handle's per-device state for the cuBLAS-driven CUDA backends
 * (naive, naive_inplace, math): the cuBLAS handle and its workspace, the
 * scratch buffer the S x S scores live in, and the graph mode's capture
 * stream. Created by the first call on a device, owned by the attn_ctx (one
 * thread at a time uses it: the handle's rule), freed with it. naive's
 * causal mask and captured graphs are entries of the handle's cache. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDA_CTX_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDA_CTX_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "attn/backend.h"
#include "attn/cuda/baselines/blas_loader.h"

/* Side streams one call may fork its independent launches onto (the
 * packed prefill's per-sequence launches, seqs_gather.cu). */
#define ATTN_CUDA_LANES 3

typedef struct attn_cuda_ctx {
  attn_ctx *owner;
  int device;
  cublasHandle_t blas;
  void *blas_ws;       /* cuBLAS's workspace, owned here (not cuBLAS's pool) */
  cudaStream_t stream; /* the stream the buffers were last used on */
  int used;            /* whether `stream` is meaningful */
  void *scratch;       /* the scores and fp32 copies; grows, never shrinks */
  size_t scratch_bytes;
  struct attn_cuda_graphs *graphs;     /* graph_cache.c: the capture stream, last call */
  cudaStream_t lanes[ATTN_CUDA_LANES]; /* side streams for independent launches */
  cudaEvent_t lane_done[ATTN_CUDA_LANES], lane_go; /* their fork and join */
  int have_lanes;
} attn_cuda_ctx;

/* Bytes of the cuBLAS workspace each context owns (what PyTorch gives
 * cuBLAS on Hopper: split-K and stream-K kernels want it). */
#define ATTN_CUDA_BLAS_WS_BYTES ((size_t)32 << 20)

/* Frees the per-device state of every device (keep_handles: memory only,
 * cuBLAS handles stay), and the bytes it holds: for attn_ctx_trim/destroy
 * and attn_ctx_stats_get through common/device_state.c. */
void attn_cuda_baselines_release(attn_ctx *ctx, int keep_handles);
size_t attn_cuda_baselines_bytes(const attn_ctx *ctx);

/* ctx's state for `device`, created on first use; on failure a status with
 * attn_last_error() naming the failed call. */
attn_status attn_cuda_ctx_get(attn_ctx *ctx, int device, attn_cuda_ctx **out);
/* ctx's state for `device` if it exists (why-not checks must not create one). */
const attn_cuda_ctx *attn_cuda_ctx_peek(const attn_ctx *ctx, int device);

/* Puts ctx's cuBLAS handle on `stream` with the context's own workspace
 * (what ctx_begin does for the caller's stream; the graph capture and the
 * launch replay point it at their private streams and back). */
attn_status attn_cuda_ctx_blas_on(attn_cuda_ctx *ctx, cudaStream_t stream);

/* Makes ctx's device current and its buffers safe to use on `stream`: if
 * they were last used on another stream, that stream is synchronized first
 * (buffers are reused without a caching allocator's per-stream bookkeeping).
 * Points cuBLAS at the stream and at the owned workspace. */
attn_status attn_cuda_ctx_begin(attn_cuda_ctx *ctx, cudaStream_t stream);

/* ctx's side streams and their events, created on first use (non-blocking
 * streams: the caller forks and joins them with the events). */
attn_status attn_cuda_ctx_lanes(attn_cuda_ctx *ctx);

/* The scratch buffer, grown to at least `bytes` (contents are lost); refused
 * past the handle's workspace_limit. */
attn_status attn_cuda_ctx_scratch(attn_cuda_ctx *ctx, size_t bytes, void **out);

/* naive's causal mask for (Sq, Sk, offset) on ctx's device: an entry of the
 * handle's cache, built on the first call with that shape. */
attn_status attn_cuda_ctx_causal_keep(attn_cuda_ctx *ctx, int64_t sq, int64_t sk, int64_t offset,
                                      cudaStream_t stream, const uint8_t **keep);

/* The device-memory check: OK when `need` bytes of scratch (plus `extra`
 * bytes outside it) fit the handle's workspace_limit and what the handle
 * already holds plus what the device has free; otherwise OUT_OF_MEMORY with
 * the bytes needed and free (or the limit), before anything is allocated or
 * launched. Sizes are doubles so that products of four dimensions cannot wrap. */
attn_status attn_cuda_memory_why_not(const attn_ctx *ctx, const attn_args *a, double need,
                                     double extra, const char *impl, const char *what, char *why,
                                     size_t len);

/* The common case of that check, before any text is formatted: the scratch
 * the handle already holds is big enough and nothing else is needed. */
static inline int attn_cuda_memory_held(const attn_ctx *ctx, const attn_args *a, double need,
                                        double extra) {
  const attn_cuda_ctx *c = attn_cuda_ctx_peek(ctx, a->q.device);
  return c && need <= (double)c->scratch_bytes && extra <= 0;
}

/* Refuses (UNSUPPORTED, reason in why) when the tensors' device ordinal is
 * not a device this process can use, or when B*Hq*Sq rows do not fit the
 * kernels' one-block-per-row grid. */
attn_status attn_cuda_rows_why_not(const attn_args *a, const char *impl, char *why, size_t len);

/* Sets attn_last_error() to "CALL failed: CUBLAS_STATUS_... (text)". */
attn_status attn_cublas_fail(cublasStatus_t st, const char *call);

#define ATTN_CUBLAS_TRY(call)                                                          \
  do {                                                                                 \
    cublasStatus_t attn_bst_ = (call);                                                 \
    if (attn_bst_ != CUBLAS_STATUS_SUCCESS) return attn_cublas_fail(attn_bst_, #call); \
  } while (0)

/* Rounds a byte count up to the 256-byte alignment cudaMalloc gives, so that
 * sub-buffers carved from scratch keep 16-byte vector alignment. */
static inline size_t attn_cuda_align(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

#endif
