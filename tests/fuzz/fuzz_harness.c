/* The fuzzing harness (fuzz_harness.h): read, then run what a user's command
 * would run on the result (summary, kernel table with occupancy, key
 * averages, expectations, diff against itself, the HTML report), so a hostile trace that
 * the reader accepts cannot crash an analysis either. */
#include "fuzz/fuzz_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"
#include "attnprof/testing.h"

/* The expectation metrics, kernel ones included, on the first range. */
static void expect(const prof_trace *t, const prof_range_summary *ranges, int64_t n) {
  static const char text[] = "kernels >= 0, device_us < 1e9, occupancy(top) <= 100%\n"
                             "launch(top) == cudaLaunchKernel\n[]\nmemcpy == 0";
  prof_expect *e = NULL;
  prof_expect_parse(text, &e);
  prof_expect_result r[8];
  int broken;
  if (e && n > 0 && prof_expect_count(e) <= 8)
    prof_expect_evaluate(e, t, ranges[0].name, r, &broken);
  prof_expect_free(e);
}

static void analyse(const prof_trace *t) {
  prof_range_summary *ranges = NULL;
  prof_kernel_summary *kernels = NULL;
  prof_key_average *keys = NULL;
  int64_t n;
  if (prof_summarize_ranges(t, &ranges, &n)) n = -1;
  expect(t, ranges, n);
  int64_t nk;
  prof_summarize_kernels(t, NULL, &kernels, &nk);
  prof_key_averages(t, &keys, &nk);
  free(ranges);
  free(kernels);
  free(keys);
  prof_diff d;
  if (!prof_diff_traces(t, t, NULL, &d)) prof_diff_free(&d);
  FILE *f = fopen("/dev/null", "w");
  if (f) {
    prof_report_input in = {"fuzz", t};
    prof_write_html_report_file(f, &in, 1, NULL);
    fclose(f);
  }
}

/* The reader's tokenizer (chrome_scan.c) and yajl must read every input
 * alike: the same status, counts and events; any difference aborts. */
static void same_as_yajl(const uint8_t *data, size_t size, attn_status st, const prof_trace *t,
                         const prof_read_stats *stats) {
  prof_trace *y = NULL;
  prof_read_stats ys;
  attn_status yst = prof_testing_read_buffer_yajl(data, size, &y, &ys);
  int same = (st == ATTN_STATUS_OK) == (yst == ATTN_STATUS_OK);
  if (same && !st) {
    same = !memcmp(stats, &ys, sizeof ys) && prof_trace_count(t) == prof_trace_count(y) &&
           prof_trace_device_count(t) == prof_trace_device_count(y);
    for (size_t i = 0; same && i < prof_trace_count(t); i++) {
      const prof_event *a = prof_trace_at(t, i), *b = prof_trace_at(y, i);
      same = a->cat == b->cat && a->start_ns == b->start_ns && a->dur_ns == b->dur_ns &&
             a->pid == b->pid && a->tid == b->tid && a->correlation == b->correlation &&
             !strcmp(a->name ? a->name : "", b->name ? b->name : "");
    }
  }
  prof_trace_destroy(y);
  if (!same) {
    fprintf(stderr, "fuzz: the tokenizer and yajl read this input differently (status %d, %d)\n",
            (int)st, (int)yst);
    abort();
  }
}

int attnprof_fuzz_one(const uint8_t *data, size_t size) {
  prof_trace *t = NULL;
  prof_read_stats stats;
  memset(&stats, 0, sizeof stats);
  attn_status st = prof_read_chrome_trace_buffer(data, size, &t, &stats);
  same_as_yajl(data, size, st, t, &stats);
  if (st) return 0;
  analyse(t);
  prof_trace_destroy(t);
  return 1;
}
