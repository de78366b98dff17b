/* attn_matmul_tflops_measured (device.h): the matmul roof measured, not
 * stated: a square cuBLAS GEMM (8192^3, 1.1 TFLOP) on inputs of the dtype,
 * f32 accumulation, timed by CUDA events, median of 9 after 2 untimed. A
 * handle of its own on the default stream: nothing is left in any engine
 * handle. */
#include <stdint.h>
#include <stdlib.h>

#include "attn/cuda/baselines/cuda_ctx.h"
#include "attn/cuda/common/cuda_common.h"
#include "attnprof/device.h"
#include "core/elements.h"

enum { GEMM_N = 8192, GEMM_REPS = 9, GEMM_WARMUP = 2 };

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static attn_status timed_gemms(int device, cublasHandle_t h, cudaDataType_t ty, void *const *m,
                               double *ms) {
  const float one = 1.0f, zero = 0.0f;
  attn_cuda_timer *t = NULL;
  attn_status st = attn_cuda_timer_create(device, GEMM_REPS + 1, &t);
  cublasStatus_t bst = CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < GEMM_WARMUP + GEMM_REPS && !st && bst == CUBLAS_STATUS_SUCCESS; i++) {
    if (i >= GEMM_WARMUP) st = attn_cuda_timer_mark(t, i - GEMM_WARMUP, NULL);
    /* One product through the strided-batched call (batch 1): the one cuBLAS
     * GEMM entry point the run-time loader (blas_loader.h) resolves. */
    bst = cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one,
                                     m[0], ty, GEMM_N, 0, m[1], ty, GEMM_N, 0, &zero, m[2], ty,
                                     GEMM_N, 0, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  if (!st && bst == CUBLAS_STATUS_SUCCESS) st = attn_cuda_timer_mark(t, GEMM_REPS, NULL);
  for (int i = 0; i < GEMM_REPS && !st && bst == CUBLAS_STATUS_SUCCESS; i++) {
    double us = 0;
    st = attn_cuda_timer_us(t, i, i + 1, &us);
    ms[i] = us / 1e3;
  }
  if (t) attn_cuda_timer_destroy(t);
  if (!st && bst != CUBLAS_STATUS_SUCCESS) st = attn_cublas_fail(bst, "cublasGemmStridedBatchedEx");
  return st;
}

attn_status attn_cuda_gemm_tflops(int device, attn_dtype dtype, double *tflops);
attn_status attn_cuda_gemm_tflops(int device, attn_dtype dtype, double *tflops) {
  cudaDataType_t ty = dtype == ATTN_DTYPE_BF16  ? CUDA_R_16BF
                      : dtype == ATTN_DTYPE_F16 ? CUDA_R_16F
                                                : CUDA_R_32F;
  size_t bytes = (size_t)GEMM_N * GEMM_N * attn_dtype_size(dtype);
  void *m[3] = {NULL, NULL, NULL};
  double ms[GEMM_REPS];
  cublasHandle_t h = NULL;
  attn_status st = ATTN_STATUS_OK;
  for (int i = 0; i < 3 && !st; i++) st = attn_cuda_malloc(device, bytes, &m[i]);
  /* Random operands: a product of constant or zero data runs faster than real
   * data (about 13% on the H200), which would raise the roof. */
  uint16_t *host = st ? NULL : malloc(bytes);
  if (!st && !host) st = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for GEMM operands");
  for (int i = 0; i < 2 && !st; i++) {
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    for (size_t j = 0; j < bytes / 2; j++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      float v = (float)((x >> 40) & 0xffff) / 65536.0f - 0.5f;
      host[j] = dtype == ATTN_DTYPE_BF16 ? attn_cpu_f32_to_bf16(v) : attn_cpu_f32_to_f16(v);
    }
    st = dtype == ATTN_DTYPE_F32 ? attn_cuda_fill_bytes(device, m[i], 0x3c, bytes)
                                 : attn_cuda_to_device(device, m[i], host, bytes);
  }
  free(host);
  if (!st) st = attn_blas_load();
  cublasStatus_t bst = st ? CUBLAS_STATUS_SUCCESS : cublasCreate(&h);
  if (bst != CUBLAS_STATUS_SUCCESS) st = attn_cublas_fail(bst, "cublasCreate");
  if (!st) st = timed_gemms(device, h, ty, m, ms);
  if (!st) {
    qsort(ms, GEMM_REPS, sizeof *ms, cmp_double);
    double med = ms[GEMM_REPS / 2];
    *tflops = med > 0 ? 2.0 * GEMM_N * (double)GEMM_N * GEMM_N / (med * 1e9) : 0;
  }
  if (h) cublasDestroy(h);
  for (int i = 0; i < 3; i++)
    if (m[i]) attn_cuda_free(device, m[i]);
  return st;
}
