/* Batched-GEMM plans over strided attention tensors (see gemm_plan.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "attn/cuda/baselines/cuda_ctx.h"
#include "attn/cuda/baselines/gemm_plan.h"

static cudaDataType_t blas_type(attn_dtype d) {
  return d == ATTN_DTYPE_F32 ? CUDA_R_32F : d == ATTN_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* Rows of D contiguous elements, ld apart: what a cuBLAS matrix is. */
static attn_status rows_ld(const char *name, const attn_tensor *t, int64_t *ld, char *why,
                           size_t len) {
  int64_t s = t->shape[2], d = t->shape[3];
  if (d > 1 && t->strides[3] != 1) {
    snprintf(why, len,
             "%s has stride %lld along D: cuBLAS needs unit stride there (use math, which "
             "takes any strides, or a layout with D innermost)",
             name, (long long)t->strides[3]);
    return ATTN_STATUS_UNSUPPORTED;
  }
  *ld = s > 1 ? t->strides[2] : d;
  if (s > 1 && *ld < d) {
    snprintf(why, len,
             "%s rows overlap (stride %lld along S < D = %lld): cuBLAS needs a leading "
             "dimension of at least D (use math)",
             name, (long long)*ld, (long long)d);
    return ATTN_STATUS_UNSUPPORTED;
  }
  return ATTN_STATUS_OK;
}

/* Stride of index i of a tensor: size-1 dimensions do not move. */
static int64_t st_of(const attn_tensor *t, int dim) {
  return t->shape[dim] == 1 ? 0 : t->strides[dim];
}

static int nests(const attn_gemm *g, int outer, int inner) {
  const attn_gemm_operand *ops[3] = {&g->a, &g->b, &g->c};
  for (int o = 0; o < 3; o++)
    if (ops[o]->st[outer] != g->count[inner] * ops[o]->st[inner]) return 0;
  return 1;
}

/* Merges nesting indices, picks cuBLAS's batch index (the largest whose
 * output stride is nonzero), checks cuBLAS's int limits. */
static attn_status finalize(attn_gemm *g, char *why, size_t len) {
  int live[3], n = 0;
  for (int i = 0; i < 3; i++)
    if (g->count[i] > 1) live[n++] = i;
  /* Inner to outer: a merged index keeps the inner stride and may merge on. */
  for (int t = n - 1; t > 0; t--)
    if (nests(g, live[t - 1], live[t])) {
      g->count[live[t]] *= g->count[live[t - 1]];
      g->count[live[t - 1]] = 1;
      live[t - 1] = live[t];
    }
  g->batch_dim = -1;
  for (int i = 0; i < 3; i++)
    if (g->count[i] > 1 && g->c.st[i] != 0 &&
        (g->batch_dim < 0 || g->count[i] > g->count[g->batch_dim]))
      g->batch_dim = i;
  const int64_t ints[] = {
      g->m, g->n, g->k, g->a.ld, g->b.ld, g->c.ld, g->batch_dim < 0 ? 1 : g->count[g->batch_dim]};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (ints[i] > INT_MAX) {
      snprintf(why, len,
               "a GEMM dimension, leading dimension or batch count is %lld: cuBLAS takes "
               "at most %d",
               (long long)ints[i], INT_MAX);
      return ATTN_STATUS_UNSUPPORTED;
    }
  return ATTN_STATUS_OK;
}

attn_status attn_gemm_plan_qk(const attn_tensor *q, const attn_tensor *k, void *scores,
                              attn_dtype score_dtype, float alpha, attn_gemm *g, char *why,
                              size_t len) {
  int64_t ldq, ldk, hq = q->shape[1], hkv = k->shape[1], grp = hq / hkv;
  int64_t sq = q->shape[2], sk = k->shape[2], sqk = sq * sk;
  attn_status st = rows_ld("q", q, &ldq, why, len);
  if (st || (st = rows_ld("k", k, &ldk, why, len))) return st;
  int fold = grp > 1 && st_of(q, 1) == sq * ldq;
  *g = (attn_gemm){
      .ta = CUBLAS_OP_T,
      .tb = CUBLAS_OP_N,
      .m = sk,
      .n = fold ? grp * sq : sq,
      .k = q->shape[3],
      .a = {k->data, attn_dtype_size(k->dtype), ldk, {st_of(k, 0), st_of(k, 1), 0}},
      .b = {q->data, attn_dtype_size(q->dtype), ldq, {st_of(q, 0), grp * st_of(q, 1), st_of(q, 1)}},
      .c = {scores, attn_dtype_size(score_dtype), sk, {hq * sqk, grp * sqk, sqk}},
      .count = {q->shape[0], hkv, fold ? 1 : grp},
      .ab_type = blas_type(q->dtype),
      .c_type = blas_type(score_dtype),
      .alpha = alpha};
  return finalize(g, why, len);
}

