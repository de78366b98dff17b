/* GPU test (label "gpu"): plant known work (planted_kernels.cu), trace it with
 * the CUPTI collector in-process, and check every field that comes back
 * against what the CUDA runtime says about the same work: kernel footprints,
 * copy and set sizes and kinds, launch APIs by correlation id, timestamps on
 * attn_clock_ns, attribution to the user range and to an NVTX range, device
 * limits, and occupancy against cudaOccupancy*. Exits 77 without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu_test.h"
#include "planted.h"
#include "prof/collect/cupti_lib.h"

static prof_trace *T;
static planted_result R;
/* Interpolated GPU times may sit a little outside the host interval. */
static const int64_t SLACK_NS = 100000;

static const prof_event *kernel_of(const planted_kernel *k) {
  return gpu_test_find(T, PROF_CAT_KERNEL, k->name_part);
}

static void kernels_have_their_footprint(void **state) {
  (void)state;
  for (int i = 0; i < PLANTED_KERNELS; i++) {
    const planted_kernel *k = &R.k[i];
    const prof_event *e = kernel_of(k);
    print_message("kernel %s\n", k->name_part);
    assert_non_null(e);
    assert_int_equal(e->kind, PROF_KIND_KERNEL);
    for (int d = 0; d < 3; d++) {
      assert_int_equal(e->fp.grid[d], k->grid[d]);
      assert_int_equal(e->fp.block[d], k->block[d]);
      assert_int_equal(e->fp.cluster[d], k->cluster[d]);
    }
    /* CUPTI may report registers as allocated, per thread in steps of 8 (the
     * 256-per-warp unit), capped at 255 (seen on the H200: 12 -> 16); the
     * occupancy is the same either way. */
    int allocated = (k->registers + 7) / 8 * 8;
    print_message("  registers: runtime %d, CUPTI %d\n", k->registers, e->fp.registers_per_thread);
    assert_in_range(e->fp.registers_per_thread, k->registers, allocated > 255 ? 255 : allocated);
    assert_int_equal(e->fp.static_shared_memory, k->static_smem);
    assert_int_equal(e->fp.dynamic_shared_memory, k->dynamic_smem);
    assert_int_equal(e->fp.shared_memory_limit_optin, k->optin);
    /* The carveout it ran with holds at least one block of it. */
    assert_true(e->fp.shared_memory_executed >= k->static_smem + k->dynamic_smem);
    assert_int_equal(e->device, 0);
    assert_int_equal(e->pid, 0);
    assert_int_equal(e->tid, e->stream);
  }
}

static void copies_and_sets(void **state) {
  (void)state;
  const prof_event *h2d = gpu_test_find(T, PROF_CAT_GPU_MEMCPY, "HtoD");
  const prof_event *d2h = gpu_test_find(T, PROF_CAT_GPU_MEMCPY, "DtoH");
  const prof_event *set = gpu_test_find(T, PROF_CAT_GPU_MEMSET, "Memset");
  assert_non_null(h2d);
  assert_non_null(d2h);
  assert_non_null(set);
  assert_string_equal(h2d->name, "Memcpy HtoD (Pageable -> Device)");
  assert_string_equal(d2h->name, "Memcpy DtoH (Device -> Pinned)");
  assert_string_equal(set->name, "Memset (Device)");
  assert_int_equal(h2d->bytes, PLANTED_COPY_BYTES);
  assert_int_equal(d2h->bytes, PLANTED_COPY_BYTES);
  assert_int_equal(set->bytes, PLANTED_SET_BYTES);
  assert_int_equal(h2d->memcpy_kind, PROF_MEMCPY_HTOD);
  assert_int_equal(d2h->memcpy_kind, PROF_MEMCPY_DTOH);
  /* The async work shares the planted stream; the sync copy used another. */
  assert_int_equal(d2h->stream, set->stream);
  assert_int_equal(d2h->stream, kernel_of(&R.k[0])->stream);
  assert_int_not_equal(h2d->stream, set->stream);
  assert_int_equal(gpu_test_count(T, PROF_CAT_KERNEL, R.t_begin, R.t_end), PLANTED_KERNELS);
  assert_int_equal(gpu_test_count(T, PROF_CAT_GPU_MEMCPY, R.t_begin, R.t_end), 2);
  assert_int_equal(gpu_test_count(T, PROF_CAT_GPU_MEMSET, R.t_begin, R.t_end), 1);
  const prof_event *sync = gpu_test_find(T, PROF_CAT_CUDA_SYNC, "Stream Sync");
  assert_non_null(sync);
  assert_int_equal(sync->stream, set->stream);
}

