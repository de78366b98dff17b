/* The in-process drivers: n ranks simulated in one thread over a memory
 * transport, each block computed by the flash backend with its LSE and merged
 * in fp32. They run the same plan (cp_plan.c) as the CUDA drivers, so CI
 * checks the layout, the causal rule per block and the merge against the fp64
 * reference without GPUs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cp/cp_plan.h"
#include "core/error.h"

/* A rank's K/V in hand: [B, Hkv, len, D] each, contiguous. */
typedef struct {
  void *k, *v;
  int64_t len;
  int owner;
} kv_block;

/* The memory transport: every rank's block moves one rank on (r -> r+1),
 * through a second set of buffers, like one grouped send/recv step. */
static void ring_pass(kv_block *held, kv_block *spare, int n, size_t row_bytes) {
  for (int r = 0; r < n; r++) {
    const kv_block *from = &held[(r + n - 1) % n];
    memcpy(spare[r].k, from->k, (size_t)from->len * row_bytes);
    memcpy(spare[r].v, from->v, (size_t)from->len * row_bytes);
    spare[r].len = from->len;
    spare[r].owner = from->owner;
  }
  for (int r = 0; r < n; r++) {
    kv_block t = held[r];
    held[r] = spare[r];
    spare[r] = t;
  }
}

typedef struct {
  float *acc_o, *acc_lse, *part_lse;
  void *part_o;
} rank_acc;

/* One call of the plan on the K/V in hand (kv: [B, Hkv, s_kv, D]); its
 * partial result folded into the rank's accumulators. */
static attn_status run_call(attn_ctx *ctx, const attn_args *a, const attn_cp_call *c, void *k,
                            void *v, int64_t s_kv, rank_acc *acc) {
  int64_t l = a->q.shape[2], bh = a->q.shape[0] * a->q.shape[1], d = a->q.shape[3];
  attn_args ca = attn_args_make(attn_cp_rows_view(&a->q, a->q.data, l, c->q0, c->nq),
                                attn_cp_rows_view(&a->k, k, s_kv, c->k0, c->nk),
                                attn_cp_rows_view(&a->v, v, s_kv, c->k0, c->nk),
                                attn_tensor_bhsd(acc->part_o, a->out.dtype, a->out.device,
                                                 a->q.shape[0], a->q.shape[1], c->nq, d));
  ca.causal = c->causal;
  ca.scale = a->scale;
  ca.lse = acc->part_lse;
  attn_status st = attn_forward(ctx, ATTN_BACKEND_FLASH, &ca);
  if (st == ATTN_STATUS_OK)
    attn_cp_merge_host(acc->acc_o, acc->acc_lse, bh, l, d, c->q0, c->nq, acc->part_o, a->out.dtype,
                       acc->part_lse);
  return st;
}

static attn_status acc_alloc(rank_acc *acc, const attn_args *a) {
  int64_t bh = a->q.shape[0] * a->q.shape[1], l = a->q.shape[2], d = a->q.shape[3];
  size_t n_o = (size_t)(bh * l * d), n_l = (size_t)(bh * l);
  acc->acc_o = calloc(n_o ? n_o : 1, sizeof(float));
  acc->acc_lse = malloc((n_l ? n_l : 1) * sizeof(float));
  acc->part_lse = malloc((n_l ? n_l : 1) * sizeof(float));
  acc->part_o = malloc((n_o ? n_o : 1) * attn_dtype_size(a->out.dtype));
  if (!acc->acc_o || !acc->acc_lse || !acc->part_lse || !acc->part_o)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory for accumulators");
  for (size_t i = 0; i < n_l; i++) acc->acc_lse[i] = -INFINITY;
  return ATTN_STATUS_OK;
}

static void acc_free(rank_acc *acc) {
  free(acc->acc_o);
  free(acc->acc_lse);
  free(acc->part_lse);
  free(acc->part_o);
}

