/* math on the CPU: the careful reference in fp32, every step a recorded op.
 *
 *   cast_q/k/v   CAST         f16/bf16 -> contiguous fp32, one op each (an
 *                             fp32 tensor with a non-unit D stride is made
 *                             contiguous instead: COPY "contiguous_q" ...)
 *   build_mask   ELEMENTWISE  the fp32 additive bias [B|1, H|1, Sq, Sk],
 *                             rebuilt on every call from the causal rule and
 *                             the mask (-inf where hidden); only when there
 *                             is a causal rule or a mask
 *   gemm_qk      GEMM         scores = Q K^T, one sgemm per (b, h)
 *   scale        ELEMENTWISE  scores *= scale
 *   add_bias     ELEMENTWISE  scores += bias; a -inf bias gives -inf even
 *                             over a NaN score (hidden keys do not leak NaN)
 *   softmax      SOFTMAX      NaN-safe: a row whose max is -inf (fully
 *                             masked) gives 0 and lse -inf; a NaN wins the
 *                             max, so a NaN score makes its row NaN
 *   gemm_pv      GEMM         out32 = P V
 *   cast_out     CAST         fp32 -> out's dtype (or COPY into strided fp32)
 *
 * f32 inputs with unit D stride go to BLAS as they are (no cast ops). Memory:
 * the scores and the bias, both S x S, refused up front when they do not
 * fit. */
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"
#include "attn/cpu/seqs_cpu.h"

enum { MATH_Q, MATH_K, MATH_V, MATH_OUT, MATH_NT };

typedef struct {
  const attn_args *a;
  attn_cpu_mat m[MATH_NT]; /* fp32 views of q, k, v, out */
  float *own[MATH_NT];     /* their converted copies, when made */
  int64_t n;               /* score elements */
  float *scores;
  float *bias; /* [bias_b, bias_h, Sq, Sk] or NULL */
  int64_t bias_b, bias_h;
} math_run;

static int needs_bias(const attn_args *a) {
  return a->causal != ATTN_CAUSAL_NONE || a->mask_kind != ATTN_MASK_NONE;
}

static const attn_tensor *run_tensor(const math_run *r, int which) {
  const attn_tensor *t[MATH_NT] = {&r->a->q, &r->a->k, &r->a->v, &r->a->out};
  return t[which];
}

static double tensor_elems(const attn_tensor *t) {
  return attn_cpu_tensor_bytes(t) / (double)attn_dtype_size(t->dtype);
}

/* Upcast one input (or out's fp32 staging buffer) when BLAS cannot use it
 * in place. For out nothing is converted yet: the buffer is only made. */
static attn_status op_upcast(math_run *r, int which) {
  static const char *const cast_names[] = {"cast_q", "cast_k", "cast_v"};
  static const char *const copy_names[] = {"contiguous_q", "contiguous_k", "contiguous_v"};
  const attn_tensor *t = run_tensor(r, which);
  if (attn_cpu_rows_direct(t)) {
    r->m[which] = attn_cpu_mat_of(t);
    return ATTN_STATUS_OK;
  }
  size_t elems = (size_t)tensor_elems(t);
  if (!(r->own[which] = attn_cpu_alloc_f32(elems, "an fp32 copy of q, k, v or out")))
    return ATTN_STATUS_OUT_OF_MEMORY;
  r->m[which] = attn_cpu_mat_packed(r->own[which], t);
  if (which == MATH_OUT) return ATTN_STATUS_OK;
  int cast = t->dtype != ATTN_DTYPE_F32;
  prof_op_scope op = prof_op_begin(cast ? cast_names[which] : copy_names[which],
                                   cast ? PROF_KIND_CAST : PROF_KIND_COPY);
  attn_cpu_to_f32(t, r->own[which]);
  prof_op_end(&op, (int64_t)(attn_cpu_tensor_bytes(t) + 4.0 * (double)elems), 0);
  return ATTN_STATUS_OK;
}

/* Bias row (b, h, i) of the broadcast shape: causal-hidden keys -inf, then
 * the mask's bias (bool 0 -> -inf; additive as given). */
static void bias_row(const attn_args *a, int64_t b, int64_t h, int64_t i, float *row) {
  int64_t sk = attn_seq_k(a);
  attn_cpu_mask_row(a, b, h, i, 0, sk, 1.0f, row);
  if (a->causal == ATTN_CAUSAL_NONE) return;
  int64_t first_hidden = i + attn_cpu_causal_offset(a) + 1;
  for (int64_t j = first_hidden < 0 ? 0 : first_hidden; j < sk; j++) row[j] = -INFINITY;
}

static void op_build_mask(const math_run *r) {
  const attn_args *a = r->a;
  prof_op_scope op = prof_op_begin("build_mask", PROF_KIND_ELEMENTWISE);
  int64_t sq = attn_seq_q(a), sk = attn_seq_k(a), rows = r->bias_b * r->bias_h * sq;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; row++)
    bias_row(a, row / (r->bias_h * sq), row / sq % r->bias_h, row % sq, r->bias + row * sk);
  prof_op_end(&op, rows * sk * 4, 0);
}

