/* The fuzzing harness (fuzz_harness.h): read, then run what a user's command
 * would run on the result (summary, kernel table with occupancy, key
 * averages, diff against itself, the HTML report), so a hostile trace that
 * the reader accepts cannot crash an analysis either. */
#include "fuzz/fuzz_harness.h"

#include <stdio.h>
#include <stdlib.h>

#include "attnprof/prof.h"

static void analyse(const prof_trace *t) {
  prof_range_summary *ranges = NULL;
  prof_kernel_summary *kernels = NULL;
  prof_key_average *keys = NULL;
  prof_summarize_ranges(t, &ranges);
  prof_summarize_kernels(t, NULL, &kernels);
  prof_key_averages(t, &keys);
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

int attnprof_fuzz_one(const uint8_t *data, size_t size) {
  prof_trace *t = NULL;
  prof_read_stats stats;
  if (prof_read_chrome_trace_buffer(data, size, &t, &stats)) return 0;
  analyse(t);
  prof_trace_destroy(t);
  return 1;
}
