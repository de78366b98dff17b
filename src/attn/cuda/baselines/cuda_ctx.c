/* The engine handle's per-device state of the cuBLAS-driven backends:
 * creation, stream hand-over, scratch growth, the cached causal mask, the
 * memory check, and cuBLAS error text. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn/cuda/baselines/baseline_kernels.h"
#include "attn/cuda/baselines/cuda_ctx.h"
#include "attn/cuda/baselines/graph_cache.h"
#include "attn/cuda/common/cuda_common.h"

/* Frees c's device memory (after the device is done with it); the cuBLAS
 * handle too unless keep_handles. */
static void ctx_free_memory(attn_cuda_ctx *c, int keep_handles) {
  if (cudaSetDevice(c->device) != cudaSuccess) return;
  cudaFree(c->scratch); /* cudaFree waits for the device */
  c->scratch = NULL, c->scratch_bytes = 0;
  if (keep_handles) return;
  attn_cuda_graphs_free(c);
  if (c->have_lanes) {
    for (int i = 0; i < ATTN_CUDA_LANES; i++)
      cudaStreamDestroy(c->lanes[i]), cudaEventDestroy(c->lane_done[i]);
    cudaEventDestroy(c->lane_go);
    c->have_lanes = 0;
  }
  if (c->blas) cublasDestroy(c->blas);
  cudaFree(c->blas_ws);
  c->blas = NULL, c->blas_ws = NULL;
}

void attn_cuda_baselines_release(attn_ctx *ctx, int keep_handles) {
  for (int i = 0; i < ATTN_CTX_MAX_DEVICES; i++) {
    attn_cuda_ctx *c = ctx->cuda[i];
    if (!c) continue;
    ctx_free_memory(c, keep_handles);
    if (!keep_handles) free(c), ctx->cuda[i] = NULL;
  }
}

size_t attn_cuda_baselines_bytes(const attn_ctx *ctx) {
  size_t n = 0;
  for (int i = 0; i < ATTN_CTX_MAX_DEVICES; i++)
    if (ctx->cuda[i])
      n += ctx->cuda[i]->scratch_bytes + (ctx->cuda[i]->blas_ws ? ATTN_CUDA_BLAS_WS_BYTES : 0);
  return n;
}

attn_status attn_cublas_fail(cublasStatus_t st, const char *call) {
  attn_status s =
      st == CUBLAS_STATUS_ALLOC_FAILED ? ATTN_STATUS_OUT_OF_MEMORY : ATTN_STATUS_BACKEND_ERROR;
  if (attn_blas_load()) return attn_fail(s, "%s failed: cuBLAS status %d", call, (int)st);
  return attn_fail(s, "%s failed: %s (%s)", call, cublasGetStatusName(st),
                   cublasGetStatusString(st));
}

static attn_status ctx_init(attn_cuda_ctx *c) {
  ATTN_CUDA_TRY(cudaSetDevice(c->device));
  attn_status loaded = attn_blas_load(); /* cuBLAS is opened on first use */
  if (loaded) return loaded;
  ATTN_CUBLAS_TRY(cublasCreate(&c->blas));
  /* Default math: fp32 GEMMs stay fp32 (no TF32); 16-bit GEMMs use tensor
   * cores with fp32 accumulation as the compute type asks. */
  ATTN_CUBLAS_TRY(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH));
  ATTN_CUDA_TRY(cudaMalloc(&c->blas_ws, ATTN_CUDA_BLAS_WS_BYTES));
  return ATTN_STATUS_OK;
}

const attn_cuda_ctx *attn_cuda_ctx_peek(const attn_ctx *ctx, int device) {
  return device >= 0 && device < ATTN_CTX_MAX_DEVICES ? ctx->cuda[device] : NULL;
}

attn_status attn_cuda_ctx_get(attn_ctx *ctx, int device, attn_cuda_ctx **out) {
  if (device < 0 || device >= ATTN_CTX_MAX_DEVICES)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "CUDA device %d: accepted are 0..%d", device,
                     ATTN_CTX_MAX_DEVICES - 1);
  attn_cuda_ctx *c = ctx->cuda[device];
  if (c && c->blas) return *out = c, ATTN_STATUS_OK;
  if (!c && !(c = ctx->cuda[device] = calloc(1, sizeof *c)))
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a CUDA context");
  c->owner = ctx, c->device = device;
  attn_status st = ctx_init(c);
  if (st) {
    ctx_free_memory(c, 0);
    return st;
  }
  *out = c;
  return ATTN_STATUS_OK;
}

