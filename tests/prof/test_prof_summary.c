/* The per-range summary (ops per call by kind, device and host time, launch
 * APIs) and the key averages (calls, host total and self time, device time),
 * on synthetic CPU and GPU traces; and the two text tables. */
#include <stdio.h>
#include <stdlib.h>

#include "prof/prof_test.h"

/* One naive-style CPU forward at t0: gemm, elementwise, copy, softmax, gemm
 * (durations 100, 10, 20, 30, 100 ns), inside "attn_fwd" [t0, t0 + 400]. */
static void cpu_forward(prof_trace *t, int64_t t0) {
  synth_op(t, "gemm_qk", PROF_KIND_GEMM, 1, t0 + 10, 100);
  synth_op(t, "scale", PROF_KIND_ELEMENTWISE, 1, t0 + 120, 10);
  synth_op(t, "mask_copy", PROF_KIND_COPY, 1, t0 + 140, 20);
  synth_op(t, "softmax", PROF_KIND_SOFTMAX, 1, t0 + 170, 30);
  synth_op(t, "gemm_pv", PROF_KIND_GEMM, 1, t0 + 210, 100);
  synth_range(t, "attn_fwd", 1, t0, 400);
}

static const prof_range_summary *row(const prof_range_summary *rows, int64_t n, const char *name) {
  const prof_range_summary *r = prof_range_summary_find(rows, n, name);
  if (!r) fail_msg("no row '%s' among %lld rows", name, (long long)n);
  return r;
}

static void cpu_counts_and_times(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  for (int step = 0; step < 3; step++) {
    int64_t t0 = 10000 * (step + 1);
    cpu_forward(t, t0);
    synth_op(t, "optimizer", PROF_KIND_OTHER, 1, t0 + 500, 50); /* in the step, not the forward */
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", step + 2);
    synth_range(t, name, 1, t0 - 100, 1000);
  }
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  assert_i64(n, 4);
  assert_str(rows[0].name, "ProfilerStep#2"); /* order of first appearance */
  const prof_range_summary *f = row(rows, n, "attn_fwd");
  assert_i64(f->calls, 3);
  assert_i64(f->gpu, 0);
  assert_near(f->per_call_total, 5, 0);
  assert_near(f->per_call_kind[PROF_KIND_GEMM], 2, 0);
  assert_near(f->per_call_kind[PROF_KIND_ELEMENTWISE], 1, 0);
  assert_near(f->per_call_kind[PROF_KIND_COPY], 1, 0);
  assert_near(f->per_call_kind[PROF_KIND_SOFTMAX], 1, 0);
  assert_near(f->per_call_kind[PROF_KIND_OTHER], 0, 0);
  assert_near(f->device_us_per_call, 0.260, 1e-12);
  assert_near(f->host_us_per_call, 0.400, 1e-12);
  assert_i64(f->n_launch_apis, 0);
  /* The step holds the forward's ops and its own. */
  const prof_range_summary *s = row(rows, n, "ProfilerStep#3");
  assert_i64(s->calls, 1);
  assert_near(s->per_call_total, 6, 0);
  assert_near(s->per_call_kind[PROF_KIND_OTHER], 1, 0);
  assert_near(s->host_us_per_call, 1.0, 1e-12);
  free(rows);
  prof_trace_destroy(t);
}

static void sub_ranges_and_nested_ops(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  synth_op(t, "inner_helper", PROF_KIND_ELEMENTWISE, 1, 20, 5); /* inside "fused" op */
  synth_op(t, "fused", PROF_KIND_FUSED, 1, 10, 50);
  synth_range(t, "tile", 1, 5, 60); /* a backend's own sub-range */
  synth_op(t, "tail", PROF_KIND_COPY, 1, 80, 10);
  synth_range(t, "attn_fwd", 1, 0, 100);
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  const prof_range_summary *f = row(rows, n, "attn_fwd");
  assert_near(f->per_call_total, 2, 0); /* fused + tail; the helper is part of fused */
  assert_near(f->per_call_kind[PROF_KIND_FUSED], 1, 0);
  assert_near(f->per_call_kind[PROF_KIND_ELEMENTWISE], 0, 0);
  assert_near(f->device_us_per_call, 0.060, 1e-12);
  const prof_range_summary *tile = row(rows, n, "tile");
  assert_near(tile->per_call_total, 1, 0);
  free(rows);
  prof_trace_destroy(t);
}

