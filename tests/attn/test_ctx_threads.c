/* Two engine handles on two threads at once, on the CPU: each thread makes
 * its own handle (attn_ctx_create) and runs naive, math and flash for a few
 * rounds over its own shapes (the two threads share none), every output and
 * lse poisoned first and checked against the fp64 reference. The threads
 * start together behind a barrier, so their forwards overlap; a handle whose
 * state leaked into the other's (a plan, a workspace, a launch record)
 * gives a wrong or unwritten output there, and the test fails.
 * Bound: ||out - ref|| / ||ref|| <= k u, u the dtype's unit roundoff
 * (bound_k), lse within LSE_K fp32 unit roundoffs. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"

enum { ROUNDS = 3, N_SHAPES = 3, N_BACKENDS = 3 };

static const attn_backend backends[N_BACKENDS] = {ATTN_BACKEND_NAIVE, ATTN_BACKEND_MATH,
                                                  ATTN_BACKEND_FLASH};

static double bound_k(attn_dtype dt) {
  /* 16-bit storage: fp32 compute, one rounding of out (<= u per element). */
  if (dt != ATTN_DTYPE_F32) return 2;
  /* f32: fp32 sums over <= 256 keys and dims grow like sqrt(n) u. */
  return 64;
}

/* lse is fp32 whatever the dtype (as test_ctx_reuse). */
#define LSE_K 256

static problem_spec spec(attn_dtype dt, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t sk,
                         int64_t d, attn_causal causal, attn_mask_kind mask, test_layout layout) {
  problem_spec s;
  memset(&s, 0, sizeof s);
  s.dtype = dt, s.b = b, s.hq = hq, s.hkv = hkv, s.sq = sq, s.sk = sk, s.d = d;
  s.causal = causal, s.mask = mask, s.layout = layout, s.lse = 1;
  s.mask_dtype = mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : ATTN_DTYPE_F32;
  return s;
}

/* Each thread's shapes: no shape, dtype or layout of one is the other's. */
static problem_spec shape_of(int thread, int i) {
  const problem_spec a[N_SHAPES] = {
      spec(ATTN_DTYPE_BF16, 2, 4, 2, 40, 70, 64, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_NONE, LAYOUT_BHSD),
      spec(ATTN_DTYPE_F32, 1, 3, 1, 66, 66, 32, ATTN_CAUSAL_NONE, ATTN_MASK_BOOL, LAYOUT_BSHD),
      spec(ATTN_DTYPE_F16, 1, 2, 2, 17, 129, 128, ATTN_CAUSAL_BOTTOM_RIGHT, ATTN_MASK_NONE,
           LAYOUT_BHSD_PADDED),
  };
  const problem_spec b[N_SHAPES] = {
      spec(ATTN_DTYPE_F16, 2, 2, 2, 33, 95, 48, ATTN_CAUSAL_NONE, ATTN_MASK_ADDITIVE, LAYOUT_BSHD),
      spec(ATTN_DTYPE_BF16, 1, 4, 4, 64, 64, 96, ATTN_CAUSAL_TOP_LEFT, ATTN_MASK_NONE, LAYOUT_BHDS),
      spec(ATTN_DTYPE_F32, 1, 1, 1, 1, 200, 256, ATTN_CAUSAL_BOTTOM_RIGHT, ATTN_MASK_NONE,
           LAYOUT_BHSD),
  };
  return thread ? b[i] : a[i];
}

typedef struct {
  int thread;
  attn_ctx *ctx;
  pthread_barrier_t *start;
  int passed;
  char failure[900];
} worker;

/* One poisoned, checked forward; 1 when right, else why in buf. */
static int run_checked(attn_ctx *ctx, attn_backend b, test_problem *p, char *buf, size_t len) {
  problem_poison(p);
  attn_status st = attn_forward(ctx, b, &p->args);
  if (st != ATTN_STATUS_OK) {
    snprintf(buf, len, "attn_forward: %s", attn_last_error());
    return 0;
  }
  int nan_rows = b == ATTN_BACKEND_NAIVE; /* naive's fully masked row is NaN */
  double tol = bound_k(p->spec.dtype) * test_unit_roundoff(p->spec.dtype);
  check_result c = problem_check(p, nan_rows, tol, LSE_K * 0x1p-24);
  if (!c.ok) snprintf(buf, len, "%s", c.why);
  return c.ok;
}

/* ROUNDS rounds over the thread's shapes and the three backends; the first
 * failure is kept for the main thread to report. */
static void *work(void *arg) {
  worker *w = arg;
  test_problem p[N_SHAPES];
  int made = 0;
  for (; made < N_SHAPES; made++) {
    problem_spec s = shape_of(w->thread, made);
    test_rng r = {test_seed(29) + 1000 * (uint64_t)w->thread + (uint64_t)made};
    if (problem_make(&p[made], &s, &r)) {
      snprintf(w->failure, sizeof w->failure, "could not build shape %d", made);
      break;
    }
  }
  pthread_barrier_wait(w->start); /* both threads reach here, whatever happened */
  for (int round = 0; round < ROUNDS && !w->failure[0]; round++)
    for (int i = 0; i < N_SHAPES && !w->failure[0]; i++)
      for (int k = 0; k < N_BACKENDS && !w->failure[0]; k++) {
        char why[600], desc[256];
        if (run_checked(w->ctx, backends[k], &p[i], why, sizeof why)) {
          w->passed++;
          continue;
        }
        problem_describe(&p[i].spec, desc, sizeof desc);
        snprintf(w->failure, sizeof w->failure, "%s, round %d, shape %d (%.250s): %.500s",
                 attn_backend_name(backends[k]), round, i, desc, why);
      }
  for (int i = 0; i < made; i++) problem_free(&p[i]);
  return NULL;
}

static void test_two_handles_two_threads(void **state) {
  (void)state;
  attn_ctx_opts o = attn_ctx_opts_default();
  assert_int_equal(attn_ctx_opts_from_env(&o), ATTN_STATUS_OK);
  o.cpu_threads = 1; /* two threads on two cores */
  pthread_barrier_t start;
  assert_int_equal(pthread_barrier_init(&start, NULL, 2), 0);
  worker w[2];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 2; i++) {
    w[i].thread = i, w[i].start = &start;
    assert_int_equal(attn_ctx_create(&o, &w[i].ctx), ATTN_STATUS_OK);
  }
  pthread_t t[2];
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < 2; i++) attn_ctx_destroy(w[i].ctx);
  for (int i = 0; i < 2; i++)
    if (w[i].failure[0]) fail_msg("thread %d: %s", i, w[i].failure);
  const int want = ROUNDS * N_SHAPES * N_BACKENDS;
  for (int i = 0; i < 2; i++) assert_int_equal(w[i].passed, want);
  print_message("two handles, two threads: %d + %d forwards (naive, math, flash) matched the "
                "fp64 reference\n",
                w[0].passed, w[1].passed);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_handles_two_threads)};
  return cmocka_run_group_tests_name("ctx_threads", tests, NULL, NULL);
}
