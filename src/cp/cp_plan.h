/* Context parallelism's arithmetic, shared by the CPU drivers (in-process,
 * over memory) and the CUDA drivers (over NCCL): which flash calls a rank
 * makes at each ring step, the exact fp32 merge of partial results, and the
 * auto rule. */
#ifndef ATTNPROF_ATTN_CP_PLAN_H
#define ATTNPROF_ATTN_CP_PLAN_H

#include "attnprof/cp.h"

/* How a query chunk sees a key chunk under the causal rule of the whole
 * sequence: all of it (key chunk before), its lower triangle (the same
 * chunk), or nothing (key chunk after). Non-causal: always FULL. */
typedef enum { ATTN_CP_BLOCK_FULL, ATTN_CP_BLOCK_DIAGONAL, ATTN_CP_BLOCK_SKIP } attn_cp_block;

attn_cp_block attn_cp_block_rule(int causal, int q_chunk, int k_chunk);

/* One flash call: query rows [q0, q0+nq) of the local shard against key rows
 * [k0, k0+nk) of the K/V in hand (a shard, or the gathered sequence), with
 * the causal rule `causal` (NONE, TOP_LEFT or BOTTOM_RIGHT of that block). */
typedef struct {
  int64_t q0, nq, k0, nk;
  attn_causal causal;
} attn_cp_call;

/* The calls rank makes on the shard of rank src (in shard rows): at most 2.
 * Built from attn_cp_block_rule over the four chunk pairs, with neighbours
 * that form one rectangle (or a rectangle with a bottom-right triangle) run
 * as one call. Returns the count. */
int attn_cp_ring_calls(int causal, int64_t s, int n, int rank, int src, attn_cp_call calls[4]);
/* The calls rank makes against the whole sequence in order (the gathered
 * K/V): one per local query chunk under causal, one in all otherwise. */
int attn_cp_allgather_calls(int causal, int64_t s, int n, int rank, attn_cp_call calls[2]);

/* Folds one partial result into fp32 accumulators, exactly:
 *   lse' = logaddexp(lse, lse_p),  o' = exp(lse - lse') o + exp(lse_p - lse') o_p
 * which, applied step after step, equals o = sum_i exp(lse_i - lse) o_i with
 * lse = logsumexp_i lse_i. A partial with lse_p = -inf (no key seen) changes
 * nothing; accumulators start at o = 0, lse = -inf.
 * acc_o is [BH, rows, D], acc_lse [BH, rows]; the partial covers rows
 * [q0, q0+nq): part_o [BH, nq, D] of dtype dt, part_lse [BH, nq]. */
void attn_cp_merge_host(float *acc_o, float *acc_lse, int64_t bh, int64_t rows, int64_t d,
                        int64_t q0, int64_t nq, const void *part_o, attn_dtype dt,
                        const float *part_lse);
/* out (contiguous [BH, rows, D], dtype dt) and lse (if non-NULL) from the
 * accumulators. */
void attn_cp_finish_host(const float *acc_o, const float *acc_lse, int64_t bh, int64_t rows,
                         int64_t d, void *out, attn_dtype dt, float *lse);

/* FLOPs per byte of one ring step (rank 0's heaviest), the auto rule's input. */
double attn_cp_ring_intensity(const attn_args *shard, int64_t s, int n);
/* AUTO's choice (cp.h): ring for one rank or from ATTN_CP_AUTO_BALANCE FLOP
 * per byte, else allgather. */
attn_cp_variant attn_cp_auto(const attn_args *shard, int64_t s, int n);

/* A [B, H, nr, D] view of rows [r0, r0+nr) of a contiguous tensor like t
 * (B, H, D from t) at `base`, whose S extent is s_all. */
attn_tensor attn_cp_rows_view(const attn_tensor *t, void *base, int64_t s_all, int64_t r0,
                              int64_t nr);

/* The in-process drivers: n ranks simulated in one thread, each with its
 * shard (shards[r]: host tensors, contiguous, as attn_cp_args.shard), K/V
 * passed around the ring through memory (ring) or gathered in memory
 * (allgather); each block computed by attn_forward(ctx, FLASH) with lse. */
attn_status attn_cp_host_forward(attn_ctx *ctx, attn_cp_variant variant, int64_t s, int n,
                                 const attn_args *shards);

/* Checks one rank's shard (shapes, contiguity, causal rule); one line in
 * attn_last_error on failure. */
attn_status attn_cp_check_shard(const attn_args *a, int64_t s, int n, int rank);

#endif
