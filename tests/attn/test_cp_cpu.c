/* Context parallelism on the CPU: the zigzag layout, the per-block causal
 * rule, the exact merge, and the whole ring (and all-gather) run in-process
 * over a memory transport, N ranks simulated in one thread, compared with the
 * fp64 reference on the whole sequence. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"
#include "cp/cp_plan.h"

static void test_layout_chunks_cover_sequence(void **state) {
  for (int n = 1; n <= 8; n++)
    for (int64_t s = 0; s <= 70; s++) {
      int64_t next = 0, lmin = INT64_MAX, lmax = 0;
      for (int c = 0; c < 2 * n; c++) {
        assert_int_equal(attn_cp_chunk_start(s, n, c), next);
        next += attn_cp_chunk_len(s, n, c);
      }
      assert_int_equal(next, s);
      int64_t total = 0;
      for (int r = 0; r < n; r++) {
        int64_t l = attn_cp_shard_len(s, n, r);
        total += l;
        lmin = l < lmin ? l : lmin;
        lmax = l > lmax ? l : lmax;
      }
      assert_int_equal(total, s);
      assert_true(lmax - lmin <= 1); /* S mod 2N rows spread one per chunk */
    }
}

static void test_layout_scatter_gather_round_trip(void **state) {
  enum { B = 2, H = 3, S = 29, D = 5 };
  float full[B * H * S * D], back[B * H * S * D], shard[B * H * S * D];
  for (int i = 0; i < B * H * S * D; i++) full[i] = (float)i, back[i] = NAN;
  attn_tensor f = attn_tensor_bhsd(full, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, B, H, S, D);
  attn_tensor g = attn_tensor_bhsd(back, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, B, H, S, D);
  int n = 3;
  for (int r = 0; r < n; r++) {
    int64_t l = attn_cp_shard_len(S, n, r);
    attn_tensor sh = attn_tensor_bhsd(shard, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, B, H, l, D);
    assert_int_equal(attn_cp_scatter(&f, n, r, &sh), ATTN_STATUS_OK);
    /* the shard's first row is chunk r's first row, its row la chunk 2n-1-r's */
    int64_t la = attn_cp_chunk_len(S, n, r);
    assert_true(shard[0] == full[attn_cp_chunk_start(S, n, r) * D]);
    assert_true(shard[la * D] == full[attn_cp_chunk_start(S, n, 2 * n - 1 - r) * D]);
    assert_int_equal(attn_cp_gather(&sh, n, r, &g), ATTN_STATUS_OK);
    sh.shape[2] = l + 1;
    assert_int_equal(attn_cp_scatter(&f, n, r, &sh), ATTN_STATUS_INVALID_ARGUMENT);
  }
  assert_memory_equal(full, back, sizeof full);
}

static void test_block_rule(void **state) {
  assert_int_equal(attn_cp_block_rule(1, 3, 2), ATTN_CP_BLOCK_FULL);
  assert_int_equal(attn_cp_block_rule(1, 3, 3), ATTN_CP_BLOCK_DIAGONAL);
  assert_int_equal(attn_cp_block_rule(1, 3, 4), ATTN_CP_BLOCK_SKIP);
  assert_int_equal(attn_cp_block_rule(0, 3, 4), ATTN_CP_BLOCK_FULL);
}

/* Global row of shard row r of `rank`. */
static int64_t global_row(int64_t s, int n, int rank, int64_t r) {
  int64_t la = attn_cp_chunk_len(s, n, rank);
  return r < la ? attn_cp_chunk_start(s, n, rank) + r
                : attn_cp_chunk_start(s, n, 2 * n - 1 - rank) + (r - la);
}

/* Marks the (query, key) pairs one call covers, in global rows; kv_rank < 0:
 * keys in sequence order (all-gather). */
