/* Deferred conversion (prof_session_opts.defer_mb, cupti_buffers.c) on buffers and
 * callbacks made by hand, through the collector's own completion path: the
 * same launches and syncs streamed, deferred under a cap never reached, and
 * deferred under a cap reached mid-run must give the same chunks (events,
 * order, chunk boundaries, dropped counts); deferred, no chunk may leave
 * before the session stops. Needs CUPTI's headers, not a GPU. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prof/collect/cupti_api_cb.h"
#include "prof/collect/cupti_buffers.h"
#include "prof_gpu/api_cb_call.h"

enum { CB_LAUNCH = 15, CB_DEVICE = 14, N_BUFFERS = 40, PER_BUFFER = 100, CHUNK = 500 };
enum { STRIDE = (sizeof(CUpti_ActivityKernel10) + 7) & ~7 };

static CUptiResult fake_name(CUpti_CallbackDomain d, uint32_t cbid, const char **name) {
  *name = d != CUPTI_CB_DOMAIN_RUNTIME_API ? NULL
          : cbid == CB_LAUNCH              ? "cudaLaunchKernel_v7000"
          : cbid == CB_DEVICE              ? "cudaDeviceSynchronize_v3020"
                                           : NULL;
  return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

static CUptiResult fake_context_id(CUcontext c, uint32_t *id) {
  (void)c;
  *id = 1;
  return CUPTI_SUCCESS;
}

/* Our buffers hold kernel records at a fixed stride. */
static CUptiResult fake_next(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
  uint8_t *p = *rec ? (uint8_t *)*rec + STRIDE : buf;
  if (p + STRIDE > buf + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)(void *)p;
  return CUPTI_SUCCESS;
}

static size_t next_dropped;
static CUptiResult fake_dropped(CUcontext c, uint32_t s, size_t *n) {
  (void)c, (void)s;
  *n = next_dropped, next_dropped = 0;
  return CUPTI_SUCCESS;
}

/* What the sink got, one line per event and per chunk. The callbacks stamp
 * the real clock and the calling thread (each run has its own), so a call's
 * line has neither. */
static char *got;
static size_t got_len, got_cap;
static int n_chunks, n_events;

static void put(const char *line) {
  size_t n = strlen(line);
  if (got_len + n + 1 > got_cap) {
    got_cap = 2 * (got_len + n + 1);
    got = realloc(got, got_cap);
    assert_non_null(got);
  }
  memcpy(got + got_len, line, n + 1);
  got_len += n;
}

static void on_chunk(prof_trace *chunk, void *ctx) {
  (void)ctx;
  char line[256];
  snprintf(line, sizeof line, "chunk dropped %lld\n", (long long)prof_trace_dropped(chunk));
  put(line);
  n_chunks++;
  for (size_t i = 0; i < prof_trace_count(chunk); i++) {
    const prof_event *e = prof_trace_at(chunk, i);
    int timed = e->cat == PROF_CAT_KERNEL;
    snprintf(line, sizeof line, "%d %s %lld %lld %lld %lld %lld\n", (int)e->cat, e->name,
             timed ? (long long)e->start_ns : -1LL, timed ? (long long)e->dur_ns : -1LL,
             timed ? (long long)e->pid : -1LL, timed ? (long long)e->tid : -1LL,
             (long long)e->correlation);
    put(line);
    n_events++;
  }
  prof_trace_destroy(chunk);
}

static void call(uint32_t cbid, uint32_t corr) {
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, NULL, 0, corr);
}

static void kernel_record(uint8_t *at, uint32_t corr) {
  CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)(void *)at;
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = "_Z12empty_kernelPff";
  k->start = 1000000000ull + corr * 4013ull, k->end = k->start + 1984u + corr % 89;
  k->contextId = 1, k->streamId = 7, k->correlationId = corr;
  k->gridX = k->gridY = k->gridZ = 1, k->blockX = 32, k->blockY = k->blockZ = 1;
}

typedef struct {
  char *out;
  int chunks_while_running, events, launches, syncs;
  int64_t held, refused;
} run_result;

/* One session: N_BUFFERS buffers of PER_BUFFER launches, a sync every fourth
 * buffer, records dropped once, a hand-off (a flush) once. */
