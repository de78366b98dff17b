/* GPU test (label "gpu"): sync records from the sync calls' callbacks (the
 * default) against CUPTI's SYNCHRONIZATION kind (PROF_SYNC_FROM_KIND), on the same 10 sync calls (planted_syncs) in two sessions of one
 * process, so the streams and their ids are the same in both. The trace must
 * hold the same sync events either way: one per call, in call order, with the
 * same name, stream, lane and device, tied by correlation id to the call that
 * made it; the callback's record spans exactly its call, CUPTI's lies inside
 * it. Exits 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"
#include "gpu_test.h"
#include "planted.h"

enum { MAX_ROWS = 64 };

typedef struct {
  const prof_event *sync, *call;
} row;

/* The sync events inside [t0, t1] with the call each is tied to, in the
 * calls' order; -1 when one has no call. */
static int syncs_of(const prof_trace *t, int64_t t0, int64_t t1, row *rows) {
  int n = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_CUDA_SYNC || e->start_ns < t0 || e->start_ns > t1) continue;
    const prof_event *c = gpu_test_launch_of(t, e->correlation);
    if (!c || n == MAX_ROWS) return -1;
    int k = n++;
    for (; k > 0 && rows[k - 1].call->start_ns > c->start_ns; k--) rows[k] = rows[k - 1];
    rows[k] = (row){e, c};
  }
  return n;
}

static int traced(const char *sync_mode, prof_trace **t, row *rows) {
  prof_session_opts o = prof_session_opts_default();
  if (sync_mode && !strcmp(sync_mode, "kind")) o.sync = PROF_SYNC_FROM_KIND;
  prof_trace_create(t);
  gpu_test_start_opts_or_skip(*t, &o);
  int64_t t0, t1;
  int rc = planted_syncs(&t0, &t1);
  prof_stop();
  if (rc) return -1;
  int n = syncs_of(*t, t0, t1, rows);
  printf("%s: %d sync events\n", sync_mode ? sync_mode : "default", n);
  for (int i = 0; i < n; i++)
    printf("  %-18s stream %d lane %lld device %d <- %s (%lld ns; call %lld ns)\n",
           rows[i].sync->name, (int)rows[i].sync->stream, (long long)rows[i].sync->tid,
           (int)rows[i].sync->device, rows[i].call->name, (long long)rows[i].sync->dur_ns,
           (long long)rows[i].call->dur_ns);
  return n;
}

int main(void) {
  static row kind[MAX_ROWS], cb[MAX_ROWS];
  prof_trace *tk, *tc;
  if (planted_device_count() < 1) return printf("SKIP: no GPU\n"), GPU_TEST_SKIP;
  CHECK(planted_syncs_setup() == 0);
  int nk = traced("kind", &tk, kind);
  int nc = traced(NULL, &tc, cb); /* the default: the callbacks (checked by their times below) */
  CHECK(nc == PLANTED_SYNC_CALLS);
  CHECK(nk == nc);
  for (int i = 0; i < nc; i++) {
    const prof_event *a = kind[i].sync, *b = cb[i].sync;
    CHECK(!strcmp(a->name, b->name));
    CHECK(a->stream == b->stream);
    CHECK(a->tid == b->tid);
    CHECK(a->pid == b->pid && a->device == b->device);
    CHECK(!strcmp(kind[i].call->name, cb[i].call->name));
    /* Timed by its call: the callback's record is the call's span. */
    CHECK(b->start_ns == cb[i].call->start_ns && b->dur_ns == cb[i].call->dur_ns);
    CHECK(a->start_ns >= kind[i].call->start_ns);
    CHECK(a->start_ns + a->dur_ns <= kind[i].call->start_ns + kind[i].call->dur_ns);
  }
  prof_trace_destroy(tk);
  prof_trace_destroy(tc);
  printf("the same %d sync events both ways\n", nc);
  return 0;
}
