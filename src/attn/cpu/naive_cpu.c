/* naive and naive_inplace on the CPU: attention from primitives, one
 * recorded op per step, as a framework's eager composition runs it.
 *
 *   gemm_qk      GEMM         scores = Q K^T, one sgemm per (b, h); f16/bf16
 *                             inputs are converted to fp32 inside this op
 *   scale        ELEMENTWISE  scores *= scale
 *   copy_scores  COPY         naive only: the copy an out-of-place masked
 *                             fill makes (naive_inplace fills in place)
 *   masked_fill  ELEMENTWISE  causal and bool-masked keys -> -inf, additive
 *                             mask added (an additive -inf wins over NaN)
 *   softmax      SOFTMAX      plain exp(x - max) / sum. NOT NaN-safe: a fully
 *                             masked row is exp(-inf - -inf) = NaN, and its
 *                             lse NaN, as PyTorch's naive composition gives
 *   gemm_pv      GEMM         out = P V, written in out's dtype inside this op
 *
 * With no causal rule and no mask there is nothing to fill: copy and fill
 * are skipped and both backends run 4 ops. Otherwise naive runs 6 and
 * naive_inplace 5: one more op, the copy.
 *
 * The scores are fp32 [B, Hq, Sq, Sk], fully materialized (that is the point
 * of naive): one buffer, two for naive's out-of-place fill. why_not refuses
 * before allocating when they do not fit in memory. */
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"
#include "attn/cpu/seqs_cpu.h"

typedef struct {
  const attn_args *a;
  int64_t n;     /* score elements */
  float *scores; /* what gemm_qk and scale write */
  float *filled; /* what fill, softmax and gemm_pv use: a copy, or scores */
} naive_run;

static int needs_fill(const attn_args *a) {
  return a->causal != ATTN_CAUSAL_NONE || a->mask_kind != ATTN_MASK_NONE;
}

static int score_buffers(const attn_args *a, int out_of_place) {
  return out_of_place && needs_fill(a) ? 2 : 1;
}

static double gemm_flops(const attn_args *a) {
  return 2.0 * (double)attn_cpu_score_elems(a) * (double)attn_head_dim(a);
}

static attn_status op_gemm_qk(const naive_run *r) {
  const attn_args *a = r->a;
  prof_op_scope op = prof_op_begin("gemm_qk", PROF_KIND_GEMM);
  attn_cpu_mat q, k;
  float *q_own = NULL, *k_own = NULL;
  attn_status st = attn_cpu_operand(&a->q, "q in fp32", &q, &q_own);
  if (!st) st = attn_cpu_operand(&a->k, "k in fp32", &k, &k_own);
  if (!st) attn_cpu_gemm_qk(a, &q, &k, r->scores);
  free(q_own);
  free(k_own);
  prof_op_end(&op,
              (int64_t)(attn_cpu_tensor_bytes(&a->q) + attn_cpu_tensor_bytes(&a->k)) + r->n * 4,
              gemm_flops(a));
  return st;
}

static void op_scale(const naive_run *r) {
  prof_op_scope op = prof_op_begin("scale", PROF_KIND_ELEMENTWISE);
  float *s = r->scores, scale = (float)attn_scale_of(r->a);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < r->n; i++) s[i] *= scale;
  prof_op_end(&op, r->n * 8, (double)r->n);
}

static void op_copy(const naive_run *r) {
  prof_op_scope op = prof_op_begin("copy_scores", PROF_KIND_COPY);
  const int64_t chunk = 1 << 16, chunks = (r->n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; c++) {
    int64_t len = c == chunks - 1 ? r->n - c * chunk : chunk;
    memcpy(r->filled + c * chunk, r->scores + c * chunk, (size_t)len * sizeof(float));
  }
  prof_op_end(&op, r->n * 8, 0);
}

/* Row i of head (b, h): causal keys past the last visible -> -inf, then the
 * mask. A bool 0 or an additive -inf sets -inf (over a NaN score too). */
static void fill_row(const attn_args *a, int64_t b, int64_t h, int64_t i, float *s) {
  int64_t sk = attn_seq_k(a), first_hidden = sk;
  if (a->causal != ATTN_CAUSAL_NONE) {
    int64_t last = i + attn_cpu_causal_offset(a);
    first_hidden = last + 1 < 0 ? 0 : last + 1 < sk ? last + 1 : sk;
  }
  for (int64_t j = first_hidden; j < sk; j++) s[j] = -INFINITY;
  if (a->mask_kind == ATTN_MASK_NONE) return;
  const attn_tensor *m = &a->mask;
  int64_t off = attn_cpu_offset(m, b, h, i, 0), st = m->strides[3];
  for (int64_t j = 0; j < first_hidden; j++) {
    float v = attn_cpu_load(m->data, m->dtype, off + j * st);
    if (a->mask_kind == ATTN_MASK_BOOL) s[j] = v != 0 ? s[j] : -INFINITY;
    else s[j] = attn_cpu_add_bias(s[j], v);
  }
}