/* Each GPU activity's launch call, by correlation id, on this thread, with
 * the API the program used, and every time on the host clock's timeline. */
static void launches_and_clock(void **state) {
  (void)state;
  int64_t tid = (int64_t)syscall(SYS_gettid);
  for (size_t i = 0; i < prof_trace_count(T); i++) {
    const prof_event *e = prof_trace_at(T, i);
    if (e->cat != PROF_CAT_KERNEL && e->cat != PROF_CAT_GPU_MEMCPY && e->cat != PROF_CAT_GPU_MEMSET)
      continue;
    const prof_event *l = gpu_test_launch_of(T, e->correlation);
    print_message("%s <- %s\n", e->name, l ? l->name : "(none)");
    assert_non_null(l);
    assert_int_equal(l->tid, tid);
    assert_int_equal(l->pid, getpid());
    assert_true(l->cbid > 0);
    assert_true(l->start_ns >= R.t_begin && l->start_ns + l->dur_ns <= R.t_end);
    assert_true(e->start_ns + SLACK_NS >= l->start_ns); /* runs after it is launched */
    assert_true(e->start_ns + e->dur_ns <= R.t_end + SLACK_NS);
    assert_true(e->dur_ns > 0);
  }
  for (int i = 0; i < PLANTED_KERNELS; i++) {
    const prof_event *l = gpu_test_launch_of(T, kernel_of(&R.k[i])->correlation);
    assert_string_equal(l->name, R.k[i].launch_api);
  }
  assert_string_equal(
      gpu_test_launch_of(T, gpu_test_find(T, PROF_CAT_GPU_MEMSET, "Memset")->correlation)->name,
      "cudaMemsetAsync");
  assert_string_equal(
      gpu_test_launch_of(T, gpu_test_find(T, PROF_CAT_GPU_MEMCPY, "DtoH")->correlation)->name,
      "cudaMemcpyAsync");
}

static double launch_count(const prof_range_summary *r, const char *api) {
  for (int j = 0; j < r->n_launch_apis; j++)
    if (!strcmp(r->launch_api[j], api)) return r->launch_api_per_call[j];
  return 0;
}

/* The foundation's attribution, fed by GPU data: the user range gets all the
 * planted work, the NVTX range (a CUPTI marker) the one kernel inside it. */
static void attribution_by_correlation(void **state) {
  (void)state;
  prof_range_summary *rows = NULL;
  int64_t n;
  if (prof_summarize_ranges(T, &rows, &n)) n = -1;
  assert_true(n >= 2);
  const prof_range_summary *p = prof_range_summary_find(rows, n, "planted");
  const prof_range_summary *v = prof_range_summary_find(rows, n, "nvtx_planted");
  assert_non_null(p);
  assert_non_null(v);
  assert_true(p->gpu);
  assert_int_equal(p->calls, 1);
  assert_float_equal(p->per_call_kind[PROF_KIND_KERNEL], PLANTED_KERNELS, 0);
  assert_float_equal(p->per_call_kind[PROF_KIND_MEMCPY], 2, 0);
  assert_float_equal(p->per_call_kind[PROF_KIND_MEMSET], 1, 0);
  assert_float_equal(launch_count(p, "cudaLaunchKernel"), 3, 0);
  assert_float_equal(launch_count(p, "cuLaunchKernelEx"), 1, 0);
  assert_float_equal(launch_count(p, "cudaMemsetAsync"), 1, 0);
  assert_true(v->gpu);
  assert_float_equal(v->per_call_total, 1, 0);
  assert_float_equal(launch_count(v, "cudaLaunchKernel"), 1, 0);
  assert_true(p->device_us_per_call > 0);
  free(rows);
  const prof_event *nv = gpu_test_find(T, PROF_CAT_USER_ANNOTATION, "nvtx_planted");
  assert_int_equal(nv->tid, (int64_t)syscall(SYS_gettid));
}