/* Waits for the stream the buffers were last used on. A stream the caller
 * has destroyed since cannot be waited on by handle: then the device. */
static attn_status wait_previous(attn_cuda_ctx *c) {
  cudaError_t err = cudaStreamSynchronize(c->stream);
  if (err == cudaErrorInvalidResourceHandle) {
    cudaGetLastError();
    err = cudaDeviceSynchronize();
  }
  return err == cudaSuccess ? ATTN_STATUS_OK : attn_cuda_fail(err, "cudaStreamSynchronize");
}

attn_status attn_cuda_ctx_blas_on(attn_cuda_ctx *c, cudaStream_t stream) {
  /* cublasSetStream resets the workspace to cuBLAS's own pool: set ours
   * after it. */
  ATTN_CUBLAS_TRY(cublasSetStream(c->blas, stream));
  ATTN_CUBLAS_TRY(cublasSetWorkspace(c->blas, c->blas_ws, ATTN_CUDA_BLAS_WS_BYTES));
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_ctx_begin(attn_cuda_ctx *c, cudaStream_t stream) {
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != c->device)
    ATTN_CUDA_TRY(cudaSetDevice(c->device));
  if (c->used && c->stream == stream) return ATTN_STATUS_OK;
  if (c->used) {
    attn_status st = wait_previous(c);
    if (st) return st;
  }
  attn_status st = attn_cuda_ctx_blas_on(c, stream);
  if (st) return st;
  c->stream = stream, c->used = 1;
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_ctx_lanes(attn_cuda_ctx *c) {
  if (c->have_lanes) return ATTN_STATUS_OK;
  int streams = 0, events = 0, go = 0, prev = c->device;
  if (cudaGetDevice(&prev) != cudaSuccess || prev != c->device)
    ATTN_CUDA_TRY(cudaSetDevice(c->device));
  cudaError_t err = cudaEventCreateWithFlags(&c->lane_go, cudaEventDisableTiming);
  go = err == cudaSuccess;
  for (; err == cudaSuccess && streams < ATTN_CUDA_LANES; streams++)
    if ((err = cudaStreamCreateWithFlags(&c->lanes[streams], cudaStreamNonBlocking))) break;
  for (; err == cudaSuccess && events < ATTN_CUDA_LANES; events++)
    if ((err = cudaEventCreateWithFlags(&c->lane_done[events], cudaEventDisableTiming))) break;
  if (prev != c->device) cudaSetDevice(prev);
  if (err == cudaSuccess) return c->have_lanes = 1, ATTN_STATUS_OK;
  attn_status st = attn_cuda_fail(err, "cudaStreamCreateWithFlags (side streams)");
  for (int i = 0; i < streams; i++) cudaStreamDestroy(c->lanes[i]);
  for (int i = 0; i < events; i++) cudaEventDestroy(c->lane_done[i]);
  if (go) cudaEventDestroy(c->lane_go);
  return st;
}

attn_status attn_cuda_ctx_scratch(attn_cuda_ctx *c, size_t bytes, void **out) {
  if (bytes > c->scratch_bytes) {
    size_t limit = c->owner->opts.workspace_limit;
    if (limit && bytes + ATTN_CUDA_BLAS_WS_BYTES > limit)
      return attn_fail(ATTN_STATUS_OUT_OF_MEMORY,
                       "%zu bytes of scratch plus %zu of cuBLAS workspace exceed the handle's "
                       "workspace_limit of %zu bytes",
                       bytes, (size_t)ATTN_CUDA_BLAS_WS_BYTES, limit);
    /* cudaFree waits for the device, so no launch still reads the old one;
     * graphs that baked the old address no longer match a call's key. */
    cudaFree(c->scratch);
    c->scratch = NULL, c->scratch_bytes = 0;
    cudaError_t err = cudaMalloc(&c->scratch, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      c->scratch = NULL;
      return attn_fail(
          err == cudaErrorMemoryAllocation ? ATTN_STATUS_OUT_OF_MEMORY : ATTN_STATUS_BACKEND_ERROR,
          "cudaMalloc of %zu bytes (%.2f GiB) of scratch failed: %s (%s)", bytes,
          (double)bytes / 1073741824.0, cudaGetErrorName(err), cudaGetErrorString(err));
    }
    c->scratch_bytes = bytes;
  }
  *out = c->scratch;
  return ATTN_STATUS_OK;
}

/* A cached causal mask: the device bytes and where they live. */
typedef struct {
  int device;
  uint8_t *keep;
} keep_entry;

static void keep_free(void *v) {
  keep_entry *e = v;
  if (cudaSetDevice(e->device) == cudaSuccess) cudaFree(e->keep);
  free(e);
}

attn_status attn_cuda_ctx_causal_keep(attn_cuda_ctx *c, int64_t sq, int64_t sk, int64_t offset,
                                      cudaStream_t stream, const uint8_t **keep) {
  const int64_t key[4] = {c->device, sq, sk, offset};
  attn_cache *cache = c->owner->cache;
  keep_entry *e = attn_cache_find(cache, ATTN_CACHE_CAUSAL_MASK, key, sizeof key);
  if (!e) {
    if (!(e = calloc(1, sizeof *e)))
      return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a cached mask");
    e->device = c->device;
    cudaError_t err = cudaMalloc((void **)&e->keep, (size_t)(sq * sk));
    attn_status st = err ? attn_cuda_fail(err, "cudaMalloc of the causal mask")
                         : attn_cuda_causal_keep(e->keep, sq, sk, offset, stream);
    if (st) {
      keep_free(e);
      return st;
    }
    if (attn_cache_put(cache, ATTN_CACHE_CAUSAL_MASK, key, sizeof key, e, keep_free))
      return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a cached mask");
  }
  *keep = e->keep;
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_memory_why_not(const attn_ctx *ctx, const attn_args *a, double need,
                                     double extra, const char *impl, const char *what, char *why,
                                     size_t len) {
  const attn_cuda_ctx *c = attn_cuda_ctx_peek(ctx, a->q.device);
  double have = c ? (double)c->scratch_bytes : 0;
  double limit = (double)ctx->opts.workspace_limit;
  if (limit > 0 && need + (double)ATTN_CUDA_BLAS_WS_BYTES > limit) {
    snprintf(why, len,
             "%s needs %.0f bytes (%.2f GiB) of scratch for %s plus %zu of cuBLAS workspace, "
             "past the handle's workspace_limit of %.0f bytes; raise the limit, or use "
             "efficient or flash (no S x S buffer)",
             impl, need, need / 1073741824.0, what, (size_t)ATTN_CUDA_BLAS_WS_BYTES, limit);
    return ATTN_STATUS_OUT_OF_MEMORY;
  }
  if (need <= have && extra <= 0) return ATTN_STATUS_OK;
  /* Growing the scratch frees the old one first: it counts as free. */
  double free_b = (double)attn_cuda_memory_free(a->q.device);
  double want = (need > have ? need : 0) + extra, avail = free_b + (need > have ? have : 0);
  if (free_b == 0 || want <= avail) return ATTN_STATUS_OK; /* 0: unknown, let cudaMalloc say */
  snprintf(why, len,
           "%s needs %.0f bytes (%.2f GiB) of device memory for %s, but cuda:%d has %.0f "
           "bytes (%.2f GiB) free; use efficient or flash (no S x S buffer) or a smaller shape",
           impl, want, want / 1073741824.0, what, a->q.device, avail, avail / 1073741824.0);
  return ATTN_STATUS_OUT_OF_MEMORY;
}

attn_status attn_cuda_rows_why_not(const attn_args *a, const char *impl, char *why, size_t len) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || a->q.device >= n) {
    snprintf(why, len, "the tensors are on cuda:%d but this process sees %d CUDA device%s",
             a->q.device, n, n == 1 ? "" : "s");
    return ATTN_STATUS_INVALID_ARGUMENT;
  }
  if ((double)attn_batch(a) * (double)attn_heads_q(a) * (double)attn_seq_q(a) > INT_MAX) {
    snprintf(why, len, "%s launches one block per score row: B*Hq*Sq must be at most %d", impl,
             INT_MAX);
    return ATTN_STATUS_UNSUPPORTED;
  }
  return ATTN_STATUS_OK;
}
