/* One engine handle across calls that change what a cache could wrongly
 * keep, and handles on several threads, on the CPU (every CPU backend and
 * AUTO). Each call's output is poisoned first and checked against the fp64
 * reference, so an answer kept from an earlier call fails:
 *  - the same problem in new buffers (pointers change, contents equal);
 *  - new contents in the same buffers;
 *  - the same shape with other strides (BSHD, padded rows, D-major);
 *  - other shapes, dtypes, causal rules and masks, then the first problems
 *    again;
 *  - two threads at once, each with its own handle, each checking its own
 *    outputs; then one handle made with locked = 1 shared by two threads.
 * Bound: ||out - ref|| / ||ref|| <= k u, u the dtype's unit roundoff (see
 * bound_k). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"

enum { MAX_BACKENDS = 32, THREAD_PROBLEMS = 24 };

static double bound_k(attn_dtype dt) {
  /* 16-bit storage: fp32 compute, one rounding of out (<= u per element). */
  if (dt != ATTN_DTYPE_F32) return 2;
  /* f32: fp32 sums over <= 256 keys and dims grow like sqrt(n) u. */
  return 64;
}

/* lse is fp32 computed in fp32 whatever the dtype: the row max is a score
 * summed over up to 256 products; seen up to 47 fp32 u (test_backends_cpu). */
#define LSE_K 256

static int nan_rows(attn_backend b) {
  return b == ATTN_BACKEND_NAIVE || b == ATTN_BACKEND_NAIVE_INPLACE;
}

static problem_spec make_spec(attn_dtype dt, int64_t b, int64_t hq, int64_t hkv, int64_t sq,
                              int64_t sk, int64_t d, attn_causal causal, attn_mask_kind mask,
                              test_layout layout) {
  problem_spec s;
  memset(&s, 0, sizeof s);
  s.dtype = dt, s.b = b, s.hq = hq, s.hkv = hkv, s.sq = sq, s.sk = sk, s.d = d;
  s.causal = causal, s.mask = mask, s.layout = layout, s.lse = 1;
  s.mask_dtype = mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : ATTN_DTYPE_F32;
  return s;
}

/* New random q, k, v in the same buffers, and the reference again. */
static int refill(test_problem *p, test_rng *r) {
  attn_tensor *t[3] = {&p->args.q, &p->args.k, &p->args.v};
  for (int i = 0; i < 3; i++)
    for (int64_t b = 0; b < t[i]->shape[0]; b++)
      for (int64_t h = 0; h < t[i]->shape[1]; h++)
        for (int64_t s = 0; s < t[i]->shape[2]; s++)
          for (int64_t d = 0; d < t[i]->shape[3]; d++)
            attn_tensor_set(t[i], b, h, s, d, test_rng_normal(r));
  return attn_reference_f64(&p->args, p->ref, p->lse_ref) == ATTN_STATUS_OK ? 0 : -1;
}

/* One poisoned, checked call; 1 when right, else why in buf. */
static int run_checked(attn_ctx *ctx, attn_backend b, test_problem *p, char *buf, size_t len) {
  problem_poison(p);
  attn_status st = attn_forward(ctx, b, &p->args);
  if (st != ATTN_STATUS_OK) {
    snprintf(buf, len, "attn_forward: %s", attn_last_error());
    return 0;
  }
  double tol = bound_k(p->spec.dtype) * test_unit_roundoff(p->spec.dtype);
  check_result c = problem_check(p, nan_rows(b), tol, LSE_K * 0x1p-24);
  if (!c.ok) snprintf(buf, len, "%s", c.why);
  return c.ok;
}

enum { N_PROBLEMS = 8 };

/* The problems of the sequence: 0 and 1 equal but in separate buffers, 2
 * and 3 the same shape as 0 in other layouts, the rest other shapes. */
static void make_problems(test_problem *p, uint64_t seed) {
  const problem_spec s[N_PROBLEMS] = {
      make_spec(ATTN_DTYPE_BF16, 2, 4, 2, 40, 70, 64, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_NONE,
                LAYOUT_BHSD),
      make_spec(ATTN_DTYPE_BF16, 2, 4, 2, 40, 70, 64, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_NONE,
                LAYOUT_BHSD),
      make_spec(ATTN_DTYPE_BF16, 2, 4, 2, 40, 70, 64, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_NONE,
                LAYOUT_BSHD),
      make_spec(ATTN_DTYPE_BF16, 2, 4, 2, 40, 70, 64, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_NONE,
                LAYOUT_BHDS),
      make_spec(ATTN_DTYPE_BF16, 1, 2, 2, 129, 17, 128, ATTN_CAUSAL_BOTTOM_RIGHT, ATTN_MASK_NONE,
                LAYOUT_BHSD_PADDED),
      make_spec(ATTN_DTYPE_F16, 1, 3, 1, 66, 66, 16, ATTN_CAUSAL_NONE, ATTN_MASK_BOOL, LAYOUT_BHSD),
      make_spec(ATTN_DTYPE_F32, 2, 2, 2, 33, 95, 48, ATTN_CAUSAL_NONE, ATTN_MASK_ADDITIVE,
                LAYOUT_BSHD),
      make_spec(ATTN_DTYPE_F32, 1, 1, 1, 1, 200, 256, ATTN_CAUSAL_BOTTOM_RIGHT, ATTN_MASK_NONE,
                LAYOUT_BHSD),
  };
  for (int i = 0; i < N_PROBLEMS; i++) {
    test_rng r = {seed + (uint64_t)(i == 1 ? 0 : i)}; /* 1: the contents of 0 */
    if (problem_make(&p[i], &s[i], &r)) fail_msg("could not build problem %d", i);
  }
  if (memcmp(p[0].mem[0], p[1].mem[0], p[0].mem_bytes[0]) || p[0].mem[0] == p[1].mem[0])
    fail_msg("problems 0 and 1 should hold the same q in different buffers");
}

