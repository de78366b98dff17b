/* The kernel table of a trace read from disk: every kernel of the fixtures'
 * attn_fwd with its calls, footprint and launch API as the file holds them
 * (jansson oracle), the file's occupancy figure kept beside ours, and ours
 * recomputed by the occupancy calculator: where torch.profiler wrote 0% for a
 * kernel that ran with more than 48 KiB of shared memory, ours is not 0. */
#include <stdio.h>
#include <stdlib.h>

#include "prof/prof_test.h"
#include "reader/reader_oracle.h"

static const char *const fixtures[] = {"trace_naive.json", "trace_naive_inplace.json",
                                       "trace_efficient.json", "trace_flash.json"};

static const prof_kernel_summary *row_named(const prof_kernel_summary *rows, int64_t n,
                                            const char *name) {
  for (int64_t i = 0; i < n; i++)
    if (!strcmp(rows[i].name, name)) return &rows[i];
  fail_msg("no kernel row %.80s", name);
  return NULL;
}

static void check_row(const oracle *o, size_t i, const prof_kernel_summary *k,
                      const prof_device *dev) {
  assert_i64(k->calls, o->count[i]);
  assert_str(k->launch_api, o->launch[i]);
  for (int d = 0; d < 3; d++) {
    assert_i64(k->fp.grid[d], o->grid[i][d]);
    assert_i64(k->fp.block[d], o->block[i][d]);
  }
  assert_i64(k->fp.registers_per_thread, o->regs[i]);
  assert_i64(k->fp.static_shared_memory + k->fp.dynamic_shared_memory, o->smem[i]);
  assert_near(k->fp.occupancy_pct_in_file, o->occupancy_in_file[i], 0);
  prof_footprint fp = k->fp;
  prof_occupancy occ;
  prof_occupancy_compute(&fp, dev, &occ);
  assert_near(k->occupancy_pct, occ.achieved_est_pct, 1e-9);
  assert_near(k->occupancy_theoretical_pct, occ.theoretical_pct, 1e-9);
  /* PyTorch's 0%: the opt-in shared memory it ignores; ours sees the blocks that ran. */
  if (o->smem[i] > 48 * 1024 && o->occupancy_in_file[i] == 0) assert_true(k->occupancy_pct > 0);
}

static void kernels_match_the_files(void **state) {
  size_t zero_in_file_but_not_ours = 0;
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", READER_FIXTURES, fixtures[f]);
    oracle o;
    oracle_of(path, "attn_fwd", &o);
    prof_trace *t;
    if (prof_read_chrome_trace(path, &t, NULL)) fail_msg("%s", attn_last_error());
    prof_kernel_summary *rows;
    int64_t n;
    if (prof_summarize_kernels(t, "attn_fwd", &rows, &n)) n = -1;
    int64_t kernels = 0;
    for (size_t i = 0; i < o.n_names; i++) {
      if (!strncmp(o.names[i], "Memcpy", 6) || !strncmp(o.names[i], "Memset", 6)) continue;
      check_row(&o, i, row_named(rows, n, o.names[i]), prof_trace_device(t, 0));
      kernels++;
      zero_in_file_but_not_ours += o.occupancy_in_file[i] == 0 && o.smem[i] > 48 * 1024;
    }
    assert_i64(n, kernels);
    free(rows);
    prof_trace_destroy(t);
    oracle_free(&o);
  }
  assert_true(zero_in_file_but_not_ours > 0); /* the fixtures' nvjet GEMMs */
}

/* Without a range every kernel counts, the warm-up's leftover too. */
static void no_range_counts_every_kernel(void **state) {
  char path[512];
  snprintf(path, sizeof path, "%s/trace_naive.json", READER_FIXTURES);
  prof_trace *t;
  if (prof_read_chrome_trace(path, &t, NULL)) fail_msg("%s", attn_last_error());
  prof_kernel_summary *rows;
  int64_t n = -1, calls = 0, in_trace = 0;
  assert_i64(prof_summarize_kernels(t, NULL, &rows, &n), ATTN_STATUS_OK);
  for (int64_t i = 0; i < n; i++) calls += rows[i].calls;
  for (size_t i = 0; i < prof_trace_count(t); i++)
    in_trace += prof_trace_at(t, i)->cat == PROF_CAT_KERNEL;
  assert_i64(calls, in_trace);
  for (int64_t i = 1; i < n; i++)
    assert_true(rows[i - 1].device_us_total >= rows[i].device_us_total);
  free(rows);
  prof_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kernels_match_the_files),
      cmocka_unit_test(no_range_counts_every_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