static void op_fill(const naive_run *r) {
  const attn_args *a = r->a;
  prof_op_scope op = prof_op_begin("masked_fill", PROF_KIND_ELEMENTWISE);
  int64_t hq = attn_heads_q(a), sq = attn_seq_q(a), sk = attn_seq_k(a);
  int64_t rows = attn_batch(a) * hq * sq;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; row++)
    fill_row(a, row / (hq * sq), row / sq % hq, row % sq, r->filled + row * sk);
  prof_op_end(&op, r->n * 8, a->mask_kind == ATTN_MASK_ADDITIVE ? (double)r->n : 0);
}

static void op_softmax(const naive_run *r) {
  int64_t sk = attn_seq_k(r->a);
  attn_cpu_softmax_op(r->filled, r->n / sk, sk, r->a->lse, 0);
}

static attn_status op_gemm_pv(const naive_run *r) {
  const attn_args *a = r->a;
  prof_op_scope op = prof_op_begin("gemm_pv", PROF_KIND_GEMM);
  attn_cpu_mat v, out;
  float *v_own = NULL, *out_own = NULL;
  attn_status st = attn_cpu_operand(&a->v, "v in fp32", &v, &v_own);
  if (!st && attn_cpu_rows_direct(&a->out)) {
    out = attn_cpu_mat_of(&a->out);
  } else if (!st) {
    out_own = attn_cpu_alloc_f32(
        (size_t)attn_cpu_tensor_bytes(&a->out) / attn_dtype_size(a->out.dtype), "out in fp32");
    st = out_own ? ATTN_STATUS_OK : ATTN_STATUS_OUT_OF_MEMORY;
    if (out_own) out = attn_cpu_mat_packed(out_own, &a->out);
  }
  if (!st) attn_cpu_gemm_pv(a, r->filled, &v, &out);
  if (!st && out_own) attn_cpu_from_f32(&a->out, out_own);
  free(v_own);
  free(out_own);
  prof_op_end(&op,
              (int64_t)(attn_cpu_tensor_bytes(&a->v) + attn_cpu_tensor_bytes(&a->out)) + r->n * 4,
              gemm_flops(a));
  return st;
}

static attn_status naive_run_ops(const naive_run *r) {
  attn_status st = op_gemm_qk(r);
  if (st) return st;
  op_scale(r);
  if (needs_fill(r->a)) {
    if (r->filled != r->scores) op_copy(r);
    op_fill(r);
  }
  op_softmax(r);
  return op_gemm_pv(r);
}

static attn_status naive_forward_common(const attn_args *a, int out_of_place) {
  naive_run r = {a, (int64_t)attn_cpu_score_elems(a), NULL, NULL};
  if (!(r.scores = attn_cpu_alloc_f32((size_t)r.n, "the S x S scores")))
    return ATTN_STATUS_OUT_OF_MEMORY;
  r.filled = r.scores;
  if (score_buffers(a, out_of_place) == 2 &&
      !(r.filled = attn_cpu_alloc_f32((size_t)r.n, "the copy of the S x S scores"))) {
    free(r.scores);
    return ATTN_STATUS_OUT_OF_MEMORY;
  }
  attn_status st = naive_run_ops(&r);
  if (r.filled != r.scores) free(r.filled);
  free(r.scores);
  return st;
}

/* With seqs the score buffers are per sequence (checked when allocated). */
static attn_status naive_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  if (a->seqs) return ATTN_STATUS_OK;
  return attn_cpu_scores_why_not(a, score_buffers(a, 1), "naive_cpu", why, len);
}

static attn_status naive_inplace_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  if (a->seqs) return ATTN_STATUS_OK;
  return attn_cpu_scores_why_not(a, score_buffers(a, 0), "naive_inplace_cpu", why, len);
}

static attn_status naive_dense(attn_ctx *ctx, const attn_args *a) {
  (void)ctx;
  return naive_forward_common(a, 1);
}
static attn_status naive_inplace_dense(attn_ctx *ctx, const attn_args *a) {
  (void)ctx;
  return naive_forward_common(a, 0);
}

/* Several sequences: one dense run each, pages gathered first. */
static attn_status naive_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cpu_seqs_forward(ctx, a, naive_dense, NULL) : naive_dense(ctx, a);
}
static attn_status naive_inplace_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cpu_seqs_forward(ctx, a, naive_inplace_dense, NULL)
                 : naive_inplace_dense(ctx, a);
}

const attn_backend_impl attn_backend_naive_cpu = {
    .backend = ATTN_BACKEND_NAIVE,
    .impl = "naive_cpu",
    .device_kind = ATTN_DEVICE_CPU,
    .summary = "attention from primitives: sgemm, scale, copy + masked fill, softmax, sgemm "
               "(S x S scores in memory)",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 65536,
    .why_not = naive_why_not,
    .forward = naive_forward,
    .available = NULL,
    .takes_seqs = 1,
};

const attn_backend_impl attn_backend_naive_inplace_cpu = {
    .backend = ATTN_BACKEND_NAIVE_INPLACE,
    .impl = "naive_inplace_cpu",
    .device_kind = ATTN_DEVICE_CPU,
    .summary = "naive with the masked fill in place: the copy of the scores disappears",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 65536,
    .why_not = naive_inplace_why_not,
    .forward = naive_inplace_forward,
    .available = NULL,
    .takes_seqs = 1,
};