static void device_limits(void **state) {
  (void)state;
  prof_device rt;
  assert_int_equal(planted_device(0, &rt), 0);
  assert_true(prof_trace_device_count(T) >= 1);
  const prof_device *d = prof_trace_device(T, 0);
  assert_int_equal(d->id, 0);
  assert_string_equal(d->name, rt.name);
  assert_int_equal(d->num_sms, rt.num_sms);
  assert_int_equal(d->compute_major, rt.compute_major);
  assert_int_equal(d->max_blocks_per_sm, rt.max_blocks_per_sm);
  assert_int_equal(d->regs_per_sm, rt.regs_per_sm);
  assert_int_equal(d->shared_memory_per_block_optin, rt.shared_memory_per_block_optin);
  assert_int_equal(d->shared_memory_per_sm, rt.shared_memory_per_sm);
  assert_int_equal(d->reserved_shared_memory_per_block, rt.reserved_shared_memory_per_block);
}

/* The calculator on each traced footprint against the runtime's (which
 * assumes the largest carveout: so does ours when told none). */
static void occupancy_matches_runtime(void **state) {
  (void)state;
  const prof_device *d = prof_trace_device(T, 0);
  for (int i = 0; i < PLANTED_KERNELS; i++) {
    prof_footprint fp = kernel_of(&R.k[i])->fp;
    fp.shared_memory_executed = 0;
    prof_occupancy o;
    assert_int_equal(prof_occupancy_compute(&fp, d, &o), 0);
    int ours = o.limit_warps;
    if (o.limit_regs < ours) ours = o.limit_regs;
    if (o.limit_smem < ours) ours = o.limit_smem;
    if (o.limit_blocks < ours) ours = o.limit_blocks;
    print_message("%s: ours %d runtime %d (%.2f%%)\n", R.k[i].name_part, ours,
                  R.k[i].occupancy_blocks, o.theoretical_pct);
    assert_int_equal(ours, R.k[i].occupancy_blocks);
    assert_true(o.theoretical_pct > 0);
  }
  const prof_event *c = kernel_of(&R.k[3]);
  assert_int_equal(c->fp.max_active_clusters, R.k[3].active_clusters);
}

int main(void) {
  char why[512];
  const cupti_fns *f = cupti_lib_load(why, sizeof why);
  /* NVTX reaches CUPTI only through the injection variable, read at the
   * first NVTX call. */
  if (f) setenv("NVTX_INJECTION64_PATH", f->path, 0);
  prof_trace_create(&T);
  gpu_test_start_or_skip(T);
  int rc = planted_run("planted", "nvtx_planted", &R);
  prof_stop();
  if (rc) return 1;
  printf("trace: %zu events, %lld dropped\n", prof_trace_count(T),
         (long long)prof_trace_dropped(T));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kernels_have_their_footprint),
      cmocka_unit_test(copies_and_sets),
      cmocka_unit_test(launches_and_clock),
      cmocka_unit_test(attribution_by_correlation),
      cmocka_unit_test(device_limits),
      cmocka_unit_test(occupancy_matches_runtime),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  if (getenv("ATTNPROF_TEST_TRACE_OUT"))
    prof_write_chrome_trace(T, getenv("ATTNPROF_TEST_TRACE_OUT"));
  prof_trace_destroy(T);
  return failed;
}
