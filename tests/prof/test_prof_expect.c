/* Expectations: parsing (separators, white space, comments, plurals), checking
 * (held / BROKEN lines with the observed value, the count broken), and the
 * one-line errors for bad input. */
#include <stdio.h>
#include <stdlib.h>

#include "prof/prof_test.h"

/* Two calls of attn_fwd: gemm, copy, softmax, gemm; then one more copy in the
 * second (so copies per call is 1.5). */
static prof_trace *sample(void) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  for (int c = 0; c < 2; c++) {
    int64_t t0 = 1000 * c;
    synth_op(t, "gemm", PROF_KIND_GEMM, 1, t0 + 10, 100);
    synth_op(t, "copy", PROF_KIND_COPY, 1, t0 + 120, 50);
    synth_op(t, "softmax", PROF_KIND_SOFTMAX, 1, t0 + 180, 50);
    synth_op(t, "gemm", PROF_KIND_GEMM, 1, t0 + 240, 100);
    if (c) synth_op(t, "copy", PROF_KIND_COPY, 1, t0 + 350, 100);
    synth_range(t, "attn_fwd", 1, t0, 500);
  }
  return t;
}

static char *check_text(const prof_expect *e, const prof_trace *t, const char *range, int *broken) {
  FILE *f = tmpfile();
  if (prof_expect_check(e, t, range, f, broken)) *broken = -1;
  long n = ftell(f);
  rewind(f);
  char *s = calloc(1, (size_t)n + 1);
  assert_i64(fread(s, 1, (size_t)n, f), n);
  fclose(f);
  return s;
}

static void held_and_broken(void **state) {
  prof_trace *t = sample();
  prof_expect *e = NULL;
  prof_expect_parse("ops==4.5, gemms == 2,copies==0\n  softmax <= 1 ,device_us > 1", &e);
  assert_non_null(e);
  assert_i64(prof_expect_count(e), 5);
  int broken;
  char *out = check_text(e, t, "attn_fwd", &broken);
  assert_i64(broken, 2);
  assert_str(out, "held   ops == 4.5 (observed 4.5)\n"
                  "held   gemms == 2 (observed 2)\n"
                  "BROKEN copies == 0 (observed 1.5)\n"
                  "held   softmax <= 1 (observed 1)\n"
                  "BROKEN device_us > 1 (observed 0.35)\n");
  free(out);
  prof_expect_result r[5];
  assert_i64(expect_broken(e, t, "attn_fwd", r), 2);
  assert_str(r[2].text, "copies == 0");
  assert_str(r[2].observed, "1.5");
  assert_i64(r[2].held, 0);
  assert_i64(r[1].held, 1);
  assert_i64(expect_broken(e, t, NULL, r), 2); /* the only range */
  prof_expect_free(e);
  prof_trace_destroy(t);
}

static void every_metric_and_operator(void **state) {
  prof_trace *t = sample();
  prof_expect *e = NULL;
  prof_expect_parse("# a file of expectations\n"
                    "calls == 2   # two forwards\n"
                    "kernels == 0, memcpy == 0, memsets == 0, gemm >= 2, elementwise < 1\n"
                    "copy != 0, softmaxes > 0.5, casts == 0, fused == 0, others == 0\n"
                    "host_us == 0.5, device_us <= 0.4, ops < 5\n"
                    "\n,,\n",
                    &e);
  assert_non_null(e);
  assert_i64(prof_expect_count(e), 14);
  int broken;
  char *out = check_text(e, t, "attn_fwd", &broken);
  if (broken) fail_msg("expected all to hold:\n%s", out);
  free(out);
  prof_expect_free(e);
  prof_trace_destroy(t);
}

/* The message names the bad token and lists what is accepted. */
static void bad_syntax(void **state) {
  struct {
    const char *text, *needle1, *needle2;
  } cases[] = {
      {"opz == 5", "unknown metric 'opz'", "accepted: ops, kernel(s), memcpy(s)"},
      {"ops == 5, copy/copies == 1", "expectation 'copy/copies == 1'", "'/c' is not an operator"},
      {"ops = 5", "'=' is not an operator", "=="},
      {"ops => 5", "not an operator", "== != < <= > >="},
      {"ops", "missing operator", "== != < <= > >="},
      {"ops ==", "missing value", "ops =="},
      {"ops == five", "'five' is not a number", "e.g. 'ops == 5'"},
      {"ops == 5 6", "unexpected '6'", "','"},
      {"ops == 5%", "not a percentage", "'ops == 5%'"},
      {"ops(top) == 5", "'ops' takes no argument", "(top)"},
      {"ops(top == 5", "'(' without ')'", "ops(top == 5"},
      {"== 5", "expected a metric at '=='", "accepted: ops"},
      {"", "no expectations", "ops == 5"},
      {"# only a comment\n", "no expectations", "copies == 0"},
      {"device_us < 1e999", "not a number", "device_us"},
      {"calls == 2 'quoted, # not a comment'", "unexpected ''quoted,'",
       "calls == 2 'quoted, # not"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    prof_expect *e = NULL;
    prof_expect_parse(cases[i].text, &e);
    if (e) fail_msg("'%s' parsed, expected an error", cases[i].text);
    const char *msg = attn_last_error();
    if (!strstr(msg, cases[i].needle1) || !strstr(msg, cases[i].needle2))
      fail_msg("error for '%s' is \"%s\": expected it to contain \"%s\" and \"%s\"", cases[i].text,
               msg, cases[i].needle1, cases[i].needle2);
    if (strchr(msg, '\n'))
      fail_msg("error for '%s' is more than one line: \"%s\"", cases[i].text, msg);
  }
}

static void missing_range(void **state) {
  prof_trace *t = sample();
  synth_range(t, "other", 1, 5000, 10);
  prof_expect *e = NULL;
  prof_expect_parse("ops == 4", &e);
  int broken;
  char *out = check_text(e, t, "attn_bwd", &broken);
  assert_i64(broken, -1);
  assert_str(out, "");
  free(out);
  assert_contains(attn_last_error(), "range 'attn_bwd' is not in the trace");
  assert_contains(attn_last_error(), "attn_fwd, other");
  prof_expect_result r[1];
  assert_i64(expect_broken(e, t, NULL, r), -1);
  assert_contains(attn_last_error(), "several ranges");
  prof_expect_free(e);
  prof_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(held_and_broken),
      cmocka_unit_test(every_metric_and_operator),
      cmocka_unit_test(bad_syntax),
      cmocka_unit_test(missing_range),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
