/* Which flash calls a rank makes per ring step (from the per-block causal
 * rule), the exact fp32 merge of partial results on the host, the auto
 * rule's input, and the shard check. */
#include <math.h>

#include "core/elements.h"
#include "core/error.h"
#include "cp/cp_plan.h"

attn_cp_block attn_cp_block_rule(int causal, int q_chunk, int k_chunk) {
  if (!causal || k_chunk < q_chunk) return ATTN_CP_BLOCK_FULL;
  return k_chunk == q_chunk ? ATTN_CP_BLOCK_DIAGONAL : ATTN_CP_BLOCK_SKIP;
}

/* The keys one query chunk sees of a shard whose chunks lie [0, la) and
 * [la, la+lb) in sequence order: a prefix of the shard, ending in a full
 * block or in the diagonal. Returns 0 when it sees nothing. */
static int chunk_call(attn_cp_block first, attn_cp_block second, int64_t la, int64_t lb,
                      attn_cp_call *c) {
  c->k0 = 0;
  if (first == ATTN_CP_BLOCK_FULL && second != ATTN_CP_BLOCK_SKIP) {
    /* the whole shard; a diagonal second chunk is then the bottom-right triangle */
    c->nk = la + lb;
    c->causal = second == ATTN_CP_BLOCK_DIAGONAL ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
  } else if (first != ATTN_CP_BLOCK_SKIP && second == ATTN_CP_BLOCK_SKIP) {
    c->nk = la;
    c->causal = first == ATTN_CP_BLOCK_DIAGONAL ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  } else {
    return 0; /* both skipped (a key chunk after the query chunk cannot precede a seen one) */
  }
  return c->nk > 0;
}

int attn_cp_ring_calls(int causal, int64_t s, int n, int rank, int src, attn_cp_call calls[4]) {
  int q_chunk[2] = {rank, 2 * n - 1 - rank}, k_chunk[2] = {src, 2 * n - 1 - src};
  int64_t lq[2] = {attn_cp_chunk_len(s, n, q_chunk[0]), attn_cp_chunk_len(s, n, q_chunk[1])};
  int64_t lk[2] = {attn_cp_chunk_len(s, n, k_chunk[0]), attn_cp_chunk_len(s, n, k_chunk[1])};
  attn_cp_call c[2];
  int has[2];
  for (int i = 0; i < 2; i++) {
    has[i] = lq[i] > 0 &&
             chunk_call(attn_cp_block_rule(causal, q_chunk[i], k_chunk[0]),
                        attn_cp_block_rule(causal, q_chunk[i], k_chunk[1]), lk[0], lk[1], &c[i]);
    c[i].q0 = i ? lq[0] : 0;
    c[i].nq = lq[i];
  }
  int count = 0;
  if (has[0] && has[1] && c[0].nk == c[1].nk && c[0].causal == ATTN_CAUSAL_NONE &&
      c[1].causal == ATTN_CAUSAL_NONE) {
    /* both query chunks see the same keys in full: one call over the shard */
    calls[count] = c[0];
    calls[count++].nq = lq[0] + lq[1];
    return count;
  }
  for (int i = 0; i < 2; i++)
    if (has[i]) calls[count++] = c[i];
  return count;
}

int attn_cp_allgather_calls(int causal, int64_t s, int n, int rank, attn_cp_call calls[2]) {
  int64_t la = attn_cp_chunk_len(s, n, rank), lb = attn_cp_chunk_len(s, n, 2 * n - 1 - rank);
  int count = 0;
  if (!causal) {
    calls[count++] = (attn_cp_call){0, la + lb, 0, s, ATTN_CAUSAL_NONE};
    return la + lb > 0 ? count : 0;
  }
  int chunk[2] = {rank, 2 * n - 1 - rank};
  int64_t q0[2] = {0, la}, nq[2] = {la, lb};
  for (int i = 0; i < 2; i++)
    if (nq[i] > 0) /* every key up to the chunk's end; its own chunk as the triangle */
      calls[count++] = (attn_cp_call){q0[i], nq[i], 0, attn_cp_chunk_start(s, n, chunk[i]) + nq[i],
                                      ATTN_CAUSAL_BOTTOM_RIGHT};
  return count;
}

static float load(const void *p, attn_dtype dt, int64_t i) {
  switch (dt) {
    case ATTN_DTYPE_F16:
      return attn_cpu_f16_to_f32(((const uint16_t *)p)[i]);
    case ATTN_DTYPE_BF16:
      return attn_cpu_bf16_to_f32(((const uint16_t *)p)[i]);
    default:
      return ((const float *)p)[i];
  }
}