attn_status attn_gemm_plan_pv(const void *p, const attn_tensor *v, const attn_tensor *out,
                              attn_gemm *g, char *why, size_t len) {
  int64_t ldv, ldo, hq = out->shape[1], hkv = v->shape[1], grp = hq / hkv;
  int64_t sq = out->shape[2], sk = v->shape[2], sqk = sq * sk;
  attn_status st = rows_ld("v", v, &ldv, why, len);
  if (st || (st = rows_ld("out", out, &ldo, why, len))) return st;
  int fold = grp > 1 && st_of(out, 1) == sq * ldo;
  *g = (attn_gemm){.ta = CUBLAS_OP_N,
                   .tb = CUBLAS_OP_N,
                   .m = out->shape[3],
                   .n = fold ? grp * sq : sq,
                   .k = sk,
                   .a = {v->data, attn_dtype_size(v->dtype), ldv, {st_of(v, 0), st_of(v, 1), 0}},
                   .b = {p, attn_dtype_size(out->dtype), sk, {hq * sqk, grp * sqk, sqk}},
                   .c = {out->data,
                         attn_dtype_size(out->dtype),
                         ldo,
                         {st_of(out, 0), grp * st_of(out, 1), st_of(out, 1)}},
                   .count = {out->shape[0], hkv, fold ? 1 : grp},
                   .ab_type = blas_type(v->dtype),
                   .c_type = blas_type(out->dtype),
                   .alpha = 1.0f};
  return finalize(g, why, len);
}

int64_t attn_gemm_calls(const attn_gemm *g) {
  int64_t calls = 1;
  for (int i = 0; i < 3; i++)
    if (i != g->batch_dim) calls *= g->count[i];
  return calls;
}

static const void *at(const attn_gemm_operand *o, const int64_t idx[3]) {
  int64_t e = idx[0] * o->st[0] + idx[1] * o->st[1] + idx[2] * o->st[2];
  return (const char *)o->p + e * (int64_t)o->es;
}

static attn_status one_call(cublasHandle_t h, const attn_gemm *g, const int64_t idx[3]) {
  const float beta = 0.0f;
  int bd = g->batch_dim;
  int batch = bd < 0 ? 1 : (int)g->count[bd];
  long long sa = bd < 0 ? 0 : g->a.st[bd], sb = bd < 0 ? 0 : g->b.st[bd],
            sc = bd < 0 ? 0 : g->c.st[bd];
  ATTN_CUBLAS_TRY(cublasGemmStridedBatchedEx(
      h, g->ta, g->tb, (int)g->m, (int)g->n, (int)g->k, &g->alpha, at(&g->a, idx), g->ab_type,
      (int)g->a.ld, sa, at(&g->b, idx), g->ab_type, (int)g->b.ld, sb, &beta, (void *)at(&g->c, idx),
      g->c_type, (int)g->c.ld, sc, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return ATTN_STATUS_OK;
}

attn_status attn_gemm_run_blas(cublasHandle_t h, const attn_gemm *g) {
  int64_t n[3], idx[3];
  for (int i = 0; i < 3; i++) n[i] = i == g->batch_dim ? 1 : g->count[i];
  for (idx[0] = 0; idx[0] < n[0]; idx[0]++)
    for (idx[1] = 0; idx[1] < n[1]; idx[1]++)
      for (idx[2] = 0; idx[2] < n[2]; idx[2]++) {
        attn_status st = one_call(h, g, idx);
        if (st) return st;
      }
  return ATTN_STATUS_OK;
}

attn_status attn_gemm_run(attn_cuda_ctx *ctx, const attn_gemm *g, cudaStream_t s) {
  (void)s; /* ctx->blas is on it (attn_cuda_ctx_begin, or the graph capture) */
  return attn_gemm_run_blas(ctx->blas, g);
}
