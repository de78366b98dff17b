/* The diff of two traces: names normalized as documented, the naive and
 * naive_inplace fixtures differing by exactly what the files say (the set
 * difference of their GPU event names per attn_fwd, computed by the jansson
 * oracle), and the rules for appeared, vanished, changed count or time on
 * synthetic traces. */
#include <stdio.h>
#include <stdlib.h>

#include "prof/prof_test.h"
#include "reader/reader_oracle.h"

static void names_normalize(void **state) {
  static const char *const cases[][2] = {
      {"void k<128, 4, F<float> >(int, G<2>)", "void k<>(int, G<>)"},
      {"ProfilerStep#12", "ProfilerStep#N"},
      {"{lambda()#1}::operator()", "{lambda()#N}::operator()"},
      {"at 0x7f3a2b9c00 done", "at 0x? done"},
      {"nvjet_sm90_tst_320x128_64x4_1x2_h_bz_coopA_NNT",
       "nvjet_sm90_tst_320x128_64x4_1x2_h_bz_coopA_NNT"},
      {"Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)"},
      {"operator<<(int) and a < b", "operator<<(int) and a < b"},
      {"unclosed<int", "unclosed<int"},
      {"", ""},
  };
  char buf[128];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = prof_normalize_name(cases[i][0], buf, sizeof buf);
    assert_str(buf, cases[i][1]);
    assert_i64(n, strlen(cases[i][1]));
  }
  assert_i64(prof_normalize_name("ProfilerStep#3", buf, 5), 4); /* cut to the buffer */
  assert_str(buf, "Prof");
}

static prof_trace *load(const char *file) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", READER_FIXTURES, file);
  prof_trace *t;
  if (prof_read_chrome_trace(path, &t, NULL)) fail_msg("%s", attn_last_error());
  return t;
}

static const prof_diff_range *range_of(const prof_diff *d, const char *name) {
  for (size_t i = 0; i < d->n_ranges; i++)
    if (!strcmp(d->ranges[i].name, name)) return &d->ranges[i];
  fail_msg("no range %s in the diff", name);
  return NULL;
}

static size_t count_status(const prof_diff_range *r, prof_diff_status s) {
  size_t n = 0;
  for (size_t i = 0; i < r->n_items; i++) n += r->items[i].status == s;
  return n;
}

/* Names in a but not in b, per the oracle. */
static size_t only_in(const oracle *a, const oracle *b, const char **out) {
  size_t n = 0;
  for (size_t i = 0; i < a->n_names; i++)
    if (oracle_find(b, a->names[i]) < 0) out[n++] = a->names[i];
  return n;
}

static void naive_to_inplace(void **state) {
  char pa[512], pb[512];
  snprintf(pa, sizeof pa, "%s/trace_naive.json", READER_FIXTURES);
  snprintf(pb, sizeof pb, "%s/trace_naive_inplace.json", READER_FIXTURES);
  oracle oa, ob;
  oracle_of(pa, "attn_fwd", &oa);
  oracle_of(pb, "attn_fwd", &ob);
  const char *gone[ORACLE_MAX_NAMES], *came[ORACLE_MAX_NAMES];
  size_t n_gone = only_in(&oa, &ob, gone), n_came = only_in(&ob, &oa, came);
  prof_trace *a = load("trace_naive.json"), *b = load("trace_naive_inplace.json");
  prof_diff d;
  prof_diff_opts bad = prof_diff_opts_default();
  bad.size = 1;
  assert_int_equal(prof_diff_traces(a, b, &bad, &d), ATTN_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(attn_last_error(), "prof_diff_opts.size is 1"));
  prof_diff_free(&d);
  if (prof_diff_traces(a, b, NULL, &d)) fail_msg("%s", attn_last_error());
  const prof_diff_range *r = range_of(&d, "attn_fwd");
  assert_i64(r->calls_a, oa.calls);
  assert_i64(r->calls_b, ob.calls);
  assert_i64(count_status(r, PROF_DIFF_VANISHED), n_gone);
  assert_i64(count_status(r, PROF_DIFF_APPEARED), n_came);
  assert_i64(n_gone, 1);                   /* the claim, checked against the files */
  const prof_diff_item *it = &r->items[0]; /* vanished first */
  assert_i64(it->status, PROF_DIFF_VANISHED);
  assert_str(it->name, gone[0]);
  assert_contains(it->name, "Memcpy DtoD");
  assert_near(it->count_a, (double)oa.count[oracle_find(&oa, gone[0])] / oa.calls, 0);
  for (size_t i = 0; i < r->n_items; i++) /* the rest keep their counts */
    if (r->items[i].status != PROF_DIFF_VANISHED)
      assert_near(r->items[i].count_a, r->items[i].count_b, 0);
  /* The steps are one range, ProfilerStep#N, with the same story. */
  const prof_diff_range *steps = range_of(&d, "ProfilerStep#N");
  assert_i64(steps->calls_a, 3);
  assert_i64(count_status(steps, PROF_DIFF_VANISHED), 1);
  prof_diff_free(&d);
  prof_trace_destroy(a);
  prof_trace_destroy(b);
  oracle_free(&oa);
  oracle_free(&ob);
}

