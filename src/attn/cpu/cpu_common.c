/* Code shared by the CPU backends (see cpu_common.h): rows of strided
 * tensors in any dtype as fp32, mask rows as an additive bias, fp32 operands
 * for BLAS, the per-head sgemm loops of naive and math, and the memory check
 * that refuses an S x S buffer before anything is allocated. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"

void attn_cpu_load_row(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t n,
                       float *dst) {
  int64_t off = attn_cpu_offset(t, b, h, s, 0), st = t->strides[3];
  if (t->dtype == ATTN_DTYPE_F32 && st == 1) {
    memcpy(dst, (const float *)t->data + off, (size_t)n * sizeof *dst);
  } else if (t->dtype == ATTN_DTYPE_BF16) {
    const uint16_t *p = (const uint16_t *)t->data + off;
    for (int64_t d = 0; d < n; d++) dst[d] = attn_cpu_bf16_to_f32(p[d * st]);
  } else if (t->dtype == ATTN_DTYPE_F16) {
    const uint16_t *p = (const uint16_t *)t->data + off;
    for (int64_t d = 0; d < n; d++) dst[d] = attn_cpu_f16_to_f32(p[d * st]);
  } else {
    for (int64_t d = 0; d < n; d++) dst[d] = attn_cpu_load(t->data, t->dtype, off + d * st);
  }
}

void attn_cpu_store_row(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t n,
                        const float *src) {
  int64_t off = attn_cpu_offset(t, b, h, s, 0), st = t->strides[3];
  if (t->dtype == ATTN_DTYPE_F32) {
    float *p = (float *)t->data + off;
    for (int64_t d = 0; d < n; d++) p[d * st] = src[d];
  } else if (t->dtype == ATTN_DTYPE_BF16) {
    uint16_t *p = (uint16_t *)t->data + off;
    for (int64_t d = 0; d < n; d++) p[d * st] = attn_cpu_f32_to_bf16(src[d]);
  } else if (t->dtype == ATTN_DTYPE_F16) {
    uint16_t *p = (uint16_t *)t->data + off;
    for (int64_t d = 0; d < n; d++) p[d * st] = attn_cpu_f32_to_f16(src[d]);
  }
}

void attn_cpu_mask_row(const attn_args *a, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t n,
                       float mul, float *bias) {
  const attn_tensor *m = &a->mask;
  if (a->mask_kind == ATTN_MASK_NONE) {
    for (int64_t j = 0; j < n; j++) bias[j] = 0.0f;
    return;
  }
  int64_t off = attn_cpu_offset(m, b, h, i, j0), st = m->shape[3] == 1 ? 0 : m->strides[3];
  if (a->mask_kind == ATTN_MASK_BOOL) {
    const uint8_t *p = (const uint8_t *)m->data + off;
    for (int64_t j = 0; j < n; j++) bias[j] = p[j * st] ? 0.0f : -INFINITY;
    return;
  }
  for (int64_t j = 0; j < n; j++) {
    float v = attn_cpu_load(m->data, m->dtype, off + j * st);
    bias[j] = v == -INFINITY ? v : v * mul;
  }
}

int64_t attn_cpu_causal_offset(const attn_args *a) {
  return a->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? attn_seq_k(a) - attn_seq_q(a) : 0;
}

double attn_cpu_tensor_bytes(const attn_tensor *t) {
  return (double)t->shape[0] * (double)t->shape[1] * (double)t->shape[2] * (double)t->shape[3] *
         (double)attn_dtype_size(t->dtype);
}

/* ---- fp32 operands for BLAS --------------------------------------------- */

int attn_cpu_rows_direct(const attn_tensor *t) {
  int64_t ld = t->strides[2], d = t->shape[3];
  return t->dtype == ATTN_DTYPE_F32 && (t->strides[3] == 1 || d == 1) && ld >= d && ld <= INT_MAX;
}

attn_cpu_mat attn_cpu_mat_of(const attn_tensor *t) {
  attn_cpu_mat m = {(float *)t->data, t->strides[0], t->strides[1], t->strides[2]};
  return m;
}

attn_cpu_mat attn_cpu_mat_packed(float *buf, const attn_tensor *shape_of) {
  const int64_t *n = shape_of->shape;
  attn_cpu_mat m = {buf, n[1] * n[2] * n[3], n[2] * n[3], n[3]};
  return m;
}

void attn_cpu_to_f32(const attn_tensor *t, float *dst) {
  const int64_t *n = t->shape;
  int64_t rows = n[0] * n[1] * n[2];
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    attn_cpu_load_row(t, r / (n[1] * n[2]), r / n[2] % n[1], r % n[2], n[3], dst + r * n[3]);
}

void attn_cpu_from_f32(const attn_tensor *t, const float *src) {
  const int64_t *n = t->shape;
  int64_t rows = n[0] * n[1] * n[2];
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    attn_cpu_store_row(t, r / (n[1] * n[2]), r / n[2] % n[1], r % n[2], n[3], src + r * n[3]);
}

static size_t tensor_elems(const attn_tensor *t) {
  return (size_t)t->shape[0] * (size_t)t->shape[1] * (size_t)t->shape[2] * (size_t)t->shape[3];
}

