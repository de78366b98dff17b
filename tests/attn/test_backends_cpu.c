/* Every CPU backend in the table (read through attn_backend_list, never a
 * hard-coded list) against the fp64 reference: a list of edge problems, then
 * 200 random problems with fresh random inputs each. Outputs are poisoned
 * before every run and checked fully written, nothing outside written, the
 * error ||out-ref||/||ref|| within k unit roundoffs of the dtype (bound_k).
 *
 * Fully masked rows: math and flash (and any backend not listed in
 * gives_nan_on_masked_rows) give 0 and lse -inf; naive and naive_inplace
 * give NaN (their plain softmax computes exp(-inf - -inf)), which is what
 * naive_cpu.c documents; the test asserts exactly that. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"

enum { RANDOM_PROBLEMS = 200, MAX_BACKENDS = 32 };

static uint64_t g_seed;

/* The naive composition's plain softmax gives NaN on a fully masked row. */
static int gives_nan_on_masked_rows(const char *name) {
  return strcmp(name, "naive") == 0 || strcmp(name, "naive_inplace") == 0;
}

/* The bound on ||out - ref|| / ||ref||, in unit roundoffs u of the dtype. */
static double bound_k(attn_dtype dt) {
  /* f16/bf16 storage: the CPU computes in fp32 and rounds out once, which
   * costs at most u per element (u/sqrt(3) on average); 2u leaves room for
   * the fp32 part, itself below 2^-13 u. */
  if (dt != ATTN_DTYPE_F32) return 2;
  /* f32: sums over up to 256 keys and 256 dims plus exp2's few ulp grow
   * like sqrt(n) u on average; 64u is that for n = 4096 terms. */
  return 64;
}

/* The bound on |lse - ref| / (1 + |ref|), in fp32 unit roundoffs: lse is
 * fp32 computed in fp32 whatever the dtype, from a row max that is a score
 * summed over up to 256 products (error ~ sqrt(D) u sum|q k| scale); worst
 * seen over seeds 1, 2 and the default: 47u. */
#define LSE_K 256

static const problem_spec *edge_problems(size_t *n) {
  /* dtype, B, Hq, Hkv, Sq, Sk, D, causal, mask, mask dtype, b1, h1, stride0,
   * masked rows, layout, lse, scale */
  static const problem_spec e[] = {
      {ATTN_DTYPE_F32, 1, 1, 1, 1, 1, 1, ATTN_CAUSAL_NONE, 0, 0, 0, 0, 0, 0, LAYOUT_BHSD, 1, 0},
      {ATTN_DTYPE_F32, 1, 2, 1, 130, 130, 256, ATTN_CAUSAL_TOP_LEFT, 0, 0, 0, 0, 0, 0, LAYOUT_BHSD,
       1, 0},
      {ATTN_DTYPE_F32, 2, 2, 2, 64, 64, 64, ATTN_CAUSAL_NONE, 0, 0, 0, 0, 0, 0, LAYOUT_BHSD, 1, 0},
      {ATTN_DTYPE_F32, 1, 2, 2, 128, 128, 64, ATTN_CAUSAL_TOP_LEFT, 0, 0, 0, 0, 0, 0, LAYOUT_BHSD,
       1, 0},
      /* decoding: one query against a long KV cache */
      {ATTN_DTYPE_BF16, 2, 4, 2, 1, 200, 64, ATTN_CAUSAL_BOTTOM_RIGHT, 0, 0, 0, 0, 0, 0,
       LAYOUT_BSHD, 1, 0},
      /* Sq > Sk bottom-right: the first 110 query rows see no key */
      {ATTN_DTYPE_F32, 1, 2, 1, 150, 40, 32, ATTN_CAUSAL_BOTTOM_RIGHT, 0, 0, 0, 0, 0, 0,
       LAYOUT_BHSD, 1, 0},
      {ATTN_DTYPE_F16, 1, 3, 3, 70, 130, 33, ATTN_CAUSAL_TOP_LEFT, 0, 0, 0, 0, 0, 0,
       LAYOUT_BHSD_PADDED, 1, 0},
      {ATTN_DTYPE_F32, 1, 3, 3, 130, 70, 33, ATTN_CAUSAL_TOP_LEFT, 0, 0, 0, 0, 0, 0, LAYOUT_BHDS, 1,
       0.3},
      {ATTN_DTYPE_BF16, 1, 8, 2, 65, 65, 128, ATTN_CAUSAL_NONE, 0, 0, 0, 0, 0, 0, LAYOUT_BSHD, 0,
       0},
      {ATTN_DTYPE_F16, 2, 4, 2, 77, 91, 48, ATTN_CAUSAL_NONE, ATTN_MASK_BOOL, ATTN_DTYPE_BOOL, 1, 1,
       0, 1, LAYOUT_BHSD, 1, 0},
      {ATTN_DTYPE_F32, 2, 4, 4, 77, 91, 48, ATTN_CAUSAL_BOTTOM_RIGHT, ATTN_MASK_BOOL,
       ATTN_DTYPE_BOOL, 1, 0, 1, 1, LAYOUT_BSHD, 1, 0},
      {ATTN_DTYPE_BF16, 2, 2, 1, 66, 129, 64, ATTN_CAUSAL_NONE, ATTN_MASK_ADDITIVE, ATTN_DTYPE_F32,
       0, 1, 0, 1, LAYOUT_BHSD, 1, 0},
      {ATTN_DTYPE_F32, 2, 2, 1, 66, 129, 64, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_ADDITIVE,
       ATTN_DTYPE_BF16, 1, 0, 1, 0, LAYOUT_BHSD, 1, 0},
      {ATTN_DTYPE_F16, 1, 2, 1, 40, 70, 255, ATTN_CAUSAL_NONE, ATTN_MASK_ADDITIVE, ATTN_DTYPE_F16,
       0, 0, 0, 0, LAYOUT_BSHD, 1, 0.5},
      {ATTN_DTYPE_F32, 1, 1, 1, 200, 3, 7, ATTN_CAUSAL_TOP_LEFT, 0, 0, 0, 0, 0, 0, LAYOUT_BHSD, 1,
       0},
  };
  *n = sizeof e / sizeof e[0];
  return e;
}

