/* CUPTI records built by hand -> prof_event (cupti_records.c), field by
 * field. Needs CUPTI's headers, not a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "prof/collect/cupti_records.h"

static const char *fake_name(CUpti_CallbackDomain d, uint32_t cbid) {
  return d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 700 ? "cuLaunchKernelEx" : NULL;
}

static void kernel_record(void **state) {
  (void)state;
  cupti_conv *cv = cupti_conv_create(fake_name);
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = "cudnn_sdpa_fprop";
  k.start = 1000, k.end = 1750;
  k.deviceId = 1, k.contextId = 3, k.streamId = 7, k.correlationId = 99;
  k.gridX = 8, k.gridY = 16, k.gridZ = 2, k.blockX = 128, k.blockY = 3, k.blockZ = 1;
  k.clusterX = 2, k.clusterY = 1, k.clusterZ = 1;
  k.registersPerThread = 168, k.staticSharedMemory = 1024, k.dynamicSharedMemory = 231424;
  k.sharedMemoryExecuted = 233472, k.shmemLimitConfig = CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
  k.maxActiveClusters = 66;
  k.graphId = 5, k.graphNodeId = 12;
  prof_event e;
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&k, &e), 1);
  assert_int_equal(e.cat, PROF_CAT_KERNEL);
  assert_int_equal(e.kind, PROF_KIND_KERNEL);
  assert_string_equal(e.name, "cudnn_sdpa_fprop");
  assert_int_equal(e.start_ns, 1000);
  assert_int_equal(e.dur_ns, 750);
  assert_int_equal(e.pid, 1);
  assert_int_equal(e.tid, 7);
  assert_int_equal(e.device, 1);
  assert_int_equal(e.stream, 7);
  assert_int_equal(e.correlation, 99);
  int grid[3] = {8, 16, 2}, block[3] = {128, 3, 1}, cluster[3] = {2, 1, 1};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(e.fp.grid[i], grid[i]);
    assert_int_equal(e.fp.block[i], block[i]);
    assert_int_equal(e.fp.cluster[i], cluster[i]);
  }
  assert_int_equal(e.fp.registers_per_thread, 168);
  assert_int_equal(e.fp.static_shared_memory, 1024);
  assert_int_equal(e.fp.dynamic_shared_memory, 231424);
  assert_int_equal(e.fp.shared_memory_executed, 233472);
  assert_int_equal(e.fp.shared_memory_limit_optin, 1);
  assert_int_equal(e.fp.max_active_clusters, 66);
  assert_int_equal(e.fp.graph_id, 5); /* a node of graph 5 */
  /* Times stamped on CLOCK_REALTIME are moved onto ours; durations stay. */
  cupti_conv_set_clock_offset(cv, 400);
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&k, &e), 1);
  assert_int_equal(e.start_ns, 600);
  assert_int_equal(e.dur_ns, 750);
  cupti_conv_set_clock_offset(cv, 0);
  /* A later sync on context 3 lands on device 1's lanes, beside stream 7. */
  CUpti_ActivitySynchronization2 s;
  memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 2000, s.end = 2600, s.contextId = 3, s.streamId = 7, s.correlationId = 100;
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&s, &e), 1);
  assert_int_equal(e.cat, PROF_CAT_CUDA_SYNC);
  assert_string_equal(e.name, "Stream Sync");
  assert_int_equal(e.pid, 1);
  assert_int_equal(e.tid, 1000007);
  assert_int_equal(e.dur_ns, 600);
  cupti_conv_destroy(cv);
}

