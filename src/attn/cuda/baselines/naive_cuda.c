/* naive and naive_inplace on CUDA: attention from primitives, one GPU op per
 * step, as PyTorch's eager composition runs it.
 *
 *   gemm_qk      cuBLAS strided-batched GEMM: scores = Q K^T in the input
 *                dtype (16-bit in, fp32 accumulate, tensor cores; fp32 in:
 *                plain SGEMM, no TF32)
 *   scale        scale_kernel: scores *= scale
 *   copy         naive only: cudaMemcpyAsync device-to-device, the copy an
 *                out-of-place masked fill makes (PyTorch's hidden Memcpy)
 *   masked_fill  masked_fill_kernel: causally hidden keys (a [Sq, Sk] mask
 *                built once per shape and cached) and masked keys -> -inf,
 *                an additive mask added
 *   softmax      softmax_*_kernel: plain exp(x - max) / sum in fp32, NOT
 *                NaN-safe (a fully masked row is NaN, as the CPU naive and
 *                PyTorch's composition give); writes the lse when asked
 *   gemm_pv      cuBLAS: out = P V, written in out's dtype through its strides
 *
 * Without a causal rule or a mask there is nothing to fill: 4 ops for both.
 * Otherwise naive runs 6 (plus whatever cuBLAS adds) and naive_inplace 5.
 * With the handle's graph mode on, a call repeating the previous call's
 * arguments replays them as a CUDA graph (graph_cache.h): the same GPU ops,
 * one cudaGraphLaunch. The scores are [B, Hq, Sq, Sk] in the input dtype
 * (two buffers for naive's copy), in the handle's scratch for the device. */
#include <stdio.h>

#include "attn/cuda/baselines/baseline_kernels.h"
#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/baselines/cuda_ctx.h"
#include "attn/cuda/baselines/gemm_plan.h"
#include "attn/cuda/baselines/graph_cache.h"
#include "attn/cuda/baselines/seqs_gather.h"

static int needs_fill(const attn_args *a) {
  return a->causal != ATTN_CAUSAL_NONE || a->mask_kind != ATTN_MASK_NONE;
}

static int score_buffers(const attn_args *a, int out_of_place) {
  return out_of_place && needs_fill(a) ? 2 : 1;
}

static double score_elems(const attn_args *a) {
  return (double)attn_batch(a) * (double)attn_heads_q(a) * (double)attn_seq_q(a) *
         (double)attn_seq_k(a);
}

/* Query i sees keys j <= i + offset. */
static int64_t causal_offset(const attn_args *a) {
  return a->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? attn_seq_k(a) - attn_seq_q(a) : 0;
}

/* The causal mask bytes this call may allocate (it may be cached already;
 * the check is not to take it out of the cache). */
static double keep_bytes(const attn_args *a) {
  if (a->causal == ATTN_CAUSAL_NONE) return 0;
  return (double)attn_seq_q(a) * (double)attn_seq_k(a);
}

static attn_status naive_check(attn_ctx *ctx, const attn_args *a, int out_of_place,
                               const char *impl, char *why, size_t len) {
  attn_gemm g;
  attn_status st;
  if ((st = attn_cuda_rows_why_not(a, impl, why, len)) ||
      (st = attn_gemm_plan_qk(&a->q, &a->k, NULL, a->q.dtype, 1.0f, &g, why, len)) ||
      (st = attn_gemm_plan_pv(NULL, &a->v, &a->out, &g, why, len)))
    return st;
  int bufs = score_buffers(a, out_of_place);
  double need = score_elems(a) * (double)attn_dtype_size(a->q.dtype) * bufs, keep = keep_bytes(a);
  if (attn_cuda_memory_held(ctx, a, need, keep)) return ATTN_STATUS_OK; /* no text to format */
  char what[160];
  snprintf(what, sizeof what, "%d %s score buffer%s of B*Hq*Sq*Sk = %.0f elements", bufs,
           attn_dtype_name(a->q.dtype), bufs > 1 ? "s" : "", score_elems(a));
  return attn_cuda_memory_why_not(ctx, a, need, keep, impl, what, why, len);
}

/* What the GPU ops of one forward use, prepared before any is enqueued (the
 * ops may be captured into a graph, where nothing may allocate). */
typedef struct {
  void *scores, *filled; /* filled == scores for the in-place fill */
  const uint8_t *keep;   /* the cached causal mask, or NULL */
  int64_t n;
} naive_run;

static attn_cuda_rows rows_of(const attn_args *a, void *buf) {
  attn_cuda_rows rows = {.scores = buf,
                         .dtype = a->q.dtype,
                         .b = attn_batch(a),
                         .hq = attn_heads_q(a),
                         .sq = attn_seq_q(a),
                         .sk = attn_seq_k(a),
                         .mask_kind = ATTN_MASK_NONE};
  return rows;
}