static void op_gemm(const math_run *r, int pv) {
  const attn_args *a = r->a;
  prof_op_scope op = prof_op_begin(pv ? "gemm_pv" : "gemm_qk", PROF_KIND_GEMM);
  if (pv) attn_cpu_gemm_pv(a, r->scores, &r->m[MATH_V], &r->m[MATH_OUT]);
  else attn_cpu_gemm_qk(a, &r->m[MATH_Q], &r->m[MATH_K], r->scores);
  /* fp32 traffic: the two operands read, the product written */
  double elems = (double)r->n + (pv ? tensor_elems(&a->v) + tensor_elems(&a->out)
                                    : tensor_elems(&a->q) + tensor_elems(&a->k));
  prof_op_end(&op, (int64_t)(4.0 * elems), 2.0 * (double)r->n * (double)attn_head_dim(a));
}

static void op_scale(const math_run *r) {
  prof_op_scope op = prof_op_begin("scale", PROF_KIND_ELEMENTWISE);
  float *s = r->scores, scale = (float)attn_scale_of(r->a);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < r->n; i++) s[i] *= scale;
  prof_op_end(&op, r->n * 8, (double)r->n);
}

static void op_add_bias(const math_run *r) {
  const attn_args *a = r->a;
  prof_op_scope op = prof_op_begin("add_bias", PROF_KIND_ELEMENTWISE);
  int64_t hq = attn_heads_q(a), sq = attn_seq_q(a), sk = attn_seq_k(a);
  int64_t heads = attn_batch(a) * hq;
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < heads; bh++) {
    int64_t b = r->bias_b == 1 ? 0 : bh / hq, h = r->bias_h == 1 ? 0 : bh % hq;
    const float *bias = r->bias + (b * r->bias_h + h) * sq * sk;
    float *s = r->scores + bh * sq * sk;
    for (int64_t i = 0; i < sq * sk; i++) s[i] = attn_cpu_add_bias(s[i], bias[i]);
  }
  prof_op_end(&op, r->n * 12, (double)r->n);
}

static void op_softmax(const math_run *r) {
  int64_t sk = attn_seq_k(r->a);
  attn_cpu_softmax_op(r->scores, r->n / sk, sk, r->a->lse, 1);
}

static void op_downcast(const math_run *r) {
  const attn_tensor *out = &r->a->out;
  int cast = out->dtype != ATTN_DTYPE_F32;
  prof_op_scope op =
      prof_op_begin(cast ? "cast_out" : "copy_out", cast ? PROF_KIND_CAST : PROF_KIND_COPY);
  attn_cpu_from_f32(out, r->own[MATH_OUT]);
  prof_op_end(&op, (int64_t)(attn_cpu_tensor_bytes(out) + 4.0 * tensor_elems(out)), 0);
}

static attn_status math_run_ops(math_run *r) {
  attn_status st = ATTN_STATUS_OK;
  for (int t = 0; t < MATH_NT && !st; t++) st = op_upcast(r, t);
  if (st) return st;
  if (r->bias) op_build_mask(r);
  op_gemm(r, 0);
  op_scale(r);
  if (r->bias) op_add_bias(r);
  op_softmax(r);
  op_gemm(r, 1);
  if (r->own[MATH_OUT]) op_downcast(r);
  return ATTN_STATUS_OK;
}

static attn_status math_dense(attn_ctx *ctx, const attn_args *a) {
  math_run r = {.a = a, .n = (int64_t)attn_cpu_score_elems(a), .bias_b = 1, .bias_h = 1};
  if (a->mask_kind != ATTN_MASK_NONE) r.bias_b = a->mask.shape[0], r.bias_h = a->mask.shape[1];
  attn_status st = ATTN_STATUS_OUT_OF_MEMORY;
  size_t bias_n = (size_t)(r.bias_b * r.bias_h * attn_seq_q(a) * attn_seq_k(a));
  if ((r.scores = attn_cpu_alloc_f32((size_t)r.n, "the S x S scores")) &&
      (!needs_bias(a) || (r.bias = attn_cpu_alloc_f32(bias_n, "the S x S bias"))))
    st = math_run_ops(&r);
  for (int t = 0; t < MATH_NT; t++) free(r.own[t]);
  free(r.scores);
  free(r.bias);
  return st;
}

/* Several sequences: one dense run each, pages gathered first. */
static attn_status math_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cpu_seqs_forward(ctx, a, math_dense, NULL) : math_dense(ctx, a);
}

/* With seqs the S x S buffers are per sequence; an allocation that fails
 * is reported when it happens. */
static attn_status math_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  if (a->seqs) return ATTN_STATUS_OK;
  return attn_cpu_scores_why_not(a, needs_bias(a) ? 2 : 1, "math_cpu", why, len);
}

const attn_backend_impl attn_backend_math_cpu = {
    .backend = ATTN_BACKEND_MATH,
    .impl = "math_cpu",
    .device_kind = ATTN_DEVICE_CPU,
    .summary = "the careful fp32 reference: upcast, mask rebuilt per call, sgemm, NaN-safe "
               "softmax, sgemm, downcast",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 65536,
    .why_not = math_why_not,
    .forward = math_forward,
    .available = NULL,
    .takes_seqs = 1,
};