static void a_trace_against_itself(void **state) {
  prof_trace *a = load("trace_flash.json");
  prof_diff d;
  if (prof_diff_traces(a, a, NULL, &d)) fail_msg("%s", attn_last_error());
  for (size_t i = 0; i < d.n_ranges; i++)
    assert_i64(count_status(&d.ranges[i], PROF_DIFF_SAME), d.ranges[i].n_items);
  prof_diff_free(&d);
  prof_trace_destroy(a);
}

/* One range "fwd" with GPU work: each kernel launched inside it. */
static prof_trace *synth(const char *const *names, const int64_t *durs, size_t n,
                         const char *range) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  synth_range(t, range, 1, 0, 1000000);
  for (size_t i = 0; i < n; i++) {
    synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", 1, 10 + (int64_t)i * 100, 5,
                 (int64_t)i + 1);
    synth_gpu(t, PROF_CAT_KERNEL, names[i], 0, 7, 2000 + (int64_t)i * 100000, durs[i],
              (int64_t)i + 1);
  }
  return t;
}

static const prof_diff_item *item(const prof_diff_range *r, const char *name) {
  for (size_t i = 0; i < r->n_items; i++)
    if (!strcmp(r->items[i].name, name)) return &r->items[i];
  fail_msg("no item %s", name);
  return NULL;
}

static void appeared_vanished_changed(void **state) {
  const char *na[] = {"k<float>(int)", "gemm", "gemm", "old", "steady", "jitter"};
  const int64_t da[] = {50000, 100000, 100000, 7000, 30000, 40000};
  const char *nb[] = {"k<half>(int)", "gemm", "new", "steady", "jitter", "gemm"};
  const int64_t db[] = {50000, 150000, 9000, 30000, 40300, 150000};
  prof_trace *a = synth(na, da, 6, "fwd"), *b = synth(nb, db, 6, "fwd");
  prof_trace *c = synth(nb, db, 1, "other");
  prof_diff d;
  if (prof_diff_traces(a, b, NULL, &d)) fail_msg("%s", attn_last_error());
  const prof_diff_range *r = range_of(&d, "fwd");
  assert_i64(item(r, "old")->status, PROF_DIFF_VANISHED);
  assert_i64(item(r, "new")->status, PROF_DIFF_APPEARED);
  assert_near(item(r, "new")->device_us_b, 9, 1e-9);
  assert_i64(item(r, "steady")->status, PROF_DIFF_SAME);
  assert_i64(item(r, "jitter")->status, PROF_DIFF_SAME); /* +0.75%: under the threshold */
  const prof_diff_item *g = item(r, "gemm");
  assert_i64(g->status, PROF_DIFF_CHANGED);
  assert_near(g->count_a, 2, 0);
  assert_near(g->count_b, 2, 0);
  assert_near(g->device_us_b - g->device_us_a, 100, 1e-9);
  const prof_diff_item *k = item(r, "k<>(int)"); /* matched by normalized name */
  assert_i64(k->status, PROF_DIFF_CHANGED);
  assert_str(k->name_a, "k<float>(int)");
  assert_str(k->name_b, "k<half>(int)");
  prof_diff_free(&d);
  if (prof_diff_traces(a, c, NULL, &d)) fail_msg("%s", attn_last_error());
  assert_i64(range_of(&d, "fwd")->calls_b, 0);
  assert_i64(count_status(range_of(&d, "fwd"), PROF_DIFF_VANISHED), 5);
  assert_i64(range_of(&d, "other")->calls_a, 0);
  assert_i64(count_status(range_of(&d, "other"), PROF_DIFF_APPEARED), 1);
  prof_diff_free(&d);
  prof_trace_destroy(a);
  prof_trace_destroy(b);
  prof_trace_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(names_normalize),
      cmocka_unit_test(naive_to_inplace),
      cmocka_unit_test(a_trace_against_itself),
      cmocka_unit_test(appeared_vanished_changed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
