/* Communication hidden under compute, per device and per step, alone and on
 * per-rank traces merged by prof_merge, on synthetic traces (times in ns,
 * figures in µs). */
#include <stdlib.h>

#include "attnprof/prof/ranks.h"
#include "prof/analysis/nest.h"
#include "prof/prof_test.h"

static void comm_kernels_by_name(void **state) {
  assert_true(prof_is_comm_kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  assert_true(prof_is_comm_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t"));
  assert_true(prof_is_comm_kernel("_Z24ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE"));
  assert_true(prof_is_comm_kernel("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
  assert_false(prof_is_comm_kernel("_Z22flash_fwd_wgmma_kernelI13__nv_bfloat16Li128EEv"));
  assert_false(prof_is_comm_kernel("_Z"));
  assert_false(prof_is_comm_kernel("void flash_fwd_kernel"));
  assert_false(prof_is_comm_kernel("flash_fwd_kernel"));
  assert_false(prof_is_comm_kernel("cp_merge_kernel"));
  assert_false(prof_is_comm_kernel(NULL));
}

/* One rank on `device`: step 0 hides all its transfer, step 1 part of it.
 * `shift` moves the GPU clock; correlation ids start at `corr`. */
static void one_rank(prof_trace *t, int device, int64_t shift, int64_t corr) {
  int64_t tid = 1 + device;
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", tid, 10, 5, corr);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernelExC", tid, 20, 5, corr + 1);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", tid, 30, 5, corr + 2);
  synth_range(t, "cp.step 0", tid, 0, 100);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", tid, 110, 5, corr + 3);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernelExC", tid, 120, 5, corr + 4);
  synth_range(t, "cp.step 1", tid, 100, 100);
  /* step 0: flash [1000, 2000] and a merge [1500, 1900] on one stream each,
   * NCCL [1200, 1800]: all 600 ns hidden; step 1: flash [2000, 2500], NCCL
   * [2300, 2800]: 200 of 500 hidden */
  synth_gpu(t, PROF_CAT_KERNEL, "flash_fwd", device, 7, shift + 1000, 1000, corr);
  synth_gpu(t, PROF_CAT_KERNEL, "ncclDevKernel_SendRecv", device, 9, shift + 1200, 600, corr + 1);
  synth_gpu(t, PROF_CAT_KERNEL, "cp_merge_kernel", device, 8, shift + 1500, 400, corr + 2);
  synth_gpu(t, PROF_CAT_KERNEL, "flash_fwd", device, 7, shift + 2000, 500, corr + 3);
  synth_gpu(t, PROF_CAT_KERNEL, "ncclDevKernel_SendRecv", device, 9, shift + 2300, 500, corr + 4);
}

static const prof_overlap_row *row_of(const prof_overlap_row *rows, int64_t n, int device,
                                      const char *step) {
  for (int64_t i = 0; i < n; i++)
    if (rows[i].device == device && !strcmp(rows[i].step, step)) return &rows[i];
  fail_msg("no row for device %d step %s", device, step);
  return NULL;
}

/* extra_us: a lone collective's time outside the steps (none hidden). */
static void check_rank_rows(const prof_overlap_row *rows, int64_t n, int device, double extra_us) {
  const prof_overlap_row *all = row_of(rows, n, device, "(all)");
  assert_i64(all->compute_kernels, 3);
  assert_i64(all->comm_kernels, 2 + (extra_us > 0));
  assert_near(all->compute_us, 1.5, 1e-9); /* [1000, 2500]: the merge overlaps flash */
  assert_near(all->comm_us, 1.1 + extra_us, 1e-9);
  assert_near(all->hidden_us, 0.8, 1e-9);
  assert_near(all->hidden_share, 0.8 / (1.1 + extra_us), 1e-9);
  const prof_overlap_row *s0 = row_of(rows, n, device, "cp.step 0");
  assert_near(s0->compute_us, 1.0, 1e-9);
  assert_near(s0->comm_us, 0.6, 1e-9);
  assert_near(s0->hidden_share, 1.0, 1e-9);
  const prof_overlap_row *s1 = row_of(rows, n, device, "cp.step 1");
  assert_near(s1->compute_us, 0.5, 1e-9);
  assert_near(s1->hidden_us, 0.2, 1e-9);
  assert_near(s1->hidden_share, 0.4, 1e-9);
}

static void overlap_per_step(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  one_rank(t, 0, 0, 1);
  /* device 1 transfers while device 0 computes: nothing of it is hidden */
  synth_gpu(t, PROF_CAT_KERNEL, "ncclDevKernel_SendRecv", 1, 9, 1000, 1000, 0);
  prof_overlap_row *rows = NULL;
  int64_t n;
  if (prof_overlap_summarize(t, &rows, &n)) n = -1;
  assert_i64(n, 5); /* device 0: all, 2 steps; device 1: all, (none) */
  assert_str(rows[0].step, "(all)");
  assert_str(rows[1].step, "cp.step 0");
  assert_str(rows[2].step, "cp.step 1");
  check_rank_rows(rows, n, 0, 0);
  const prof_overlap_row *d1 = row_of(rows, n, 1, "(none)");
  assert_near(d1->comm_us, 1.0, 1e-9);
  assert_near(d1->hidden_us, 0.0, 1e-9);
  assert_near(d1->hidden_share, 0.0, 1e-9);
  assert_true(isnan(row_of(rows, n, 0, "(all)")->hidden_share) == 0);
  free(rows);
  prof_trace_destroy(t);
}

/* Two ranks' traces (own devices, the same host pid and correlation ids, rank
 * 1's clock 500 ns ahead) merged: each keeps its rows, on one clock. */
static void overlap_after_merge(void **state) {
  prof_trace *r0 = new_trace(), *r1 = new_trace();
  one_rank(r0, 0, 0, 1);
  one_rank(r1, 1, 500, 1);
  /* a jittered third collective on each: ends differ by 490 and 510 */
  synth_gpu(r0, PROF_CAT_KERNEL, "ncclDevKernel_SendRecv", 0, 9, 4000, 100, 0);
  synth_gpu(r1, PROF_CAT_KERNEL, "ncclDevKernel_SendRecv", 1, 9, 4510, 100, 0);
  prof_trace *ranks[2] = {r0, r1};
  prof_merge_input info[2];
  prof_trace *m = NULL;
  assert_i64(prof_merge(ranks, 2, info, &m), ATTN_STATUS_OK);
  assert_non_null(m);
  assert_i64(info[1].offset_ns, -500); /* median of -500, -500, -510 */
  prof_overlap_row *rows = NULL;
  int64_t n;
  if (prof_overlap_summarize(m, &rows, &n)) n = -1;
  assert_i64(n, 8); /* per device: all, 2 steps, (none) for the lone collective */
  check_rank_rows(rows, n, 0, 0.1);
  check_rank_rows(rows, n, 1, 0.1);
  free(rows);
  /* rank 1's first flash kernel lands on rank 0's time */
  int64_t first = -1;
  for (size_t i = 0; i < prof_trace_count(m); i++) {
    const prof_event *e = prof_trace_at(m, i);
    if (e->cat == PROF_CAT_KERNEL && e->device == 1 && !strcmp(e->name, "flash_fwd") &&
        (first < 0 || e->start_ns < first))
      first = e->start_ns;
  }
  assert_i64(first, 1000);
  prof_trace_destroy(m);
  prof_trace_destroy(r0);
  prof_trace_destroy(r1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(comm_kernels_by_name),
      cmocka_unit_test(overlap_per_step),
      cmocka_unit_test(overlap_after_merge),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