static void mark(unsigned char *seen, int64_t s, int n, int rank, int kv_rank,
                 const attn_cp_call *c) {
  for (int64_t i = 0; i < c->nq; i++)
    for (int64_t j = 0; j < c->nk; j++) {
      int64_t last = c->causal == ATTN_CAUSAL_TOP_LEFT       ? i
                     : c->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? i + c->nk - c->nq
                                                             : c->nk - 1;
      if (j > last) continue;
      int64_t gq = global_row(s, n, rank, c->q0 + i);
      int64_t gk = kv_rank < 0 ? c->k0 + j : global_row(s, n, kv_rank, c->k0 + j);
      seen[gq * s + gk]++;
    }
}

/* Every visible (query, key) pair of the whole sequence is computed exactly
 * once over all ranks and steps, and no hidden pair ever; causal work per
 * rank is balanced. */
static void test_plans_cover_each_pair_once(void **state) {
  for (int n = 1; n <= 5; n++)
    for (int64_t s = 1; s <= 4 * n + 3; s += 1 + (s > 12))
      for (int causal = 0; causal <= 1; causal++)
        for (int variant = 0; variant < 2; variant++) {
          unsigned char *seen = calloc((size_t)(s * s), 1);
          assert_non_null(seen);
          int64_t work[8] = {0};
          for (int r = 0; r < n; r++) {
            attn_cp_call calls[4];
            if (variant == 0) {
              for (int step = 0; step < n; step++) {
                int src = (r - step + n) % n;
                int nc = attn_cp_ring_calls(causal, s, n, r, src, calls);
                assert_true(nc <= 2);
                for (int c = 0; c < nc; c++) {
                  mark(seen, s, n, r, src, &calls[c]);
                  work[r] += calls[c].nq * calls[c].nk;
                }
              }
            } else {
              int nc = attn_cp_allgather_calls(causal, s, n, r, calls);
              for (int c = 0; c < nc; c++) mark(seen, s, n, r, -1, &calls[c]);
            }
          }
          for (int64_t i = 0; i < s; i++)
            for (int64_t j = 0; j < s; j++)
              if (seen[i * s + j] != (!causal || j <= i))
                fail_msg("n=%d s=%lld causal=%d %s: pair (%lld,%lld) computed %d times", n,
                         (long long)s, causal, variant ? "allgather" : "ring", (long long)i,
                         (long long)j, seen[i * s + j]);
          if (variant == 0 && causal && s % (2 * n) == 0)
            for (int r = 1; r < n; r++) assert_int_equal(work[r], work[0]);
          free(seen);
        }
}

/* Two halves of the keys merged equal the whole; a fully masked partial
 * (lse -inf) changes nothing; a row masked everywhere stays 0 / -inf. */
static void test_merge_exact(void **state) {
  enum { D = 4, SK = 10 };
  test_rng rng = {test_seed(7)};
  double sc[SK], vv[SK][D];
  for (int j = 0; j < SK; j++) {
    sc[j] = 3 * test_rng_normal(&rng);
    for (int e = 0; e < D; e++) vv[j][e] = test_rng_normal(&rng);
  }
  float acc_o[2 * D] = {0}, acc_lse[2] = {-INFINITY, -INFINITY};
  for (int part = 0; part < 3; part++) {
    int j0 = part == 2 ? 0 : part * 6, j1 = part == 2 ? 0 : (part ? SK : 6);
    double m = -INFINITY, l = 0, o[D] = {0};
    for (int j = j0; j < j1; j++) m = fmax(m, sc[j]);
    for (int j = j0; j < j1; j++) {
      l += exp(sc[j] - m);
      for (int e = 0; e < D; e++) o[e] += exp(sc[j] - m) * vv[j][e];
    }
    /* row 0 gets the partial; row 1 only "empty" partials */
    float po[2 * D], pl[2] = {j1 > j0 ? (float)(m + log(l)) : -INFINITY, -INFINITY};
    for (int e = 0; e < D; e++) po[e] = j1 > j0 ? (float)(o[e] / l) : 0.0f, po[D + e] = NAN;
    attn_cp_merge_host(acc_o, acc_lse, 1, 2, D, 0, 2, po, ATTN_DTYPE_F32, pl);
  }
  double m = -INFINITY, l = 0, o[D] = {0};
  for (int j = 0; j < SK; j++) m = fmax(m, sc[j]);
  for (int j = 0; j < SK; j++) {
    l += exp(sc[j] - m);
    for (int e = 0; e < D; e++) o[e] += exp(sc[j] - m) * vv[j][e];
  }
  assert_true(fabs(acc_lse[0] - (m + log(l))) < 1e-5 * (1 + fabs(m)));
  for (int e = 0; e < D; e++) assert_true(fabs(acc_o[e] - o[e] / l) < 1e-5);
  assert_true(acc_lse[1] == -INFINITY);
  for (int e = 0; e < D; e++) assert_true(acc_o[D + e] == 0.0f);
}

