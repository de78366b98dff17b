/* Per-thread, per-device contexts of the cuBLAS-driven backends: creation,
 * stream hand-over, scratch growth, the cached causal mask, the memory
 * check, and cuBLAS error text. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn/cuda/baseline_kernels.h"
#include "attn/cuda/cuda_common.h"
#include "attn/cuda/cuda_ctx.h"
#include "attn/cuda/graph_cache.h"
#include "attn/cuda/launch_replay.h"

enum { CTX_MAX_DEVICES = 64 };

/* One thread's contexts, on the heap so that the thread-exit destructor can
 * free them whatever the TLS teardown order. */
typedef struct {
  attn_cuda_ctx *dev[CTX_MAX_DEVICES];
} ctx_set;

static _Thread_local ctx_set *tls_set;
static pthread_key_t set_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void ctx_destroy(attn_cuda_ctx *c) {
  if (cudaSetDevice(c->device) == cudaSuccess) {
    attn_cuda_graphs_free(c);
    attn_cuda_replays_free(c);
    if (c->blas) cublasDestroy(c->blas);
    cudaFree(c->blas_ws);
    cudaFree(c->scratch);
    cudaFree(c->causal_keep);
  }
  free(c);
}

static void set_free(void *p) {
  ctx_set *s = p;
  for (int i = 0; i < CTX_MAX_DEVICES; i++)
    if (s->dev[i]) ctx_destroy(s->dev[i]);
  free(s);
}

static void make_key(void) { pthread_key_create(&set_key, set_free); }

attn_status attn_cublas_fail(cublasStatus_t st, const char *call) {
  attn_status s = st == CUBLAS_STATUS_ALLOC_FAILED ? ATTN_STATUS_OUT_OF_MEMORY
                                                    : ATTN_STATUS_BACKEND_ERROR;
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

const attn_cuda_ctx *attn_cuda_ctx_peek(int device) {
  return device >= 0 && device < CTX_MAX_DEVICES && tls_set ? tls_set->dev[device] : NULL;
}

attn_status attn_cuda_ctx_get(int device, attn_cuda_ctx **out) {
  if (device < 0 || device >= CTX_MAX_DEVICES)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "CUDA device %d: accepted are 0..%d", device,
                     CTX_MAX_DEVICES - 1);
  if (tls_set && (*out = tls_set->dev[device])) return ATTN_STATUS_OK;
  pthread_once(&key_once, make_key);
  if (!tls_set) {
    if (!(tls_set = calloc(1, sizeof *tls_set)))
      return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a CUDA context");
    pthread_setspecific(set_key, tls_set);
  }
  attn_cuda_ctx *c = calloc(1, sizeof *c);
  if (!c) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a CUDA context");
  c->device = device;
  attn_status st = ctx_init(c);
  if (st) {
    ctx_destroy(c);
    return st;
  }
  *out = tls_set->dev[device] = c;
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

attn_status attn_cuda_ctx_scratch(attn_cuda_ctx *c, size_t bytes, void **out) {
  if (bytes > c->scratch_bytes) {
    /* cudaFree waits for the device, so no launch still reads the old one;
     * graphs and kept launches that baked the old address go. */
    attn_cuda_graphs_clear(c);
    attn_cuda_replays_clear(c);
    cudaFree(c->scratch);
    c->scratch = NULL, c->scratch_bytes = 0;
    cudaError_t err = cudaMalloc(&c->scratch, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      c->scratch = NULL;
      return attn_fail(err == cudaErrorMemoryAllocation ? ATTN_STATUS_OUT_OF_MEMORY
                                                        : ATTN_STATUS_BACKEND_ERROR,
                       "cudaMalloc of %zu bytes (%.2f GiB) of scratch failed: %s (%s)", bytes,
                       (double)bytes / 1073741824.0, cudaGetErrorName(err),
                       cudaGetErrorString(err));
    }
    c->scratch_bytes = bytes;
  }
  *out = c->scratch;
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_ctx_causal_keep(attn_cuda_ctx *c, int64_t sq, int64_t sk, int64_t offset,
                                      cudaStream_t stream, const uint8_t **keep) {
  if (!c->causal_keep || c->keep_sq != sq || c->keep_sk != sk || c->keep_offset != offset) {
    attn_cuda_graphs_clear(c);
    cudaFree(c->causal_keep);
    c->causal_keep = NULL;
    ATTN_CUDA_TRY(cudaMalloc((void **)&c->causal_keep, (size_t)(sq * sk)));
    attn_status st = attn_cuda_causal_keep(c->causal_keep, sq, sk, offset, stream);
    if (st) return st;
    c->keep_sq = sq, c->keep_sk = sk, c->keep_offset = offset;
  }
  *keep = c->causal_keep;
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_memory_why_not(const attn_args *a, double need, double extra,
                                     const char *impl, const char *what, char *why,
                                     size_t len) {
  const attn_cuda_ctx *c = attn_cuda_ctx_peek(a->q.device);
  double have = c ? (double)c->scratch_bytes : 0;
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

void attn_cuda_ctx_trim(void) {
  for (int i = 0; tls_set && i < CTX_MAX_DEVICES; i++) {
    attn_cuda_ctx *c = tls_set->dev[i];
    if (!c || cudaSetDevice(c->device) != cudaSuccess) continue;
    attn_cuda_graphs_clear(c);
    attn_cuda_replays_clear(c);
    cudaFree(c->scratch); /* cudaFree waits for the device */
    cudaFree(c->causal_keep);
    c->scratch = NULL, c->scratch_bytes = 0;
    c->causal_keep = NULL, c->keep_sq = c->keep_sk = 0;
  }
}
