/* Bad input through the public API, on every CPU backend of the table and
 * on AUTO: shape mismatches, D = 0, negative and absurd sizes, Hq % Hkv != 0,
 * wrong masks, an S x S buffer that cannot fit (naive and math refuse with
 * the bytes, before allocating), and NaN/Inf inputs (propagated as the fp64
 * reference propagates them, element by element, without a crash). Every
 * refusal must be INVALID_ARGUMENT, UNSUPPORTED or OUT_OF_MEMORY with a
 * non-empty one-line attn_last_error(). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"

enum { MAX_BACKENDS = 32 };

static attn_backend_info g_cpu[MAX_BACKENDS];
static size_t g_n_cpu;

/* A small valid f32 problem: B=1, H=2, S=8, D=4, contiguous. */
typedef struct {
  float q[64], k[64], v[64], out[64];
  unsigned char mask[128];
  attn_args args;
} small_problem;

static void small_init(small_problem *p) {
  for (int i = 0; i < 64; i++) p->q[i] = p->k[i] = p->v[i] = (float)(i % 5) * 0.25f;
  memset(p->mask, 1, sizeof p->mask);
  p->args = attn_args_make(attn_tensor_bhsd(p->q, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 2, 8, 4),
                           attn_tensor_bhsd(p->k, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 2, 8, 4),
                           attn_tensor_bhsd(p->v, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 2, 8, 4),
                           attn_tensor_bhsd(p->out, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 2, 8, 4));
}

static int allowed_error(attn_status s) {
  return s == ATTN_STATUS_INVALID_ARGUMENT || s == ATTN_STATUS_UNSUPPORTED ||
         s == ATTN_STATUS_OUT_OF_MEMORY;
}

static void assert_one_line(const char *what, const char *msg) {
  if (!msg || !msg[0]) fail_msg("%s: the error message is empty", what);
  if (strchr(msg, '\n')) fail_msg("%s: the error message spans lines: \"%s\"", what, msg);
}

/* attn_forward refuses on `backend`, with an allowed status (want, if not
 * OK) and a one-line message; attn_why_not agrees. Returns the status. */
static attn_status expect_refused(attn_backend backend, const attn_args *a, attn_status want,
                                  const char *what) {
  char why[1024] = "";
  attn_status st = attn_forward(test_engine(), backend, a);
  if (st == ATTN_STATUS_OK) fail_msg("%s: %s accepted it", what, attn_backend_name(backend));
  if (!allowed_error(st) || (want != ATTN_STATUS_OK && st != want))
    fail_msg("%s: %s returned status %d (%s), want %d", what, attn_backend_name(backend), st,
             attn_status_string(st), want);
  assert_one_line(what, attn_last_error());
  attn_status ws = attn_why_not(test_engine(), backend, a, why, sizeof why);
  if (ws != st)
    fail_msg("%s: attn_why_not says %d but attn_forward %d on %s", what, ws, st,
             attn_backend_name(backend));
  assert_one_line(what, why);
  return st;
}

/* The same bad args on every CPU backend and on AUTO. */
static void expect_refused_everywhere(const attn_args *a, attn_status want, const char *what) {
  for (size_t i = 0; i < g_n_cpu; i++) expect_refused(g_cpu[i].backend, a, want, what);
  expect_refused(ATTN_BACKEND_AUTO, a, want, what);
}

static void test_shape_mismatch(void **state) {
  small_problem p;
  small_init(&p);
  p.args.k.shape[3] = 3; /* D of k differs from q */
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "k with D=3, q with D=4");
  small_init(&p);
  p.args.v.shape[2] = 7; /* k has 8 keys, v 7 */
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "v with 7 keys, k with 8");
  small_init(&p);
  p.args.out.shape[2] = 4;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "out shaped unlike q");
  small_init(&p);
  p.args.k.shape[0] = 2;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "batch of k differs");
}

static void test_zero_negative_absurd(void **state) {
  small_problem p;
  const int64_t bad[] = {0, -5, (int64_t)1 << 40, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    for (int dim = 0; dim < 4; dim++) {
      char what[128];
      snprintf(what, sizeof what, "q.shape[%d] = %lld", dim, (long long)bad[i]);
      small_init(&p);
      p.args.q.shape[dim] = bad[i];
      expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, what);
    }
  small_init(&p);
  p.args.q.strides[2] = -4;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "negative stride");
  small_init(&p);
  p.args.q.data = NULL;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "NULL data");
  expect_refused_everywhere(NULL, ATTN_STATUS_INVALID_ARGUMENT, "NULL args");
}