/* AUTO: ring from 1200 FLOP per byte of a ring step. A causal step is
 * 8 Hq D c^2 FLOP over 4 Hkv c D es bytes = 2 (Hq/Hkv) c / es: for bf16 MHA
 * that is c, for 4 query heads per KV head 4c. */
static void test_auto_rule(void **state) {
  struct {
    int64_t hq, hkv, c;
    attn_cp_variant want;
  } cases[] = {
      {32, 32, 1200, ATTN_CP_RING},
      {32, 32, 1199, ATTN_CP_ALLGATHER},
      {32, 8, 300, ATTN_CP_RING},
      {32, 8, 299, ATTN_CP_ALLGATHER},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int n = 4;
    int64_t s = 2 * n * cases[i].c, l = attn_cp_shard_len(s, n, 0);
    attn_args a =
        attn_args_make(attn_tensor_bhsd(NULL, ATTN_DTYPE_BF16, 0, 1, cases[i].hq, l, 128),
                       attn_tensor_bhsd(NULL, ATTN_DTYPE_BF16, 0, 1, cases[i].hkv, l, 128),
                       attn_tensor_bhsd(NULL, ATTN_DTYPE_BF16, 0, 1, cases[i].hkv, l, 128),
                       attn_tensor_bhsd(NULL, ATTN_DTYPE_BF16, 0, 1, cases[i].hq, l, 128));
    a.causal = ATTN_CAUSAL_TOP_LEFT;
    if (attn_cp_auto(&a, s, n) != cases[i].want)
      fail_msg("Hq=%lld Hkv=%lld c=%lld: %s, expected %s", (long long)cases[i].hq,
               (long long)cases[i].hkv, (long long)cases[i].c,
               attn_cp_variant_name(attn_cp_auto(&a, s, n)), attn_cp_variant_name(cases[i].want));
    assert_int_equal(attn_cp_auto(&a, s, 1), ATTN_CP_RING); /* one rank: nothing moves */
    attn_cp_args ca = {.shard = a, .seq_len = s, .variant = ATTN_CP_ALLGATHER};
    char why[160];
    assert_int_equal(attn_cp_pick(NULL, &ca, why, sizeof why), ATTN_CP_ALLGATHER);
    assert_non_null(strstr(why, "asked for"));
  }
}

typedef struct {
  int n;
  int64_t b, hq, hkv, s, d;
  int causal;
  attn_dtype dt;
} cp_case;

/* The whole problem at once, scattered to n shards, run in-process, gathered,
 * compared with the fp64 reference (out poisoned first, every row checked). */