/* Two forwards of naive on a GPU: 5 kernels (2 through cuLaunchKernelEx),
 * a memcpy, a memset, as in the H200 fixture. */
static void gpu_forward(prof_trace *t, int64_t t0, int64_t corr) {
  const char *api[7] = {"cudaMemsetAsync", "cuLaunchKernelEx", "cudaLaunchKernel",
                        "cudaMemcpyAsync", "cudaLaunchKernel", "cudaLaunchKernel",
                        "cuLaunchKernelEx"};
  prof_cat gcat[7] = {PROF_CAT_GPU_MEMSET, PROF_CAT_KERNEL, PROF_CAT_KERNEL, PROF_CAT_GPU_MEMCPY,
                      PROF_CAT_KERNEL,     PROF_CAT_KERNEL, PROF_CAT_KERNEL};
  for (int i = 0; i < 7; i++) {
    prof_cat lcat = api[i][1] == 'u' ? PROF_CAT_CUDA_DRIVER : PROF_CAT_CUDA_RUNTIME;
    synth_launch(t, lcat, api[i], 1, t0 + 10 + 20 * i, 10, corr + i);
    synth_gpu(t, gcat[i], "gpu op", 0, 7, t0 + 1000 + 200 * i, 100 + i, corr + i);
  }
  synth_op(t, "aten::matmul", PROF_KIND_OTHER, 1, t0 + 5, 100); /* host side: not an op here */
  synth_range(t, "attn_fwd", 1, t0, 200);
}

static void gpu_counts_and_launch_apis(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  gpu_forward(t, 0, 100);
  gpu_forward(t, 100000, 200);
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  assert_i64(n, 1);
  const prof_range_summary *f = &rows[0];
  assert_i64(f->gpu, 1);
  assert_i64(f->calls, 2);
  assert_near(f->per_call_total, 7, 0);
  assert_near(f->per_call_kind[PROF_KIND_KERNEL], 5, 0);
  assert_near(f->per_call_kind[PROF_KIND_MEMCPY], 1, 0);
  assert_near(f->per_call_kind[PROF_KIND_MEMSET], 1, 0);
  assert_near(f->per_call_kind[PROF_KIND_OTHER], 0, 0);
  assert_near(f->device_us_per_call, (7 * 100 + 21) / 1e3, 1e-12);
  assert_near(f->host_us_per_call, 0.2, 1e-12);
  assert_i64(f->n_launch_apis, 4);
  double per_api[4] = {0};
  for (int j = 0; j < f->n_launch_apis; j++) {
    const char *a = f->launch_api[j];
    int k = !strcmp(a, "cudaLaunchKernel")   ? 0
            : !strcmp(a, "cuLaunchKernelEx") ? 1
            : !strcmp(a, "cudaMemcpyAsync")  ? 2
                                             : 3;
    per_api[k] = f->launch_api_per_call[j];
  }
  assert_near(per_api[0], 3, 0);
  assert_near(per_api[1], 2, 0);
  assert_near(per_api[2], 1, 0);
  assert_near(per_api[3], 1, 0);
  free(rows);
  prof_trace_destroy(t);
}