void attn_cp_merge_host(float *acc_o, float *acc_lse, int64_t bh, int64_t rows, int64_t d,
                        int64_t q0, int64_t nq, const void *part_o, attn_dtype dt,
                        const float *part_lse) {
  for (int64_t x = 0; x < bh; x++)
    for (int64_t i = 0; i < nq; i++) {
      float lp = part_lse[x * nq + i];
      if (lp == -INFINITY) continue; /* the block hid every key of this row */
      float *lse = &acc_lse[x * rows + q0 + i];
      float hi = fmaxf(*lse, lp);
      float lnew = hi + log1pf(expf(fminf(*lse, lp) - hi));
      float wa = expf(*lse - lnew), wp = expf(lp - lnew); /* exp(-inf) = 0 */
      float *o = &acc_o[(x * rows + q0 + i) * d];
      int64_t p0 = (x * nq + i) * d;
      for (int64_t e = 0; e < d; e++) o[e] = wa * o[e] + wp * load(part_o, dt, p0 + e);
      *lse = lnew;
    }
}

void attn_cp_finish_host(const float *acc_o, const float *acc_lse, int64_t bh, int64_t rows,
                         int64_t d, void *out, attn_dtype dt, float *lse) {
  for (int64_t i = 0; i < bh * rows * d; i++) {
    if (dt == ATTN_DTYPE_F16) ((uint16_t *)out)[i] = attn_cpu_f32_to_f16(acc_o[i]);
    else if (dt == ATTN_DTYPE_BF16) ((uint16_t *)out)[i] = attn_cpu_f32_to_bf16(acc_o[i]);
    else ((float *)out)[i] = acc_o[i];
  }
  for (int64_t i = 0; lse && i < bh * rows; i++) lse[i] = acc_lse[i];
}

double attn_cp_ring_intensity(const attn_args *a, int64_t s, int n) {
  double l = (double)attn_cp_shard_len(s, n, 0), es = (double)attn_dtype_size(a->q.dtype);
  double hq = (double)a->q.shape[1], hkv = (double)a->k.shape[1], d = (double)a->q.shape[3];
  double b = (double)a->q.shape[0];
  /* a steady causal step computes two of the four chunk blocks in full */
  double flops = 4.0 * b * hq * l * l * d * (a->causal != ATTN_CAUSAL_NONE ? 0.5 : 1.0);
  double bytes = 2.0 * b * hkv * l * d * es;
  return bytes > 0 ? flops / bytes : 0.0;
}

attn_cp_variant attn_cp_auto(const attn_args *shard, int64_t s, int n) {
  if (n == 1) return ATTN_CP_RING; /* nothing moves */
  return attn_cp_ring_intensity(shard, s, n) >= ATTN_CP_AUTO_BALANCE ? ATTN_CP_RING
                                                                     : ATTN_CP_ALLGATHER;
}

static int contiguous(const attn_tensor *t) {
  return t->strides[3] == 1 && t->strides[2] == t->shape[3] &&
         t->strides[1] == t->shape[2] * t->shape[3] &&
         t->strides[0] == t->shape[1] * t->shape[2] * t->shape[3];
}

attn_status attn_cp_check_shard(const attn_args *a, int64_t s, int n, int rank) {
  attn_status st = attn_args_check(a);
  if (st != ATTN_STATUS_OK) return st;
  if (a->seqs)
    return attn_fail(ATTN_STATUS_UNSUPPORTED,
                     "cp: one dense sequence per shard (attn_args.seqs must be NULL)");
  if (a->causal == ATTN_CAUSAL_BOTTOM_RIGHT || a->mask_kind != ATTN_MASK_NONE)
    return attn_fail(ATTN_STATUS_UNSUPPORTED,
                     "cp: causal top-left (of the whole sequence) or "
                     "none, no mask tensor; got %s",
                     a->mask_kind != ATTN_MASK_NONE ? "a mask" : "bottom-right");
  int64_t l = attn_cp_shard_len(s, n, rank);
  if (a->q.shape[2] != l || a->k.shape[2] != l)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: rank %d of %d over S=%lld holds %lld rows (zigzag), shard has q %lld, "
                     "k %lld",
                     rank, n, (long long)s, (long long)l, (long long)a->q.shape[2],
                     (long long)a->k.shape[2]);
  if (!contiguous(&a->q) || !contiguous(&a->k) || !contiguous(&a->v) || !contiguous(&a->out))
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: shards must be contiguous [B, H, L, D] (K/V travel as one block)");
  return ATTN_STATUS_OK;
}

attn_tensor attn_cp_rows_view(const attn_tensor *t, void *base, int64_t s_all, int64_t r0,
                              int64_t nr) {
  attn_tensor v =
      attn_tensor_bhsd(base, t->dtype, t->device, t->shape[0], t->shape[1], nr, t->shape[3]);
  v.strides[0] = t->shape[1] * s_all * t->shape[3];
  v.strides[1] = s_all * t->shape[3];
  v.data = (char *)base + (size_t)(r0 * t->shape[3]) * attn_dtype_size(t->dtype);
  return v;
}