static void run_case(attn_ctx *ctx, const cp_case *c, attn_cp_variant variant, test_rng *rng) {
  int64_t nq = c->b * c->hq * c->s * c->d, nkv = c->b * c->hkv * c->s * c->d;
  size_t es = attn_dtype_size(c->dt);
  void *q = malloc(nq * es), *k = malloc(nkv * es), *v = malloc(nkv * es), *o = malloc(nq * es);
  float *lse = malloc(c->b * c->hq * c->s * sizeof(float));
  double *ref = malloc(nq * sizeof(double)),
         *lse_ref = malloc(c->b * c->hq * c->s * sizeof(double));
  assert_true(q && k && v && o && lse && ref && lse_ref);
  attn_args full =
      attn_args_make(attn_tensor_bhsd(q, c->dt, ATTN_DEVICE_CPU, c->b, c->hq, c->s, c->d),
                     attn_tensor_bhsd(k, c->dt, ATTN_DEVICE_CPU, c->b, c->hkv, c->s, c->d),
                     attn_tensor_bhsd(v, c->dt, ATTN_DEVICE_CPU, c->b, c->hkv, c->s, c->d),
                     attn_tensor_bhsd(o, c->dt, ATTN_DEVICE_CPU, c->b, c->hq, c->s, c->d));
  full.causal = c->causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  attn_tensor *in[3] = {&full.q, &full.k, &full.v};
  for (int t = 0; t < 3; t++)
    for (int64_t i = 0; i < attn_tensor_span(in[t]); i++)
      attn_tensor_set(in[t], 0, 0, 0, i, 2 * test_rng_normal(rng));
  assert_int_equal(attn_reference_f64(&full, ref, lse_ref), ATTN_STATUS_OK);
  memset(o, 0xff, nq * es); /* NaN in every dtype */
  for (int64_t i = 0; i < c->b * c->hq * c->s; i++) lse[i] = NAN;

  attn_args sh[8];
  void *mem[8][5];
  for (int r = 0; r < c->n; r++) {
    int64_t l = attn_cp_shard_len(c->s, c->n, r);
    for (int t = 0; t < 5; t++) mem[r][t] = malloc((size_t)(c->b * c->hq * l * c->d) * es + 4);
    sh[r] =
        attn_args_make(attn_tensor_bhsd(mem[r][0], c->dt, ATTN_DEVICE_CPU, c->b, c->hq, l, c->d),
                       attn_tensor_bhsd(mem[r][1], c->dt, ATTN_DEVICE_CPU, c->b, c->hkv, l, c->d),
                       attn_tensor_bhsd(mem[r][2], c->dt, ATTN_DEVICE_CPU, c->b, c->hkv, l, c->d),
                       attn_tensor_bhsd(mem[r][3], c->dt, ATTN_DEVICE_CPU, c->b, c->hq, l, c->d));
    sh[r].causal = full.causal;
    sh[r].lse = mem[r][4]; /* [B, Hq, L] fp32 fits in the B*Hq*L*D*es + 4 bytes */
    memset(mem[r][3], 0xff, (size_t)(c->b * c->hq * l * c->d) * es);
    assert_int_equal(attn_cp_scatter(&full.q, c->n, r, &sh[r].q), ATTN_STATUS_OK);
    assert_int_equal(attn_cp_scatter(&full.k, c->n, r, &sh[r].k), ATTN_STATUS_OK);
    assert_int_equal(attn_cp_scatter(&full.v, c->n, r, &sh[r].v), ATTN_STATUS_OK);
  }
  attn_status st = attn_cp_host_forward(ctx, variant, c->s, c->n, sh);
  if (st != ATTN_STATUS_OK) fail_msg("cp host forward: %s", attn_last_error());
  for (int r = 0; r < c->n; r++) {
    assert_int_equal(attn_cp_gather(&sh[r].out, c->n, r, &full.out), ATTN_STATUS_OK);
    attn_tensor ls = attn_tensor_bhsd(sh[r].lse, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, c->b, c->hq,
                                      sh[r].q.shape[2], 1);
    attn_tensor lf = attn_tensor_bhsd(lse, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, c->b, c->hq, c->s, 1);
    assert_int_equal(attn_cp_gather(&ls, c->n, r, &lf), ATTN_STATUS_OK);
    for (int t = 0; t < 5; t++) free(mem[r][t]);
  }
  double err = attn_rel_error(&full.out, ref), lerr = 0;
  for (int64_t i = 0; i < c->b * c->hq * c->s; i++)
    lerr = fmax(lerr, fabs(lse[i] - lse_ref[i]) / (1 + fabs(lse_ref[i])));
  if (isnan(lerr)) lerr = INFINITY;
  /* the CPU flash backend's bounds (test_backends_cpu.c): 64u for f32, 2u for
   * 16-bit storage, one u more for the partial rounded to storage before the
   * fp32 merge; lse in fp32 units as there (worst seen there 47u) */
  double tol = (c->dt == ATTN_DTYPE_F32 ? 64 : 3) * test_unit_roundoff(c->dt);
  if (!(err <= tol) || !(lerr <= 256 * 0x1p-24))
    fail_msg("cp %s n=%d B=%lld Hq=%lld Hkv=%lld S=%lld D=%lld causal=%d %s: rel err %.3g, "
             "lse err %.3g (tol %.3g, lse %.3g)",
             attn_cp_variant_name(variant), c->n, (long long)c->b, (long long)c->hq,
             (long long)c->hkv, (long long)c->s, (long long)c->d, c->causal, attn_dtype_name(c->dt),
             err, lerr, tol, 256 * 0x1p-24);
  free(q), free(k), free(v), free(o), free(lse), free(ref), free(lse_ref);
}

