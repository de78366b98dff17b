/* Expectations on a trace read from disk: "[range]" sections, occupancy(K)
 * and launch(K) about one kernel, each observed value checked against the
 * file (jansson oracle, occupancy calculator on the footprint the file
 * holds), and the errors a user gets for a bad section. */
#include <stdio.h>
#include <stdlib.h>

#include "prof/prof_test.h"
#include "reader/reader_oracle.h"

static prof_trace *naive(oracle *o) {
  char path[512];
  snprintf(path, sizeof path, "%s/trace_naive.json", READER_FIXTURES);
  oracle_of(path, "attn_fwd", o);
  prof_trace *t;
  if (prof_read_chrome_trace(path, &t, NULL)) fail_msg("%s", attn_last_error());
  return t;
}

/* The first kernel the oracle saw whose name contains key. */
static int oracle_kernel(const oracle *o, const char *key) {
  for (size_t i = 0; i < o->n_names; i++)
    if (strstr(o->names[i], key)) return (int)i;
  fail_msg("oracle: no kernel like %s", key);
  return -1;
}

static double oracle_occupancy(const oracle *o, int i, const prof_trace *t) {
  prof_footprint fp;
  memset(&fp, 0, sizeof fp);
  for (int d = 0; d < 3; d++) fp.grid[d] = o->grid[i][d], fp.block[d] = o->block[i][d];
  fp.registers_per_thread = o->regs[i];
  fp.dynamic_shared_memory = o->smem[i];
  prof_occupancy occ;
  prof_occupancy_compute(&fp, prof_trace_device(t, 0), &occ);
  return occ.achieved_est_pct;
}

static void sections_and_kernel_metrics(void **state) {
  oracle o;
  prof_trace *t = naive(&o);
  int nv = oracle_kernel(&o, "nvjet");
  char text[1024];
  snprintf(text, sizeof text,
           "# guesses per forward\n[attn_fwd]\nkernels == %g, memcpy == %g\nmemset <= 1\n"
           "occupancy(nvjet) > 0%%\noccupancy(\"nvjet\") < 20%%\nlaunch(nvjet) == %s\n"
           "[ProfilerStep#3]  # a range name with '#'\ncalls == 1\n[]\nmemcpy == 0\n",
           o.kernels, o.memcpy, o.launch[nv]);
  prof_expect *e = NULL;
  prof_expect_parse(text, &e);
  if (!e) fail_msg("%s", attn_last_error());
  assert_i64(prof_expect_count(e), 8);
  prof_expect_result r[8];
  int broken = expect_broken(e, t, "attn_fwd", r);
  assert_i64(broken, 1); /* the last: after "[]" the caller's attn_fwd, which has a memcpy */
  assert_str(r[0].text, "[attn_fwd] kernels == 5");
  assert_str(r[6].text, "[ProfilerStep#3] calls == 1");
  assert_str(r[7].text, "memcpy == 0");
  assert_false(r[7].held);
  for (int i = 0; i < 7; i++)
    if (!r[i].held) fail_msg("%s broke (observed %s)", r[i].text, r[i].observed);
  char want[64];
  snprintf(want, sizeof want, "%.3f", oracle_occupancy(&o, nv, t));
  assert_near(atof(r[3].observed), atof(want), 0.001);
  assert_str(r[5].observed, o.launch[nv]);
  prof_expect_free(e);
  prof_trace_destroy(t);
  oracle_free(&o);
}

static void kernel_metric_without_a_match(void **state) {
  oracle o;
  prof_trace *t = naive(&o);
  prof_expect *e = NULL;
  prof_expect_parse("launch(no_such_kernel) == cudaLaunchKernel", &e);
  prof_expect_result r;
  assert_i64(expect_broken(e, t, "attn_fwd", &r), 1);
  assert_contains(r.observed, "no kernel named like 'no_such_kernel'");
  prof_expect_free(e);
  prof_expect_parse("[absent]\nkernels == 1", &e);
  assert_i64(expect_broken(e, t, "attn_fwd", &r), -1);
  assert_contains(attn_last_error(), "range 'absent' is not in the trace");
  prof_expect_free(e);
  prof_trace_destroy(t);
  oracle_free(&o);
}

static void bad_sections(void **state) {
  prof_expect *e = NULL;
  assert_i64(prof_expect_parse("[attn_fwd\nkernels == 1", &e), ATTN_STATUS_INVALID_ARGUMENT);
  assert_null(e);
  assert_contains(attn_last_error(), "'[' without ']'");
  assert_i64(prof_expect_parse("[attn_fwd] kernels == 1", &e), ATTN_STATUS_INVALID_ARGUMENT);
  assert_null(e);
  assert_contains(attn_last_error(), "put expectations on the lines below it");
  assert_i64(prof_expect_parse("[attn_fwd]\n# nothing", &e), ATTN_STATUS_INVALID_ARGUMENT);
  assert_null(e);
  assert_contains(attn_last_error(), "no expectations given");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sections_and_kernel_metrics),
      cmocka_unit_test(kernel_metric_without_a_match),
      cmocka_unit_test(bad_sections),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