static void test_one_handle_many_calls(void **state) {
  const attn_backend_info *bk = *state;
  attn_ctx *ctx = test_engine_new(NULL);
  test_problem p[N_PROBLEMS];
  test_rng fresh = {test_seed(77) ^ 0x5eed};
  make_problems(p, test_seed(77));
  /* -1: refill problem 0's buffers with new contents before the call */
  static const int order[] = {0, 1, 0, -1, 1, 2, 3, 0, 4, 5, 6, 7, 0, -1, 3, 4, 1, 7, 6, 5, 2};
  char why[600];
  int calls = 0;
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    int k = order[i];
    if (k < 0) {
      if (refill(&p[0], &fresh)) fail_msg("could not refill problem 0");
      k = 0;
    }
    if (!run_checked(ctx, bk->backend, &p[k], why, sizeof why)) {
      char desc[512];
      problem_describe(&p[k].spec, desc, sizeof desc);
      fail_msg("%s, call %zu (problem %d: %s): %s", bk->name, i + 1, k, desc, why);
    }
    calls++;
  }
  print_message("%-14s %d calls on one handle, all matched the reference\n", bk->name, calls);
  for (int i = 0; i < N_PROBLEMS; i++) problem_free(&p[i]);
  attn_ctx_destroy(ctx);
}

/* ---- threads ---------------------------------------------------------------- */

typedef struct {
  attn_ctx *ctx;
  uint64_t seed;
  int passed;
  char failure[700];
} worker;

/* THREAD_PROBLEMS random problems on flash, math and AUTO in turn, each
 * checked; the first failure is kept for the main thread to report. */
static void *work(void *arg) {
  worker *w = arg;
  static const attn_backend bs[] = {ATTN_BACKEND_FLASH, ATTN_BACKEND_MATH, ATTN_BACKEND_AUTO};
  test_rng r = {w->seed};
  for (int i = 0; i < THREAD_PROBLEMS; i++) {
    problem_spec s = problem_random(&r);
    test_problem p;
    char why[600], desc[512];
    if (problem_make(&p, &s, &r)) {
      snprintf(w->failure, sizeof w->failure, "could not build problem %d", i);
      return NULL;
    }
    attn_backend b = bs[i % 3];
    int ok = run_checked(w->ctx, b, &p, why, sizeof why);
    problem_free(&p);
    if (!ok) {
      problem_describe(&s, desc, sizeof desc);
      snprintf(w->failure, sizeof w->failure, "%s, problem %d (%.300s): %.300s",
               attn_backend_name(b), i, desc, why);
      return NULL;
    }
    w->passed++;
  }
  return NULL;
}

static void run_two(worker *w) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
  for (int i = 0; i < 2; i++) {
    if (w[i].failure[0]) fail_msg("thread %d: %s", i, w[i].failure);
    assert_int_equal(w[i].passed, THREAD_PROBLEMS);
  }
}

static void test_two_handles_two_threads(void **state) {
  (void)state;
  attn_ctx_opts o = attn_ctx_opts_default();
  assert_int_equal(attn_ctx_opts_from_env(&o), ATTN_STATUS_OK);
  o.cpu_threads = 1; /* two threads on two cores */
  worker w[2] = {{test_engine_new(&o), test_seed(11), 0, ""},
                 {test_engine_new(&o), test_seed(11) + 1000, 0, ""}};
  run_two(w);
  print_message("two handles, two threads: %d + %d problems matched\n", w[0].passed, w[1].passed);
  attn_ctx_destroy(w[0].ctx);
  attn_ctx_destroy(w[1].ctx);
}

static void test_locked_handle_shared(void **state) {
  (void)state;
  attn_ctx_opts o = attn_ctx_opts_default();
  assert_int_equal(attn_ctx_opts_from_env(&o), ATTN_STATUS_OK);
  o.cpu_threads = 1, o.locked = 1;
  attn_ctx *ctx = test_engine_new(&o);
  worker w[2] = {{ctx, test_seed(12), 0, ""}, {ctx, test_seed(12) + 1000, 0, ""}};
  run_two(w);
  print_message("one locked handle, two threads: %d + %d problems matched\n", w[0].passed,
                w[1].passed);
  attn_ctx_destroy(ctx);
}

int main(void) {
  static attn_backend_info all[MAX_BACKENDS], cpu[MAX_BACKENDS + 1];
  static struct CMUnitTest tests[MAX_BACKENDS + 3];
  size_t n = attn_backend_list(all, MAX_BACKENDS), k = 0;
  for (size_t i = 0; i < n && i < MAX_BACKENDS; i++)
    if (all[i].device_kind == ATTN_DEVICE_CPU) cpu[k] = all[i], k++;
  if (k == 0) return fprintf(stderr, "no CPU backend in the table\n"), 1;
  cpu[k] = (attn_backend_info){ATTN_BACKEND_AUTO, "auto", "auto", ATTN_DEVICE_CPU, ""};
  for (size_t i = 0; i <= k; i++)
    tests[i] = (struct CMUnitTest){cpu[i].name, test_one_handle_many_calls, NULL, NULL, &cpu[i]};
  tests[k + 1] = (struct CMUnitTest)cmocka_unit_test(test_two_handles_two_threads);
  tests[k + 2] = (struct CMUnitTest)cmocka_unit_test(test_locked_handle_shared);
  return _cmocka_run_group_tests("ctx_reuse", tests, k + 3, NULL, NULL);
}