attn_status attn_cpu_operand(const attn_tensor *t, const char *what, attn_cpu_mat *m,
                             float **owned) {
  *owned = NULL;
  if (attn_cpu_rows_direct(t)) {
    *m = attn_cpu_mat_of(t);
    return ATTN_STATUS_OK;
  }
  if (!(*owned = attn_cpu_alloc_f32(tensor_elems(t), what))) return ATTN_STATUS_OUT_OF_MEMORY;
  attn_cpu_to_f32(t, *owned);
  *m = attn_cpu_mat_packed(*owned, t);
  return ATTN_STATUS_OK;
}

/* ---- the per-head GEMMs -------------------------------------------------- */

/* One sgemm per (b, h), letting OpenBLAS thread inside each: per-head
 * matrices are large enough for that, and it keeps one BLAS call per GEMM
 * of the model (as a batched matmul would). */
void attn_cpu_gemm_qk(const attn_args *a, const attn_cpu_mat *q, const attn_cpu_mat *k,
                      float *scores) {
  int64_t hq = attn_heads_q(a), group = hq / attn_heads_kv(a);
  int sq = (int)attn_seq_q(a), sk = (int)attn_seq_k(a), d = (int)attn_head_dim(a);
  for (int64_t b = 0; b < attn_batch(a); b++)
    for (int64_t h = 0; h < hq; h++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, sq, sk, d, 1.0f,
                  q->base + b * q->sb + h * q->sh, (int)q->ld,
                  k->base + b * k->sb + h / group * k->sh, (int)k->ld, 0.0f,
                  scores + (b * hq + h) * (int64_t)sq * sk, sk);
}

void attn_cpu_gemm_pv(const attn_args *a, const float *p, const attn_cpu_mat *v,
                      const attn_cpu_mat *out) {
  int64_t hq = attn_heads_q(a), group = hq / attn_heads_kv(a);
  int sq = (int)attn_seq_q(a), sk = (int)attn_seq_k(a), d = (int)attn_head_dim(a);
  for (int64_t b = 0; b < attn_batch(a); b++)
    for (int64_t h = 0; h < hq; h++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, sq, d, sk, 1.0f,
                  p + (b * hq + h) * (int64_t)sq * sk, sk, v->base + b * v->sb + h / group * v->sh,
                  (int)v->ld, 0.0f, out->base + b * out->sb + h * out->sh, (int)out->ld);
}

/* ---- the S x S memory check ---------------------------------------------- */

size_t attn_cpu_score_elems(const attn_args *a) {
  return (size_t)attn_batch(a) * (size_t)attn_heads_q(a) * (size_t)attn_seq_q(a) *
         (size_t)attn_seq_k(a);
}

attn_status attn_cpu_scores_why_not(const attn_args *a, int n_buffers, const char *impl, char *why,
                                    size_t len) {
  size_t need = attn_scores_bytes(a, n_buffers), avail = attn_host_memory_available();
  if (need != SIZE_MAX && (avail == 0 || need <= avail)) return ATTN_STATUS_OK;
  /* In double: the product can pass 2^64 where size_t saturates. */
  double bytes = (double)attn_batch(a) * (double)attn_heads_q(a) * (double)attn_seq_q(a) *
                 (double)attn_seq_k(a) * 4.0 * n_buffers;
  snprintf(why, len,
           "%s materializes %d fp32 score buffer%s of B*H*Sq*Sk = %lld*%lld*%lld*%lld: "
           "%.0f bytes (%.1f GiB) needed, %zu bytes (%.1f GiB) available; use flash "
           "(O(S) memory) or a smaller shape",
           impl, n_buffers, n_buffers > 1 ? "s" : "", (long long)attn_batch(a),
           (long long)attn_heads_q(a), (long long)attn_seq_q(a), (long long)attn_seq_k(a), bytes,
           bytes / 1073741824.0, avail, avail / 1073741824.0);
  return ATTN_STATUS_OUT_OF_MEMORY;
}

static float softmax_row(float *x, int64_t n, int nan_safe) {
  float m = attn_cpu_row_max(x, n, nan_safe);
  if (nan_safe && m == -INFINITY) {
    for (int64_t j = 0; j < n; j++) x[j] = 0.0f;
    return -INFINITY;
  }
  for (int64_t j = 0; j < n; j++) x[j] = attn_cpu_exp2((x[j] - m) * (float)ATTN_CPU_LOG2E);
  float sum = attn_cpu_row_sum(x, n), inv = 1.0f / sum;
  for (int64_t j = 0; j < n; j++) x[j] *= inv;
  return m + logf(sum);
}

void attn_cpu_softmax_op(float *scores, int64_t rows, int64_t n, float *lse, int nan_safe) {
  prof_op_scope op = prof_op_begin("softmax", PROF_KIND_SOFTMAX);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; row++) {
    float l = softmax_row(scores + row * n, n, nan_safe);
    if (lse) lse[row] = l;
  }
  prof_op_end(&op, rows * n * 8, 4.0 * (double)(rows * n));
}

float *attn_cpu_alloc_f32(size_t n, const char *what) {
  float *p = n <= SIZE_MAX / sizeof(float) ? malloc(n * sizeof(float)) : NULL;
  if (!p)
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "could not allocate %zu fp32 values (%.1f GiB) for %s", n,
              (double)n * 4 / 1073741824.0, what);
  return p;
}
