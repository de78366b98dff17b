/* math on CUDA: the careful reference, in the spirit of PyTorch's math SDPA
 * path with its fp32 upcast.
 *
 *   upcast        upcast_kernel: Q, K, V (any strides, any dtype) into
 *                 contiguous fp32 copies, one launch for the three
 *   causal_bias   causal_bias_kernel: the causal mask rebuilt on every call
 *                 as an additive fp32 [Sq, Sk] bias (0 or -inf)
 *   gemm_qk       cuBLAS SGEMM, pure FP32 on CUDA cores (CUBLAS_COMPUTE_32F,
 *                 default math: no TF32), the scale folded into alpha
 *   softmax       softmax_*_kernel, safe: bias and mask added, a fully masked
 *                 row gives 0 and lse -inf instead of NaN
 *   gemm_pv       cuBLAS SGEMM into a contiguous fp32 output
 *   downcast      downcast_kernel: fp32 into out's dtype and strides
 *
 * 6 ops per forward with a causal rule (4 kernels, 2 GEMMs), 5 without. With
 * the handle's graph mode on, a call repeating the previous call's arguments
 * replays them as a CUDA graph (graph_cache.h).
 * Every intermediate is fp32 in the backend's scratch buffer: copies of Q,
 * K, V and the output, the [B, Hq, Sq, Sk] scores and the bias. */
#include <stdio.h>

#include "attn/cuda/baselines/baseline_kernels.h"
#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/baselines/cuda_ctx.h"
#include "attn/cuda/baselines/gemm_plan.h"
#include "attn/cuda/baselines/graph_cache.h"
#include "attn/cuda/baselines/seqs_gather.h"

/* Byte offsets of the fp32 intermediates inside the scratch buffer. */
typedef struct {
  size_t q, k, v, o, scores, bias, total;
} math_layout;

static double elems(const attn_tensor *t) {
  return (double)t->shape[0] * (double)t->shape[1] * (double)t->shape[2] * (double)t->shape[3];
}

static double score_elems(const attn_args *a) {
  return (double)attn_batch(a) * (double)attn_heads_q(a) * (double)attn_seq_q(a) *
         (double)attn_seq_k(a);
}

static double bias_elems(const attn_args *a) {
  return a->causal == ATTN_CAUSAL_NONE ? 0 : (double)attn_seq_q(a) * (double)attn_seq_k(a);
}

/* Each piece rounded up to 256 bytes (16-byte vector alignment). */
static math_layout layout_of(const attn_args *a) {
  math_layout l;
  size_t at = 0;
  l.q = at, at += attn_cuda_align((size_t)elems(&a->q) * 4);
  l.k = at, at += attn_cuda_align((size_t)elems(&a->k) * 4);
  l.v = at, at += attn_cuda_align((size_t)elems(&a->v) * 4);
  l.o = at, at += attn_cuda_align((size_t)elems(&a->out) * 4);
  l.scores = at, at += attn_cuda_align((size_t)score_elems(a) * 4);
  l.bias = at, at += attn_cuda_align((size_t)bias_elems(a) * 4);
  l.total = at;
  return l;
}

static attn_status math_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  if (a->seqs) return ATTN_STATUS_OK; /* per-sequence buffers, checked when allocated */
  attn_status st = attn_cuda_rows_why_not(a, "math_cuda", why, len);
  if (st) return st;
  double need = 4 * (2 * elems(&a->q) + 2 * elems(&a->k) + score_elems(a) + bias_elems(a));
  if (attn_cuda_memory_held(ctx, a, need, 0)) return ATTN_STATUS_OK; /* no text to format */
  char what[200];
  snprintf(what, sizeof what,
           "fp32 copies of q, k, v and out plus fp32 scores of B*Hq*Sq*Sk = %.0f elements",
           score_elems(a));
  return attn_cuda_memory_why_not(ctx, a, need, 0, "math_cuda", what, why, len);
}

/* A contiguous fp32 [B, H, S, D] tensor in the scratch buffer. */
static attn_tensor f32_like(const attn_tensor *t, char *base, size_t off) {
  return attn_tensor_bhsd(base + off, ATTN_DTYPE_F32, t->device, t->shape[0], t->shape[1],
                          t->shape[2], t->shape[3]);
}