static void test_gqa_and_dtypes(void **state) {
  small_problem p;
  small_init(&p);
  p.args.q.shape[1] = 3, p.args.out.shape[1] = 3; /* 3 query heads over 2 kv heads */
  p.args.q.strides[0] = p.args.out.strides[0] = 3 * 8 * 4;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "Hq=3 with Hkv=2");
  small_init(&p);
  p.args.q.dtype = p.args.k.dtype = p.args.v.dtype = p.args.out.dtype = ATTN_DTYPE_BOOL;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "bool q/k/v");
  small_init(&p);
  p.args.v.dtype = ATTN_DTYPE_BF16;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "mixed dtypes");
  small_init(&p);
  p.args.q.dtype = (attn_dtype)77;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "unknown dtype 77");
  small_init(&p);
  p.args.scale = NAN;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "scale NaN");
  small_init(&p);
  expect_refused((attn_backend)42, &p.args, ATTN_STATUS_INVALID_ARGUMENT, "backend 42");
}

static void test_bad_masks(void **state) {
  small_problem p;
  small_init(&p);
  p.args.mask_kind = ATTN_MASK_BOOL;
  p.args.mask = attn_tensor_bhsd(p.mask, ATTN_DTYPE_BOOL, ATTN_DEVICE_CPU, 1, 2, 7, 8);
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "mask with Sq=7, q has 8");
  p.args.mask = attn_tensor_bhsd(p.mask, ATTN_DTYPE_BOOL, ATTN_DEVICE_CPU, 1, 3, 8, 8);
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "mask with 3 heads");
  p.args.mask = attn_tensor_bhsd(p.mask, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 8, 8);
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "bool mask kind, f32 data");
  p.args.mask_kind = ATTN_MASK_ADDITIVE;
  p.args.mask = attn_tensor_bhsd(p.mask, ATTN_DTYPE_BOOL, ATTN_DEVICE_CPU, 1, 1, 8, 8);
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "additive kind, bool data");
  p.args.mask_kind = (attn_mask_kind)9;
  expect_refused_everywhere(&p.args, ATTN_STATUS_INVALID_ARGUMENT, "mask kind 9");
}

/* B=H=64, S=2^20: the scores alone are 2^54 bytes. The buffers are a few
 * bytes (the refusal must come before anything is read or allocated). */
static void test_scores_too_big(void **state) {
  static float dummy[16];
  const int64_t b = 64, h = 64, s = (int64_t)1 << 20, d = 64;
  attn_tensor t = attn_tensor_bhsd(dummy, ATTN_DTYPE_BF16, ATTN_DEVICE_CPU, b, h, s, d);
  attn_args a = attn_args_make(t, t, t, t);
  a.causal = ATTN_CAUSAL_TOP_LEFT;
  int refused = 0;
  for (size_t i = 0; i < g_n_cpu; i++) {
    const char *n = g_cpu[i].name;
    if (strcmp(n, "naive") && strcmp(n, "naive_inplace") && strcmp(n, "math")) continue;
    expect_refused(g_cpu[i].backend, &a, ATTN_STATUS_OUT_OF_MEMORY, n);
    if (!strstr(attn_last_error(), "bytes") || !strstr(attn_last_error(), "available"))
      fail_msg("%s: the refusal does not give the bytes needed and available: \"%s\"", n,
               attn_last_error());
    print_message("%s: %s\n", n, attn_last_error());
    refused++;
  }
  assert_int_equal(refused, 3);
  /* flash keeps O(S) memory: it takes the same problem (not run here) */
  char why[512] = "";
  attn_status st = attn_why_not(test_engine(), ATTN_BACKEND_FLASH, &a, why, sizeof why);
  if (st != ATTN_STATUS_OK) fail_msg("flash refused an S=2^20 problem: %s", why);
}

static void test_head_dim_over_flash_limit(void **state) {
  static float buf[2 * 300];
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 2, 300);
  attn_args a = attn_args_make(t, t, t, t);
  char why[512] = "";
  attn_status st = attn_why_not(test_engine(), ATTN_BACKEND_FLASH, &a, why, sizeof why);
  assert_int_equal(st, ATTN_STATUS_UNSUPPORTED);
  if (!strstr(why, "256")) fail_msg("flash's refusal of D=300 does not say the limit: \"%s\"", why);
  expect_refused(ATTN_BACKEND_FLASH, &a, ATTN_STATUS_UNSUPPORTED, "flash with D=300");
}

/* ---- NaN and Inf inputs ---------------------------------------------------- */

typedef struct {
  int tensor; /* 0 q, 1 k, 2 v */
  int64_t h, s, d;
  double value;
} poke;

