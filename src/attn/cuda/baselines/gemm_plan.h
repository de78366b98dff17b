/* The two GEMMs of the S x S baselines as cuBLAS strided-batched calls over
 * strided [B, H, S, D] tensors:
 *
 *   scores[b, h] = alpha * Q[b, h] K[b, h / g]^T      (g = Hq / Hkv, GQA)
 *   out[b, h]    = P[b, h] V[b, h / g]
 *
 * Row-major data is handed to column-major cuBLAS as its transpose:
 * scores^T = K Q^T (transa = T), out^T = V^T P^T. A plan has up to three
 * batch indices (b, kv head, head within the group), each with one stride
 * per operand. The g query heads of a KV head fold into the GEMM's n when
 * their rows are evenly spaced (BHSD: one GEMM of g*Sq rows); adjacent
 * indices whose strides nest merge; the largest remaining index becomes the
 * cuBLAS batch and the rest are host loops (BSHD: one call per batch entry).
 * The same builders run in the why-not check and in the forward, so a layout
 * cuBLAS cannot take is refused with the reason before anything launches. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_GEMM_PLAN_H
#define ATTNPROF_SRC_ATTN_CUDA_GEMM_PLAN_H

#include <cublas_v2.h>
#include <stddef.h>
#include <stdint.h>

#include "attn/backend.h"
#include "attn/cuda/baselines/cuda_ctx.h"

typedef struct {
  const void *p;
  size_t es;     /* element size in bytes */
  int64_t ld;    /* leading dimension (elements) */
  int64_t st[3]; /* stride along each batch index (elements) */
} attn_gemm_operand;

typedef struct {
  cublasOperation_t ta, tb;
  int64_t m, n, k;
  attn_gemm_operand a, b, c;
  int64_t count[3]; /* extents of the batch indices */
  int batch_dim;    /* which index is cuBLAS's batch (-1: none) */
  cudaDataType_t ab_type, c_type;
  float alpha;
} attn_gemm;

/* scores (contiguous [B, Hq, Sq, Sk] of score_dtype at `scores`, may be NULL
 * in a why-not check) = alpha * q k^T. Returns UNSUPPORTED with the reason in
 * why when the layouts cannot be given to cuBLAS. */
attn_status attn_gemm_plan_qk(const attn_tensor *q, const attn_tensor *k, void *scores,
                              attn_dtype score_dtype, float alpha, attn_gemm *g, char *why,
                              size_t len);

/* out = p v, p contiguous [B, Hq, Sq, Sk] in out's dtype. */
attn_status attn_gemm_plan_pv(const void *p, const attn_tensor *v, const attn_tensor *out,
                              attn_gemm *g, char *why, size_t len);

/* Runs the plan on `stream` (ctx->blas must be on it: attn_cuda_ctx_begin)
 * with fp32 compute: tensor cores with fp32 accumulation for 16-bit
 * operands, plain FP32 for fp32 ones. cuBLAS's own calls, every time, so the
 * profile shows the launches cuBLAS makes. Errors name the failed call. */
attn_status attn_gemm_run(attn_cuda_ctx *ctx, const attn_gemm *g, cudaStream_t stream);
/* The same on h's stream. */
attn_status attn_gemm_run_blas(cublasHandle_t h, const attn_gemm *g);

/* cuBLAS calls the plan makes (1 for contiguous BHSD). */
int64_t attn_gemm_calls(const attn_gemm *g);

#endif