static attn_status op_fill(const attn_args *a, const naive_run *r, cudaStream_t s) {
  attn_cuda_rows rows = rows_of(a, r->filled);
  if (r->filled != r->scores)
    ATTN_CUDA_TRY(cudaMemcpyAsync(r->filled, r->scores, (size_t)r->n * attn_dtype_size(a->q.dtype),
                                  cudaMemcpyDeviceToDevice, s));
  rows.causal_keep = r->keep;
  if (a->mask_kind != ATTN_MASK_NONE) {
    rows.mask_kind = a->mask_kind;
    rows.mask = attn_cuda_view_of(&a->mask);
  }
  return attn_cuda_masked_fill(&rows, s);
}

/* The ops on stream s (an attn_cuda_ops_fn: eager, or under capture). */
static attn_status naive_ops(const attn_args *a, attn_cuda_ctx *ctx, cudaStream_t s, void *state) {
  const naive_run *r = state;
  char why[256];
  attn_gemm qk, pv;
  attn_status st;
  if ((st = attn_gemm_plan_qk(&a->q, &a->k, r->scores, a->q.dtype, 1.0f, &qk, why, sizeof why)) ||
      (st = attn_gemm_plan_pv(r->filled, &a->v, &a->out, &pv, why, sizeof why)))
    return attn_fail(st, "%s", why);
  if ((st = attn_gemm_run(ctx, &qk, s)) ||
      (st = attn_cuda_scale(r->scores, a->q.dtype, r->n, (float)attn_scale_of(a), s)))
    return st;
  if (needs_fill(a) && (st = op_fill(a, r, s))) return st;
  attn_cuda_rows rows = rows_of(a, r->filled);
  rows.lse = a->lse;
  if ((st = attn_cuda_softmax(&rows, s))) return st;
  return attn_gemm_run(ctx, &pv, s);
}

static attn_status naive_forward_common(attn_ctx *actx, const attn_args *a, int out_of_place) {
  naive_run r = {.n = (int64_t)score_elems(a)};
  size_t bytes = attn_cuda_align((size_t)r.n * attn_dtype_size(a->q.dtype));
  int bufs = score_buffers(a, out_of_place);
  attn_cuda_ctx *ctx;
  void *buf;
  attn_status st;
  if ((st = attn_cuda_ctx_get(actx, a->q.device, &ctx)) ||
      (st = attn_cuda_ctx_begin(ctx, (cudaStream_t)a->stream)) ||
      (st = attn_cuda_ctx_scratch(ctx, bytes * (size_t)bufs, &buf)))
    return st;
  if (a->causal != ATTN_CAUSAL_NONE &&
      (st = attn_cuda_ctx_causal_keep(ctx, attn_seq_q(a), attn_seq_k(a), causal_offset(a),
                                      (cudaStream_t)a->stream, &r.keep)))
    return st;
  r.scores = buf;
  r.filled = bufs == 2 ? (char *)buf + bytes : buf;
  return attn_cuda_graph_run(ctx, out_of_place ? ATTN_BACKEND_NAIVE : ATTN_BACKEND_NAIVE_INPLACE, a,
                             r.keep, naive_ops, &r);
}

/* With seqs the S x S buffers are per sequence (checked when allocated). */
static attn_status naive_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  if (a->seqs) return ATTN_STATUS_OK;
  return naive_check(ctx, a, 1, "naive_cuda", why, len);
}

static attn_status naive_inplace_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  if (a->seqs) return ATTN_STATUS_OK;
  return naive_check(ctx, a, 0, "naive_inplace_cuda", why, len);
}

static attn_status naive_dense(attn_ctx *ctx, const attn_args *a) {
  return naive_forward_common(ctx, a, 1);
}
static attn_status naive_inplace_dense(attn_ctx *ctx, const attn_args *a) {
  return naive_forward_common(ctx, a, 0);
}

/* Several sequences: one dense run each, pages gathered first. */
static attn_status naive_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cuda_seqs_forward(ctx, a, naive_dense) : naive_dense(ctx, a);
}
static attn_status naive_inplace_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cuda_seqs_forward(ctx, a, naive_inplace_dense)
                 : naive_inplace_dense(ctx, a);
}

const attn_backend_impl attn_backend_naive_cuda = {
    .backend = ATTN_BACKEND_NAIVE,
    .impl = "naive_cuda",
    .device_kind = 0,
    .summary = "attention from primitives: cuBLAS GEMM, scale, memcpy + masked fill, softmax, "
               "cuBLAS GEMM (S x S scores in device memory)",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 65536,
    .why_not = naive_why_not,
    .forward = naive_forward,
    .available = attn_cuda_available,
    .takes_seqs = 1,
};

const attn_backend_impl attn_backend_naive_inplace_cuda = {
    .backend = ATTN_BACKEND_NAIVE_INPLACE,
    .impl = "naive_inplace_cuda",
    .device_kind = 0,
    .summary = "naive with the masked fill in place: the device-to-device memcpy disappears",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 65536,
    .why_not = naive_inplace_why_not,
    .forward = naive_inplace_forward,
    .available = attn_cuda_available,
    .takes_seqs = 1,
};