typedef struct {
  int runs;
  double worst[ATTN_DTYPE_COUNT];
  double worst_lse; /* max |lse - ref| / (1 + |ref|), all dtypes */
  int64_t masked_rows;
} sweep_stats;

/* One problem on one backend; fails the test (naming both values) on a
 * mismatch. */
static void run_one(const attn_backend_info *bk, const problem_spec *s, test_rng *r,
                    sweep_stats *st, int index) {
  char desc[512];
  test_problem p;
  problem_describe(s, desc, sizeof desc);
  if (problem_make(&p, s, r)) fail_msg("could not build problem %d: %s", index, desc);
  char why[512] = "";
  attn_status ws = attn_why_not(test_engine(), bk->backend, &p.args, why, sizeof why);
  if (ws != ATTN_STATUS_OK) fail_msg("%s refused problem %d (%s): %s", bk->name, index, desc, why);
  problem_poison(&p);
  attn_status fs = attn_forward(test_engine(), bk->backend, &p.args);
  if (fs != ATTN_STATUS_OK)
    fail_msg("%s failed on problem %d (%s): %s", bk->name, index, desc, attn_last_error());
  double tol = bound_k(s->dtype) * test_unit_roundoff(s->dtype);
  check_result c = problem_check(&p, gives_nan_on_masked_rows(bk->name), tol, LSE_K * 0x1p-24);
  if (!c.ok)
    fail_msg("%s, problem %d (%s), seed %llu: %s", bk->name, index, desc,
             (unsigned long long)g_seed, c.why);
  st->runs++;
  st->masked_rows += c.masked_rows;
  if (c.rel_err > st->worst[s->dtype]) st->worst[s->dtype] = c.rel_err;
  if (c.lse_err > st->worst_lse) st->worst_lse = c.lse_err;
  problem_free(&p);
}

static void test_backend(void **state) {
  const attn_backend_info *bk = *state;
  /* each backend sees the same problems, but fresh inputs per problem */
  test_rng r = {g_seed};
  sweep_stats st = {0};
  size_t n_edge;
  const problem_spec *edges = edge_problems(&n_edge);
  for (size_t i = 0; i < n_edge; i++) run_one(bk, &edges[i], &r, &st, -(int)i - 1);
  for (int i = 0; i < RANDOM_PROBLEMS; i++) {
    problem_spec s = problem_random(&r);
    run_one(bk, &s, &r, &st, i);
  }
  print_message("%-14s %d problems (%zu edge + %d random), %lld fully masked rows; worst "
                "rel err f32 %.2e (%.1fu) f16 %.2e (%.2fu) bf16 %.2e (%.2fu)\n",
                bk->name, st.runs, n_edge, RANDOM_PROBLEMS, (long long)st.masked_rows,
                st.worst[ATTN_DTYPE_F32], st.worst[ATTN_DTYPE_F32] / 0x1p-24,
                st.worst[ATTN_DTYPE_F16], st.worst[ATTN_DTYPE_F16] / 0x1p-11,
                st.worst[ATTN_DTYPE_BF16], st.worst[ATTN_DTYPE_BF16] / 0x1p-8);
  print_message("%-14s worst lse err %.2e (%.1f fp32 u)\n", bk->name, st.worst_lse,
                st.worst_lse / 0x1p-24);
  assert_int_equal(st.runs, (int)n_edge + RANDOM_PROBLEMS);
  assert_true(st.masked_rows > 0); /* the masked-row convention was exercised */
}

/* Whether name is in the comma-separated list (a NULL list takes all). */
static int listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
  return list == NULL;
}

int main(void) {
  static attn_backend_info all[MAX_BACKENDS], cpu[MAX_BACKENDS];
  static struct CMUnitTest tests[MAX_BACKENDS];
  size_t n = attn_backend_list(all, MAX_BACKENDS), n_cpu = 0;
  g_seed = test_seed(20240611);
  printf(
      "seed %llu (set ATTNPROF_TEST_SEED to change); cpu_isa %s\n", (unsigned long long)g_seed,
      attn_ctx_options(test_engine())->cpu_isa ? attn_ctx_options(test_engine())->cpu_isa : "auto");
  /* ATTNPROF_TEST_BACKENDS=flash,math narrows the sweep (ctest reruns flash
   * with ATTNPROF_CPU_ISA capping its kernel clone) */
  const char *only = getenv("ATTNPROF_TEST_BACKENDS");
  for (size_t i = 0; i < n && i < MAX_BACKENDS; i++)
    if (all[i].device_kind == ATTN_DEVICE_CPU && listed(only, all[i].name)) {
      cpu[n_cpu] = all[i];
      tests[n_cpu] = (struct CMUnitTest){cpu[n_cpu].name, test_backend, NULL, NULL, &cpu[n_cpu]};
      n_cpu++;
    }
  if (n_cpu == 0) {
    fprintf(stderr, "no CPU backend in the table%s%s\n", only ? " named in " : "",
            only ? only : "");
    return 1;
  }
  return _cmocka_run_group_tests("cpu_backends", tests, n_cpu, NULL, NULL);
}