static void key_averages_self_and_device(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  synth_op(t, "child", PROF_KIND_GEMM, 1, 10, 20);
  synth_op(t, "child", PROF_KIND_GEMM, 1, 40, 10);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", 1, 60, 5, 1);
  synth_op(t, "parent", PROF_KIND_OTHER, 1, 0, 100);
  synth_gpu(t, PROF_CAT_KERNEL, "kern", 0, 7, 500, 300, 1);
  synth_range(t, "fwd", 1, 0, 200);
  prof_key_average *rows;
  int64_t n;
  if (prof_key_averages(t, &rows, &n)) n = -1;
  assert_i64(n, 5);
  /* Sorted by device time, then host time: fwd, parent, launch, kern (300 device each), child. */
  const prof_key_average *parent = NULL, *child = NULL, *kern = NULL, *fwd = NULL, *launch = NULL;
  for (int64_t i = 0; i < n; i++) {
    const char *nm = rows[i].name;
    if (!strcmp(nm, "parent")) parent = &rows[i];
    if (!strcmp(nm, "child")) child = &rows[i];
    if (!strcmp(nm, "kern")) kern = &rows[i];
    if (!strcmp(nm, "fwd")) fwd = &rows[i];
    if (!strcmp(nm, "cudaLaunchKernel")) launch = &rows[i];
  }
  assert_true(parent && child && kern && fwd && launch);
  assert_i64(child->calls, 2);
  assert_near(child->host_us_total, 0.030, 1e-12);
  assert_near(child->host_us_self_total, 0.030, 1e-12);
  assert_near(parent->host_us_total, 0.100, 1e-12);
  assert_near(parent->host_us_self_total, 0.100 - 0.035, 1e-12);
  assert_near(parent->device_us_total, 0.300, 1e-12); /* the kernel launched inside it */
  assert_near(launch->device_us_total, 0.300, 1e-12);
  assert_near(fwd->device_us_total, 0.300, 1e-12);
  assert_near(fwd->host_us_self_total, 0.100, 1e-12);
  assert_near(kern->device_us_total, 0.300, 1e-12);
  assert_near(kern->host_us_total, 0, 0);
  assert_str(rows[0].name, "fwd");       /* device 300, host 200 */
  assert_str(rows[1].name, "parent");    /* device 300, host 100 */
  assert_str(rows[n - 1].name, "child"); /* no device time */
  for (int64_t i = 1; i < n; i++)
    if (rows[i].device_us_total > rows[i - 1].device_us_total)
      fail_msg("row %lld (%s) out of order", (long long)i, rows[i].name);
  free(rows);
  prof_trace_destroy(t);
}

/* Captures what a print function writes. */
static char *capture(void (*print)(FILE *, const void *, int64_t), const void *rows, int64_t n) {
  FILE *f = tmpfile();
  print(f, rows, n);
  long len = ftell(f);
  rewind(f);
  char *s = calloc(1, (size_t)len + 1);
  assert_i64(fread(s, 1, (size_t)len, f), len);
  fclose(f);
  return s;
}

static void print_summary(FILE *f, const void *rows, int64_t n) {
  prof_print_range_summary(f, rows, n);
}
static void print_keys(FILE *f, const void *rows, int64_t n) {
  prof_print_key_averages(f, rows, n, 3);
}

static void tables(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  cpu_forward(t, 0);
  synth_op(t, "evil\x1b[31mred\nname", PROF_KIND_OTHER, 1, 1000, 10);
  synth_op(t, "a_very_long_operator_name_that_will_not_fit_in_the_table_column_at_all",
           PROF_KIND_OTHER, 1, 2000, 10);
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  char *s = capture(print_summary, rows, n);
  assert_contains(s, "attn_fwd");
  assert_contains(s, "gemm");
  assert_contains(s, "softmax");
  assert_null(strstr(s, "memcpy")); /* kinds never seen get no column */
  free(s);
  free(rows);
  prof_key_average *keys;
  if (prof_key_averages(t, &keys, &n)) n = -1;
  s = capture(print_keys, keys, n);
  assert_contains(s, "more rows");
  free(s);
  s = capture(print_keys, keys, 0);
  free(s);
  FILE *f = tmpfile();
  prof_print_key_averages(f, keys, n, 0);
  long len = ftell(f);
  rewind(f);
  s = calloc(1, (size_t)len + 1);
  assert_i64(fread(s, 1, (size_t)len, f), len);
  fclose(f);
  assert_null(strchr(s, '\x1b')); /* control characters never reach the terminal */
  assert_contains(s, "evil?[31mred?name");
  assert_contains(s, "...");
  free(s);
  free(keys);
  prof_trace_destroy(t);
}

static void no_ranges(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  synth_op(t, "lonely", PROF_KIND_GEMM, 1, 0, 10);
  prof_range_summary *rows;
  int64_t n_rows = -1;
  assert_i64(prof_summarize_ranges(t, &rows, &n_rows), ATTN_STATUS_OK);
  assert_i64(n_rows, 0);
  free(rows);
  prof_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cpu_counts_and_times),
      cmocka_unit_test(sub_ranges_and_nested_ops),
      cmocka_unit_test(gpu_counts_and_launch_apis),
      cmocka_unit_test(key_averages_self_and_device),
      cmocka_unit_test(tables),
      cmocka_unit_test(no_ranges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