static attn_status host_ring(attn_ctx *ctx, int64_t s, int n, const attn_args *sh, rank_acc *acc,
                             size_t row_bytes) {
  int64_t lmax = 0;
  for (int r = 0; r < n; r++) lmax = sh[r].k.shape[2] > lmax ? sh[r].k.shape[2] : lmax;
  kv_block *held = calloc((size_t)n, sizeof *held), *spare = calloc((size_t)n, sizeof *spare);
  attn_status st =
      held && spare ? ATTN_STATUS_OK : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory");
  for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) {
    held[r] = (kv_block){malloc((size_t)lmax * row_bytes + 1), malloc((size_t)lmax * row_bytes + 1),
                         sh[r].k.shape[2], r};
    spare[r] = (kv_block){malloc((size_t)lmax * row_bytes + 1),
                          malloc((size_t)lmax * row_bytes + 1), 0, -1};
    if (!held[r].k || !held[r].v || !spare[r].k || !spare[r].v)
      st = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory for K/V blocks");
    else {
      memcpy(held[r].k, sh[r].k.data, (size_t)held[r].len * row_bytes);
      memcpy(held[r].v, sh[r].v.data, (size_t)held[r].len * row_bytes);
    }
  }
  for (int step = 0; st == ATTN_STATUS_OK && step < n; step++) {
    for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) {
      attn_cp_call calls[4];
      int nc = attn_cp_ring_calls(sh[r].causal != ATTN_CAUSAL_NONE, s, n, r, held[r].owner, calls);
      for (int c = 0; st == ATTN_STATUS_OK && c < nc; c++)
        st = run_call(ctx, &sh[r], &calls[c], held[r].k, held[r].v, held[r].len, &acc[r]);
    }
    if (step + 1 < n) ring_pass(held, spare, n, row_bytes);
  }
  for (int r = 0; held && spare && r < n; r++) {
    free(held[r].k), free(held[r].v), free(spare[r].k), free(spare[r].v);
  }
  free(held);
  free(spare);
  return st;
}

/* The memory all-gather: every shard into the sequence order (what the CUDA
 * driver does after ncclAllGather), then one call per local query chunk. */
static attn_status host_allgather(attn_ctx *ctx, int64_t s, int n, const attn_args *sh,
                                  rank_acc *acc, size_t row_bytes) {
  const attn_tensor *k0 = &sh[0].k;
  size_t bytes = (size_t)(k0->shape[0] * k0->shape[1] * s) * row_bytes;
  void *kall = malloc(bytes + 1), *vall = malloc(bytes + 1);
  attn_status st =
      kall && vall ? ATTN_STATUS_OK : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory");
  for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) {
    attn_tensor fk = attn_tensor_bhsd(kall, k0->dtype, ATTN_DEVICE_CPU, k0->shape[0], k0->shape[1],
                                      s, k0->shape[3]);
    attn_tensor fv = fk;
    fv.data = vall;
    st = attn_cp_gather(&sh[r].k, n, r, &fk);
    if (st == ATTN_STATUS_OK) st = attn_cp_gather(&sh[r].v, n, r, &fv);
  }
  for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) {
    attn_cp_call calls[2];
    int nc = attn_cp_allgather_calls(sh[r].causal != ATTN_CAUSAL_NONE, s, n, r, calls);
    for (int c = 0; st == ATTN_STATUS_OK && c < nc; c++)
      st = run_call(ctx, &sh[r], &calls[c], kall, vall, s, &acc[r]);
  }
  free(kall);
  free(vall);
  return st;
}

attn_status attn_cp_host_forward(attn_ctx *ctx, attn_cp_variant variant, int64_t s, int n,
                                 const attn_args *sh) {
  if (n < 1) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "cp: %d ranks: need at least 1", n);
  for (int r = 0; r < n; r++) {
    attn_status st = attn_cp_check_shard(&sh[r], s, n, r);
    if (st != ATTN_STATUS_OK) return st;
    if (sh[r].q.device != ATTN_DEVICE_CPU)
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "cp: the in-process driver takes host shards");
  }
  if (variant == ATTN_CP_AUTO) variant = attn_cp_auto(&sh[0], s, n);
  rank_acc *acc = calloc((size_t)n, sizeof *acc);
  attn_status st = acc ? ATTN_STATUS_OK : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no memory");
  for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) st = acc_alloc(&acc[r], &sh[r]);
  size_t row_bytes = (size_t)sh[0].k.shape[3] * attn_dtype_size(sh[0].k.dtype);
  /* K/V blocks hold B*Hkv rows per sequence row */
  size_t kv_row = row_bytes * (size_t)(sh[0].k.shape[0] * sh[0].k.shape[1]);
  if (st == ATTN_STATUS_OK)
    st = variant == ATTN_CP_RING ? host_ring(ctx, s, n, sh, acc, kv_row)
                                 : host_allgather(ctx, s, n, sh, acc, row_bytes);
  for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) {
    int64_t bh = sh[r].q.shape[0] * sh[r].q.shape[1];
    attn_cp_finish_host(acc[r].acc_o, acc[r].acc_lse, bh, sh[r].q.shape[2], sh[r].q.shape[3],
                        sh[r].out.data, sh[r].out.dtype, sh[r].lse);
  }
  for (int r = 0; acc && r < n; r++) acc_free(&acc[r]);
  free(acc);
  return st;
}