static attn_status math_gemms_and_softmax(const attn_args *a, attn_cuda_ctx *ctx, char *base,
                                          const math_layout *l, cudaStream_t s) {
  attn_tensor q = f32_like(&a->q, base, l->q), k = f32_like(&a->k, base, l->k),
              v = f32_like(&a->v, base, l->v), o = f32_like(&a->out, base, l->o);
  float *scores = (float *)(base + l->scores);
  char why[256];
  attn_gemm qk, pv;
  attn_status st;
  if ((st = attn_gemm_plan_qk(&q, &k, scores, ATTN_DTYPE_F32, (float)attn_scale_of(a), &qk, why,
                              sizeof why)) ||
      (st = attn_gemm_plan_pv(scores, &v, &o, &pv, why, sizeof why)))
    return attn_fail(st, "%s", why);
  if ((st = attn_gemm_run(ctx, &qk, s))) return st;
  attn_cuda_rows rows = {.scores = scores,
                         .dtype = ATTN_DTYPE_F32,
                         .b = attn_batch(a),
                         .hq = attn_heads_q(a),
                         .sq = attn_seq_q(a),
                         .sk = attn_seq_k(a),
                         .causal_bias = bias_elems(a) > 0 ? (float *)(base + l->bias) : NULL,
                         .mask_kind = a->mask_kind,
                         .lse = a->lse,
                         .safe = 1};
  if (a->mask_kind != ATTN_MASK_NONE) rows.mask = attn_cuda_view_of(&a->mask);
  if ((st = attn_cuda_softmax(&rows, s))) return st;
  return attn_gemm_run(ctx, &pv, s);
}

typedef struct {
  char *base; /* the scratch buffer, laid out by `layout` */
  math_layout layout;
} math_run;

/* The ops on stream s (an attn_cuda_ops_fn: eager, or under capture). */
static attn_status math_ops(const attn_args *a, attn_cuda_ctx *ctx, cudaStream_t s, void *state) {
  const math_run *r = state;
  char *base = r->base;
  const math_layout *l = &r->layout;
  attn_cuda_upcast_job jobs[3] = {{attn_cuda_view_of(&a->q), (float *)(base + l->q)},
                                  {attn_cuda_view_of(&a->k), (float *)(base + l->k)},
                                  {attn_cuda_view_of(&a->v), (float *)(base + l->v)}};
  attn_status st = attn_cuda_upcast(jobs, 3, s);
  if (st) return st;
  if (a->causal != ATTN_CAUSAL_NONE) {
    int64_t offset = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? attn_seq_k(a) - attn_seq_q(a) : 0;
    if ((st = attn_cuda_causal_bias((float *)(base + l->bias), attn_seq_q(a), attn_seq_k(a), offset,
                                    s)))
      return st;
  }
  if ((st = math_gemms_and_softmax(a, ctx, base, l, s))) return st;
  return attn_cuda_downcast((const float *)(base + l->o), &a->out, s);
}

static attn_status math_dense(attn_ctx *actx, const attn_args *a) {
  math_run r = {.layout = layout_of(a)};
  attn_cuda_ctx *ctx;
  void *buf;
  attn_status st;
  if ((st = attn_cuda_ctx_get(actx, a->q.device, &ctx)) ||
      (st = attn_cuda_ctx_begin(ctx, (cudaStream_t)a->stream)) ||
      (st = attn_cuda_ctx_scratch(ctx, r.layout.total, &buf)))
    return st;
  r.base = buf;
  return attn_cuda_graph_run(ctx, ATTN_BACKEND_MATH, a, NULL, math_ops, &r);
}

/* Several sequences: one dense run each, pages gathered first. */
static attn_status math_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cuda_seqs_forward(ctx, a, math_dense) : math_dense(ctx, a);
}

const attn_backend_impl attn_backend_math_cuda = {
    .backend = ATTN_BACKEND_MATH,
    .impl = "math_cuda",
    .device_kind = 0,
    .summary = "the careful reference: fp32 upcast, FP32 cuBLAS GEMMs (no TF32), causal bias "
               "rebuilt per call, NaN-safe softmax, downcast",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 65536,
    .why_not = math_why_not,
    .forward = math_forward,
    .available = attn_cuda_available,
    .takes_seqs = 1,
};
