/* GPU test (label "gpu"): faults of the CUPTI collector on a real GPU.
 * 1. Records dropped: a pool of one 16 KiB buffer under 20,000 launches
 *    must drop records, and every kernel missing from the trace must be in
 *    the dropped count (lost, never silently).
 * 2. CUPTI held by another subscriber: GPU collection is refused with the
 *    reason and the CPU session goes on; once released, it works.
 * Exits 77 when there is no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"
#include "gpu_test.h"
#include "planted.h"
#include "prof/collect/cupti_lib.h"

enum { FLOOD = 20000 };

static int dropped_records(void) {
  prof_session_opts o = prof_session_opts_default();
  o.buffer_kb = 16, o.max_buffers = 1;
  prof_trace *t = NULL;
  prof_trace_create(&t);
  gpu_test_start_opts_or_skip(t, &o);
  CHECK(planted_flood(FLOOD) == 0);
  prof_stop();
  size_t kernels = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++)
    kernels += prof_trace_at(t, i)->cat == PROF_CAT_KERNEL;
  long long dropped = (long long)prof_trace_dropped(t);
  printf("dropped records: %zu of %d kernels in the trace, %lld records counted as dropped\n",
         kernels, FLOOD, dropped);
  CHECK(dropped > 0);
  CHECK(kernels < FLOOD);
  CHECK((long long)kernels + dropped >= FLOOD);
  prof_trace_destroy(t);
  return 0;
}

static void CUPTIAPI ignore(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c, const void *p) {
  (void)u, (void)d, (void)c, (void)p;
}

static int held_by_another(void) {
  char why[512];
  const cupti_fns *f = cupti_lib_load(why, sizeof why);
  CHECK(f != NULL);
  CUpti_SubscriberHandle other;
  CHECK(f->Subscribe(&other, (CUpti_CallbackFunc)ignore, NULL) == CUPTI_SUCCESS);
  prof_trace *t = NULL;
  prof_trace_create(&t);
  CHECK(prof_start(t, PROF_COLLECT_GPU, NULL) == ATTN_STATUS_OK);
  printf("held: %s\n", attn_last_error());
  CHECK(!(prof_collecting() & PROF_COLLECT_GPU));
  CHECK(strstr(attn_last_error(), "already held by another tool") != NULL);
  prof_stop();
  CHECK(f->Unsubscribe(other) == CUPTI_SUCCESS);
  CHECK(prof_start(t, PROF_COLLECT_GPU, NULL) == ATTN_STATUS_OK);
  CHECK(prof_collecting() & PROF_COLLECT_GPU);
  prof_stop();
  prof_trace_destroy(t);
  return 0;
}

int main(void) {
  if (planted_device_count() < 1) {
    printf("SKIP: no CUDA device visible to the runtime\n");
    return GPU_TEST_SKIP;
  }
  int rc = dropped_records();
  if (!rc) rc = held_by_another();
  if (!rc) printf("ok\n");
  return rc;
}