static void test_ring_and_allgather_match_reference(void **state) {
  attn_ctx *ctx = NULL;
  assert_int_equal(attn_ctx_create(NULL, &ctx), ATTN_STATUS_OK);
  test_rng rng = {test_seed(15)};
  const cp_case cases[] = {
      {2, 1, 2, 2, 32, 16, 1, ATTN_DTYPE_F32},  {2, 1, 2, 2, 32, 16, 0, ATTN_DTYPE_F32},
      {2, 2, 4, 2, 37, 8, 1, ATTN_DTYPE_F32},   {3, 1, 4, 1, 50, 16, 1, ATTN_DTYPE_F32},
      {3, 1, 6, 2, 43, 16, 0, ATTN_DTYPE_F32},  {4, 1, 4, 2, 61, 8, 1, ATTN_DTYPE_F32},
      {4, 1, 2, 2, 64, 32, 0, ATTN_DTYPE_F32},  {4, 1, 8, 2, 7, 16, 1, ATTN_DTYPE_F32},
      {2, 1, 4, 2, 45, 64, 1, ATTN_DTYPE_BF16}, {3, 1, 2, 1, 31, 32, 1, ATTN_DTYPE_F16},
      {1, 1, 2, 2, 21, 16, 1, ATTN_DTYPE_F32},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_case(ctx, &cases[i], ATTN_CP_RING, &rng);
    run_case(ctx, &cases[i], ATTN_CP_ALLGATHER, &rng);
  }
  run_case(ctx, &cases[2], ATTN_CP_AUTO, &rng);
  attn_ctx_destroy(ctx);
}

static void test_bad_shard_refused(void **state) {
  attn_ctx *ctx = NULL;
  assert_int_equal(attn_ctx_create(NULL, &ctx), ATTN_STATUS_OK);
  float buf[4 * 10 * 8];
  attn_args sh[2];
  for (int r = 0; r < 2; r++) {
    sh[r] = attn_args_make(attn_tensor_bhsd(buf, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 10, 8),
                           attn_tensor_bhsd(buf, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 10, 8),
                           attn_tensor_bhsd(buf, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 10, 8),
                           attn_tensor_bhsd(buf, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 10, 8));
  }
  /* S = 21 over 2 ranks: shards of 11 and 10 rows; rank 0's 10 is wrong */
  assert_int_equal(attn_cp_host_forward(ctx, ATTN_CP_RING, 21, 2, sh),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(attn_last_error(), "holds 11 rows"));
  sh[0].causal = ATTN_CAUSAL_BOTTOM_RIGHT;
  assert_int_equal(attn_cp_host_forward(ctx, ATTN_CP_RING, 20, 2, sh), ATTN_STATUS_UNSUPPORTED);
  attn_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_chunks_cover_sequence),
      cmocka_unit_test(test_layout_scatter_gather_round_trip),
      cmocka_unit_test(test_block_rule),
      cmocka_unit_test(test_plans_cover_each_pair_once),
      cmocka_unit_test(test_merge_exact),
      cmocka_unit_test(test_auto_rule),
      cmocka_unit_test(test_ring_and_allgather_match_reference),
      cmocka_unit_test(test_bad_shard_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