/* Out and lse non-finite exactly where the reference is. */
static void check_finite_pattern(const test_problem *p, const char *backend, const char *what) {
  const attn_tensor *o = &p->args.out;
  int64_t idx = 0, nonfinite = 0;
  for (int64_t h = 0; h < p->spec.hq; h++)
    for (int64_t i = 0; i < p->spec.sq; i++)
      for (int64_t d = 0; d < p->spec.d; d++, idx++) {
        double got = attn_tensor_get(o, 0, h, i, d), want = p->ref[idx];
        nonfinite += !isfinite(want);
        if (!!isfinite(got) != !!isfinite(want))
          fail_msg("%s, %s: out[0,%lld,%lld,%lld] = %g but the reference is %g", backend, what,
                   (long long)h, (long long)i, (long long)d, got, want);
      }
  for (size_t r = 0; r < p->lse_n; r++)
    if (!!isfinite(p->args.lse[r]) != !!isfinite(p->lse_ref[r]))
      fail_msg("%s, %s: lse[%zu] = %g but the reference is %g", backend, what, r,
               (double)p->args.lse[r], p->lse_ref[r]);
  if (nonfinite == 0 || nonfinite == idx)
    fail_msg("%s: the reference has %lld non-finite of %lld outputs: the case tests nothing", what,
             (long long)nonfinite, (long long)idx);
}

static void run_nonfinite(attn_causal causal, const poke *pokes, size_t n_pokes, const char *what) {
  problem_spec s = {ATTN_DTYPE_F32, 1, 2, 2, 40, 40, 16, causal, ATTN_MASK_NONE, 0, 0, 0, 0, 0,
                    LAYOUT_BHSD,    1, 0};
  for (size_t i = 0; i < g_n_cpu; i++) {
    test_rng r = {1234};
    test_problem p;
    if (problem_make(&p, &s, &r)) fail_msg("could not build the problem");
    for (size_t k = 0; k < n_pokes; k++) {
      attn_tensor *t = pokes[k].tensor == 0   ? &p.args.q
                       : pokes[k].tensor == 1 ? &p.args.k
                                              : &p.args.v;
      attn_tensor_set(t, 0, pokes[k].h, pokes[k].s, pokes[k].d, pokes[k].value);
    }
    assert_int_equal(attn_reference_f64(&p.args, p.ref, p.lse_ref), ATTN_STATUS_OK);
    problem_poison(&p);
    attn_status st = attn_forward(test_engine(), g_cpu[i].backend, &p.args);
    if (st != ATTN_STATUS_OK) fail_msg("%s, %s: %s", g_cpu[i].name, what, attn_last_error());
    check_finite_pattern(&p, g_cpu[i].name, what);
    problem_free(&p);
  }
}

static void test_nan_inf_inputs(void **state) {
  /* No mask: every query sees every key, so NaN/Inf anywhere reaches out. */
  const poke open[] = {{0, 0, 3, 5, NAN},      /* q row: its whole row NaN */
                       {1, 1, 7, 2, INFINITY}, /* k: +inf or -inf scores by sign */
                       {2, 0, 11, 4, NAN},     /* v: one column NaN */
                       {2, 1, 20, 0, -INFINITY}};
  run_nonfinite(ATTN_CAUSAL_NONE, open, sizeof open / sizeof open[0], "NaN/Inf, no mask");
  /* Causal: a NaN key hidden from the rows before it must not reach them. */
  const poke causal[] = {{0, 1, 5, 0, NAN}, {1, 0, 30, 3, NAN}, {2, 1, 0, 7, INFINITY}};
  run_nonfinite(ATTN_CAUSAL_TOP_LEFT, causal, sizeof causal / sizeof causal[0], "NaN/Inf, causal");
}

int main(void) {
  attn_backend_info all[MAX_BACKENDS];
  size_t n = attn_backend_list(all, MAX_BACKENDS);
  for (size_t i = 0; i < n && i < MAX_BACKENDS; i++)
    if (all[i].device_kind == ATTN_DEVICE_CPU) g_cpu[g_n_cpu++] = all[i];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape_mismatch), cmocka_unit_test(test_zero_negative_absurd),
      cmocka_unit_test(test_gqa_and_dtypes), cmocka_unit_test(test_bad_masks),
      cmocka_unit_test(test_scores_too_big), cmocka_unit_test(test_head_dim_over_flash_limit),
      cmocka_unit_test(test_nan_inf_inputs),
  };
  if (g_n_cpu == 0) return fprintf(stderr, "no CPU backend in the table\n"), 1;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