static void copies_sets_and_calls(void **state) {
  (void)state;
  cupti_conv *cv = cupti_conv_create(fake_name);
  CUpti_ActivityMemcpy6 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20, m.start = 10, m.end = 110, m.streamId = 13, m.correlationId = 5;
  prof_event e;
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&m, &e), 1);
  assert_string_equal(e.name, "Memcpy HtoD (Pageable -> Device)");
  assert_int_equal(e.kind, PROF_KIND_MEMCPY);
  assert_int_equal(e.memcpy_kind, PROF_MEMCPY_HTOD);
  assert_int_equal(e.bytes, 1 << 20);
  assert_int_equal(e.stream, 13);
  CUpti_ActivityMemset4 s;
  memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  s.bytes = 4096, s.start = 5, s.end = 6, s.correlationId = 6;
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&s, &e), 1);
  assert_string_equal(e.name, "Memset (Device)");
  assert_int_equal(e.bytes, 4096);
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = 700, a.start = 1, a.end = 4, a.processId = 11, a.threadId = 12, a.correlationId = 7;
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&a, &e), 1);
  assert_int_equal(e.cat, PROF_CAT_CUDA_DRIVER);
  assert_string_equal(e.name, "cuLaunchKernelEx");
  assert_int_equal(e.cbid, 700);
  assert_int_equal(e.pid, 11);
  assert_int_equal(e.tid, 12);
  assert_int_equal(e.correlation, 7);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME, a.cbid = 5; /* no name known: said plainly */
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&a, &e), 1);
  assert_string_equal(e.name, "runtime cbid 5");
  char buf[64];
  assert_string_equal(cupti_strip_version("cudaLaunchKernel_v7000", buf, sizeof buf),
                      "cudaLaunchKernel");
  assert_string_equal(cupti_strip_version("cudaMemcpy_v3020", buf, sizeof buf), "cudaMemcpy");
  assert_string_equal(cupti_strip_version("cuLaunchKernelEx", buf, sizeof buf), "cuLaunchKernelEx");
  assert_string_equal(cupti_strip_version("cuMemcpy_vA_v2", buf, sizeof buf), "cuMemcpy_vA");
  cupti_conv_destroy(cv);
}

static CUpti_ActivityMarker2 marker(unsigned flags, uint32_t id, uint64_t ts, const char *name,
                                    uint32_t tid) {
  CUpti_ActivityMarker2 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = (CUpti_ActivityFlag)flags;
  m.id = id, m.timestamp = ts, m.name = name;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 50, m.objectId.pt.threadId = tid;
  return m;
}

/* NVTX push/pop: nested ranges, two threads, interleaved ends. */
static void nvtx_ranges(void **state) {
  (void)state;
  cupti_conv *cv = cupti_conv_create(NULL);
  char outer[] = "flash_fwd", inner[] = "inner";
  CUpti_ActivityMarker2 m1 = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 100, outer, 70);
  CUpti_ActivityMarker2 m2 = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 150, inner, 71);
  prof_event e;
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&m1, &e), 0);
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&m2, &e), 0);
  outer[0] = 'X'; /* CUPTI's string may be gone by the end record */
  assert_int_equal(cupti_conv_open_ranges(cv), 2);
  CUpti_ActivityMarker2 end1 = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 400, NULL, 70);
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&end1, &e), 1);
  assert_int_equal(e.cat, PROF_CAT_USER_ANNOTATION);
  assert_string_equal(e.name, "flash_fwd");
  assert_int_equal(e.start_ns, 100);
  assert_int_equal(e.dur_ns, 300);
  assert_int_equal(e.pid, 50);
  assert_int_equal(e.tid, 70);
  CUpti_ActivityMarker2 end2 = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 500, NULL, 71);
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&end2, &e), 1);
  assert_string_equal(e.name, "inner");
  assert_int_equal(e.tid, 71);
  assert_int_equal(cupti_conv_open_ranges(cv), 0);
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&end2, &e), -1); /* no start */
  CUpti_ActivityMarker2 mark = marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, 9, inner, 70);
  assert_int_equal(cupti_conv_record(cv, (const CUpti_Activity *)&mark, &e), 0);
  cupti_conv_destroy(cv);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kernel_record),
      cmocka_unit_test(copies_sets_and_calls),
      cmocka_unit_test(nvtx_ranges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