static run_result run_here(const cupti_fns *f, const char *defer_mb) {
  run_result r = {0};
  prof_session_opts o = prof_session_opts_default();
  o.buffer_kb = 64; /* 128 KB held per buffer with its calls */
  o.defer_mb = defer_mb ? (size_t)atoll(defer_mb) : 0;
  cupti_buffers_configure(f, &o);
  cupti_buffers_set_sink(on_chunk, NULL, CHUNK);
  cupti_stats before, after;
  cupti_buffers_stats(&before);
  got_len = 0, n_chunks = n_events = 0;
  put("");
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_int_equal(cupti_buffers_set_target(t), 0);
  cupti_api_cb_switched();
  cupti_api_cb_set_sync(f);
  uint32_t corr = 1;
  for (int b = 0; b < N_BUFFERS; b++) {
    uint8_t *buf;
    size_t size, max_records;
    cupti_buffer_requested(&buf, &size, &max_records);
    assert_non_null(buf);
    assert_true(size >= PER_BUFFER * STRIDE);
    for (int k = 0; k < PER_BUFFER; k++, corr++, r.launches++) {
      call(CB_LAUNCH, corr);
      kernel_record(buf + (size_t)k * STRIDE, corr);
    }
    if (b % 4 == 3) call(CB_DEVICE, corr++), r.syncs++;
    if (b == 7) next_dropped = 3;
    cupti_buffer_completed(NULL, 0, buf, size, PER_BUFFER * STRIDE);
    if (b == 10) cupti_buffers_hand_off();
  }
  r.chunks_while_running = n_chunks;
  assert_int_equal(cupti_buffers_set_target(NULL), 0);
  cupti_api_cb_set_sync(NULL);
  prof_trace_destroy(t);
  cupti_buffers_stats(&after);
  r.held = after.buffers_held - before.buffers_held;
  r.refused = after.buffers_refused - before.buffers_refused;
  r.out = strdup(got);
  r.events = n_events;
  print_message("defer %s: %d chunks (%d before the stop), %d events, %lld buffers held\n",
                defer_mb ? defer_mb : "off", n_chunks, r.chunks_while_running, n_events,
                (long long)r.held);
  return r;
}

typedef struct {
  const cupti_fns *f;
  const char *defer_mb;
  run_result r;
} run_args;

static void *run_thread(void *p) {
  run_args *a = p;
  a->r = run_here(a->f, a->defer_mb);
  return NULL;
}

/* Each session on a thread of its own: its calls start a fresh block of the
 * callbacks' pool, as the others' did. */
static run_result run(const cupti_fns *f, const char *defer_mb) {
  run_args a = {f, defer_mb, {0}};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, run_thread, &a), 0);
  pthread_join(th, NULL);
  return a.r;
}

static void deferred_equals_streamed(void **state) {
  (void)state;
  cupti_fns f;
  memset(&f, 0, sizeof f);
  f.GetCallbackName = fake_name;
  f.GetContextId = fake_context_id;
  f.ActivityGetNextRecord = fake_next;
  f.ActivityGetNumDroppedRecords = fake_dropped;
  cupti_api_cb_classify(CUPTI_CB_DOMAIN_RUNTIME_API, CB_DEVICE, "cudaDeviceSynchronize");

  run_result s = run(&f, NULL), d = run(&f, "1024"), c = run(&f, "1");
  /* Streamed: chunks leave during the run; every launch, its kernel, every sync call
   * and its sync record, and the dropped records, are in them. */
  assert_true(s.chunks_while_running > 0);
  int dropped = 0;
  for (const char *p = s.out; (p = strstr(p, "chunk dropped 3\n")); p++) dropped++;
  assert_int_equal(s.events, 2 * s.launches + 2 * s.syncs);
  assert_int_equal(dropped, 1);
  /* Deferred, cap never reached: nothing leaves before the stop, all is held. */
  assert_int_equal(d.chunks_while_running, 0);
  assert_int_equal(d.held, N_BUFFERS);
  assert_string_equal(d.out, s.out);
  /* Deferred, cap reached: some held, then streamed; the same output. */
  assert_true(c.held > 0 && c.held < N_BUFFERS);
  assert_true(c.chunks_while_running > 0);
  assert_string_equal(c.out, s.out);
  assert_int_equal(s.refused + d.refused + c.refused, 0);
  free(s.out), free(d.out), free(c.out);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(deferred_equals_streamed)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
