/* AUTO's choice on the CPU, against a rule written here from the documented
 * capabilities, not read from dispatch.c or the backend table:
 *
 *   AUTO prefers cudnn, flash, efficient, math (attn.h, README); naive and
 *   naive_inplace are never picked. The CPU has flash and math of those.
 *   flash_cpu takes f32, f16 and bf16, any mask, causal rule and strides, up
 *   to D = 256 (its O(S) memory needs no check). math_cpu takes any D but
 *   materializes the S x S fp32 scores, so it refuses when they exceed the
 *   host's memory. Hence: D <= 256 -> flash; D > 256 -> math while the scores
 *   fit; else no backend (UNSUPPORTED).
 *
 * Over a grid of dtypes, head dims around 256, masks, causal rules and
 * layouts: attn_select's pick must match the rule, attn_why_not(AUTO) must
 * agree, and attn_forward(AUTO) must run the rule's backend, seen in a CPU
 * profiler trace (flash: one fused op; math: its two GEMMs) and must match
 * the fp64 reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"
#include "attnprof/prof.h"

/* The rule above. scores_fit: the S x S scores fit in host memory. */
static attn_backend expected_cpu(int64_t d, int scores_fit) {
  if (d <= 256) return ATTN_BACKEND_FLASH;
  if (scores_fit) return ATTN_BACKEND_MATH;
  return ATTN_BACKEND_AUTO; /* none */
}

/* The backend a trace shows: one fused op is flash, GEMMs without a fused
 * op are math's composition. */
static attn_backend traced_backend(attn_ctx *ctx, test_problem *p, attn_status *st) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_non_null(t);
  assert_int_equal(prof_start(t, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  *st = attn_forward(ctx, ATTN_BACKEND_AUTO, &p->args);
  prof_stop();
  int fused = 0, gemm = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_CPU_OP) continue;
    fused += e->kind == PROF_KIND_FUSED, gemm += e->kind == PROF_KIND_GEMM;
  }
  prof_trace_destroy(t);
  if (fused == 1 && gemm == 0) return ATTN_BACKEND_FLASH;
  if (fused == 0 && gemm == 2) return ATTN_BACKEND_MATH;
  return ATTN_BACKEND_COUNT;
}

static void test_grid(void **state) {
  (void)state;
  static const attn_dtype dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
  static const int64_t dims[] = {1, 64, 255, 256, 257, 320};
  static const attn_mask_kind masks[] = {ATTN_MASK_NONE, ATTN_MASK_BOOL, ATTN_MASK_ADDITIVE};
  static const test_layout layouts[] = {LAYOUT_BHSD, LAYOUT_BSHD, LAYOUT_BHDS};
  attn_ctx *ctx = test_engine();
  test_rng r = {test_seed(314)};
  int n = 0, per[ATTN_BACKEND_COUNT] = {0};
  for (int di = 0; di < 3; di++)
    for (int ki = 0; ki < 6; ki++)
      for (int mi = 0; mi < 3; mi++)
        for (int ci = 0; ci < 3; ci++, n++) {
          problem_spec s;
          memset(&s, 0, sizeof s);
          s.dtype = dts[di], s.d = dims[ki], s.mask = masks[mi], s.causal = (attn_causal)ci;
          s.mask_dtype = s.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : dts[(di + 1) % 3];
          s.b = 1 + n % 2, s.hkv = 1, s.hq = 1 + n % 3, s.sq = 9 + n % 17, s.sk = 5 + n % 23;
          s.layout = layouts[n % 3], s.lse = 1, s.mask_h1 = n % 2;
          test_problem p;
          char desc[512], log[2048] = "", why[512] = "";
          problem_describe(&s, desc, sizeof desc);
          if (problem_make(&p, &s, &r)) fail_msg("could not build %s", desc);
          attn_backend want = expected_cpu(s.d, 1), got = ATTN_BACKEND_COUNT;
          attn_status st = attn_select(ctx, &p.args, &got, log, sizeof log);
          if (st != ATTN_STATUS_OK || got != want)
            fail_msg("%s: AUTO picked %s (%s), the rule says %s; its log:\n%s", desc,
                     attn_backend_name(got), attn_status_string(st), attn_backend_name(want), log);
          if (attn_why_not(ctx, ATTN_BACKEND_AUTO, &p.args, why, sizeof why) != ATTN_STATUS_OK)
            fail_msg("%s: attn_why_not(AUTO) refused what attn_select took: %s", desc, why);
          problem_poison(&p);
          attn_backend ran = traced_backend(ctx, &p, &st);
          if (st != ATTN_STATUS_OK) fail_msg("%s: attn_forward(AUTO): %s", desc, attn_last_error());
          if (ran != want)
            fail_msg("%s: the trace shows %s ran, the rule says %s", desc,
                     ran == ATTN_BACKEND_COUNT ? "neither flash nor math" : attn_backend_name(ran),
                     attn_backend_name(want));
          /* 16-bit: one rounding of out (<= u); f32: fp32 sums, ~sqrt(n) u. */
          double k = s.dtype == ATTN_DTYPE_F32 ? 64 : 2;
          /* lse: fp32 sums over up to 320 products, seen up to 47 fp32 u. */
          check_result c = problem_check(&p, 0, k * test_unit_roundoff(s.dtype), 256 * 0x1p-24);
          if (!c.ok) fail_msg("%s: AUTO's output: %s", desc, c.why);
          per[want]++;
          problem_free(&p);
        }
  print_message("%d inputs: AUTO picked flash %d times, math %d times, as the rule says\n", n,
                per[ATTN_BACKEND_FLASH], per[ATTN_BACKEND_MATH]);
  assert_true(per[ATTN_BACKEND_FLASH] > 0 && per[ATTN_BACKEND_MATH] > 0);
}

/* D > 256 with scores far beyond any host memory: neither takes it. Nothing
 * runs, so small buffers stand in for the tensors. */
static void test_nothing_takes_it(void **state) {
  (void)state;
  static float buf[64];
  int64_t s = (int64_t)1 << 20, d = 300; /* 2^40 fp32 scores: 4 TiB */
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_BF16, ATTN_DEVICE_CPU, 1, 1, s, d);
  attn_args a = attn_args_make(t, t, t, t);
  attn_backend got = ATTN_BACKEND_COUNT;
  char log[2048] = "";
  assert_int_equal(expected_cpu(d, 0), ATTN_BACKEND_AUTO);
  attn_status st = attn_select(test_engine(), &a, &got, log, sizeof log);
  print_message("D=300, S=2^20: %s; log:\n%s", attn_last_error(), log);
  assert_int_equal(st, ATTN_STATUS_UNSUPPORTED);
  assert_int_equal(got, ATTN_BACKEND_COUNT);
  assert_non_null(strstr(log, "flash"));
  assert_non_null(strstr(log, "math"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grid),
      cmocka_unit_test(test_nothing_takes_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
