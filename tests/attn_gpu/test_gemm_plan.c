/* The batched-GEMM plans of the S x S baselines (gemm_plan.h), checked on
 * the host: how strided [B, H, S, D] tensors become cuBLAS strided-batched
 * calls (one for BHSD, one per batch entry for BSHD, GQA heads folded into
 * n when evenly spaced) and which layouts are refused with the reason. No
 * GPU needed: plans read shapes and strides only. */
#include <stdio.h>
#include <string.h>

#include "attn/cuda/baselines/gemm_plan.h"

static int failures;

#define CHECK_EQ(got, want)                                                               \
  do {                                                                                    \
    long long g_ = (long long)(got), w_ = (long long)(want);                              \
    if (g_ != w_) {                                                                       \
      failures++;                                                                         \
      printf("FAIL %s:%d: %s = %lld, expected %lld\n", __FILE__, __LINE__, #got, g_, w_); \
    }                                                                                     \
  } while (0)

static char buf[64];

/* A [B, H, S, D] bf16 tensor: BHSD (bshd = 0) or [B, S, H, D] memory. */
static attn_tensor t4(int64_t b, int64_t h, int64_t s, int64_t d, int bshd) {
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_BF16, 0, b, h, s, d);
  if (bshd) t.strides[0] = s * h * d, t.strides[1] = d, t.strides[2] = h * d;
  return t;
}

static int64_t batch_of(const attn_gemm *g) {
  return g->batch_dim < 0 ? 1 : g->count[g->batch_dim];
}

static void test_bhsd(void) {
  attn_gemm g;
  char why[256] = "";
  attn_tensor q = t4(2, 4, 128, 64, 0), k = t4(2, 4, 96, 64, 0);
  CHECK_EQ(attn_gemm_plan_qk(&q, &k, buf, ATTN_DTYPE_BF16, 1.0f, &g, why, sizeof why), 0);
  CHECK_EQ(g.m, 96);
  CHECK_EQ(g.n, 128);
  CHECK_EQ(g.k, 64);
  CHECK_EQ(g.a.ld, 64);
  CHECK_EQ(g.b.ld, 64);
  CHECK_EQ(g.c.ld, 96);
  CHECK_EQ(attn_gemm_calls(&g), 1);
  CHECK_EQ(batch_of(&g), 8);
  CHECK_EQ(g.a.st[g.batch_dim], 96 * 64);
  CHECK_EQ(g.b.st[g.batch_dim], 128 * 64);
  CHECK_EQ(g.c.st[g.batch_dim], 128 * 96);
  CHECK_EQ(attn_gemm_plan_pv(buf, &k, &q, &g, why, sizeof why), 0);
  CHECK_EQ(g.m, 64);
  CHECK_EQ(g.n, 128);
  CHECK_EQ(g.k, 96);
  CHECK_EQ(g.a.ld, 64);
  CHECK_EQ(g.b.ld, 96);
  CHECK_EQ(g.c.ld, 64);
  CHECK_EQ(attn_gemm_calls(&g), 1);
  CHECK_EQ(batch_of(&g), 8);
}

/* [B, S, H, D]: heads are D apart, rows H*D apart; B and H do not merge, so
 * the larger (H) is cuBLAS's batch and B a host loop. */
static void test_bshd(void) {
  attn_gemm g;
  char why[256] = "";
  attn_tensor q = t4(2, 4, 128, 64, 1);
  CHECK_EQ(attn_gemm_plan_qk(&q, &q, buf, ATTN_DTYPE_BF16, 1.0f, &g, why, sizeof why), 0);
  CHECK_EQ(g.a.ld, 4 * 64);
  CHECK_EQ(g.b.ld, 4 * 64);
  CHECK_EQ(attn_gemm_calls(&g), 2);
  CHECK_EQ(batch_of(&g), 4);
  CHECK_EQ(g.b.st[g.batch_dim], 64);
  CHECK_EQ(g.c.st[g.batch_dim], 128 * 128);
}

/* GQA, 4 query heads per KV head: BHSD folds them into n (one GEMM of 4*Sq
 * rows per KV head); BSHD cannot, and batches over the group instead, with
 * K's stride 0 across it. */
static void test_gqa(void) {
  attn_gemm g;
  char why[256] = "";
  attn_tensor q = t4(2, 8, 128, 64, 0), k = t4(2, 2, 128, 64, 0);
  CHECK_EQ(attn_gemm_plan_qk(&q, &k, buf, ATTN_DTYPE_BF16, 1.0f, &g, why, sizeof why), 0);
  CHECK_EQ(g.n, 4 * 128);
  CHECK_EQ(attn_gemm_calls(&g), 1);
  CHECK_EQ(batch_of(&g), 4);
  CHECK_EQ(g.c.st[g.batch_dim], 4 * 128 * 128);
  q = t4(2, 8, 128, 64, 1), k = t4(2, 2, 128, 64, 1);
  CHECK_EQ(attn_gemm_plan_qk(&q, &k, buf, ATTN_DTYPE_BF16, 1.0f, &g, why, sizeof why), 0);
  CHECK_EQ(g.n, 128);
  CHECK_EQ(batch_of(&g), 4);
  CHECK_EQ(attn_gemm_calls(&g), 4);
  CHECK_EQ(g.a.st[g.batch_dim], 0);
  CHECK_EQ(g.b.st[g.batch_dim], 64);
  /* Decoding: Sq = 1, all 8 query heads of the one KV head in one GEMM. */
  q = t4(3, 8, 1, 64, 0), k = t4(3, 1, 500, 64, 0);
  CHECK_EQ(attn_gemm_plan_qk(&q, &k, buf, ATTN_DTYPE_BF16, 1.0f, &g, why, sizeof why), 0);
  CHECK_EQ(g.n, 8);
  CHECK_EQ(g.m, 500);
  CHECK_EQ(batch_of(&g), 3);
  CHECK_EQ(attn_gemm_calls(&g), 1);
}

static void test_refusals(void) {
  attn_gemm g;
  char why[256] = "";
  attn_tensor q = t4(1, 2, 16, 8, 0);
  q.strides[3] = 2;
  CHECK_EQ(attn_gemm_plan_qk(&q, &q, buf, ATTN_DTYPE_BF16, 1.0f, &g, why, sizeof why),
           ATTN_STATUS_UNSUPPORTED);
  if (!strstr(why, "stride 2 along D")) failures++, printf("FAIL: reason '%s'\n", why);
  attn_tensor o = t4(1, 2, 16, 8, 0);
  o.strides[2] = 4; /* rows 4 apart but 8 long: they overlap */
  CHECK_EQ(attn_gemm_plan_pv(buf, &q, &o, &g, why, sizeof why), ATTN_STATUS_UNSUPPORTED);
  CHECK_EQ(attn_gemm_plan_pv(buf, &o, &o, &g, why, sizeof why), ATTN_STATUS_UNSUPPORTED);
  if (!strstr(why, "overlap")) failures++, printf("FAIL: reason '%s'\n", why);
}

int main(void) {
  test_bhsd();
  test_bshd();
  test_gqa();
  test_refusals();
  printf("%s (%d failures)\n", failures ? "FAILED" : "all passed", failures);
  return failures ? 1 : 0;
}
