/* The CPU collector and the session: ranges and ops with this process's pid
 * and each thread's tid, nothing recorded outside a session, one session at a
 * time, a GPU request without a GPU collector falling back to the CPU,
 * several threads recording at once, and prof_prepare. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "prof/prof_test.h"

static void records_ranges_and_ops(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_op_scope early = prof_op_begin("before start", PROF_KIND_OTHER);
  prof_range_push("not recorded");
  assert_false(prof_active());
  assert_i64(prof_start(t, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  assert_true(prof_active());
  assert_i64(prof_collecting(), PROF_COLLECT_CPU);
  prof_op_end(&early, 1, 1); /* begun before the session: dropped */
  prof_range_pop();          /* pushed before the session: dropped */
  int64_t before = attn_clock_ns();
  char name[16] = "attn_fwd";
  prof_range_push(name);
  strcpy(name, "clobbered"); /* the range keeps the name it was given */
  prof_op_scope op = prof_op_begin("gemm", PROF_KIND_GEMM);
  prof_op_end(&op, 4096, 1e6);
  prof_op_end(&op, 4096, 1e6); /* a second end records nothing */
  prof_range_pop();
  prof_range_pop(); /* more pops than pushes: harmless */
  int64_t after = attn_clock_ns();
  prof_stop();
  assert_false(prof_active());
  assert_i64(prof_collecting(), 0);
  prof_op_scope late = prof_op_begin("after stop", PROF_KIND_OTHER);
  prof_op_end(&late, 0, 0);
  assert_i64(prof_trace_count(t), 2);
  const prof_event *g = prof_trace_at(t, 0), *r = prof_trace_at(t, 1);
  assert_i64(g->cat, PROF_CAT_CPU_OP);
  assert_str(g->name, "gemm");
  assert_i64(g->kind, PROF_KIND_GEMM);
  assert_i64(g->bytes, 4096);
  assert_near(g->flops, 1e6, 0);
  assert_i64(g->pid, getpid());
  assert_i64(g->tid, syscall(SYS_gettid));
  assert_i64(r->cat, PROF_CAT_USER_ANNOTATION);
  assert_str(r->name, "attn_fwd");
  assert_true(r->start_ns >= before && r->start_ns + r->dur_ns <= after);
  assert_true(g->start_ns >= r->start_ns && g->start_ns + g->dur_ns <= r->start_ns + r->dur_ns);
  assert_i64(prof_trace_process_id(t), getpid());
  assert_non_null(prof_trace_process_name(t));
  assert_true(prof_trace_epoch_offset(t) > 1600000000LL * 1000000000LL - attn_clock_ns());
  prof_trace_destroy(t);
}

static void one_session_at_a_time(void **state) {
  prof_trace *a = new_trace(), *b = new_trace();
  assert_i64(prof_start(a, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  assert_i64(prof_start(b, PROF_COLLECT_CPU, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "already running");
  prof_range_push("in a");
  prof_stop();
  assert_i64(prof_start(b, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  prof_range_pop(); /* pushed in a's session: not written into b */
  prof_stop();
  prof_stop(); /* stopping twice is harmless */
  assert_i64(prof_trace_count(a), 0);
  assert_i64(prof_trace_count(b), 0);
  assert_i64(prof_start(NULL, PROF_COLLECT_CPU, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  assert_i64(prof_start(a, 0, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "PROF_COLLECT_CPU");
  assert_i64(prof_start(a, 8, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  prof_trace_destroy(a);
  prof_trace_destroy(b);
}

/* Session options: a size the library does not know and values out of
 * range are refused with the field named; no session starts. */
static void session_opts_checked(void **state) {
  (void)state;
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_session_opts o = prof_session_opts_default();
  assert_i64(o.size, sizeof o);
  o.size = 4;
  assert_i64(prof_start(t, PROF_COLLECT_CPU, &o), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "prof_session_opts.size");
  o.size = sizeof o + 16;
  assert_i64(prof_prepare(PROF_COLLECT_CPU, &o), ATTN_STATUS_INVALID_ARGUMENT);
  o = prof_session_opts_default();
  o.buffer_kb = 8;
  assert_i64(prof_start(t, PROF_COLLECT_CPU, &o), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "buffer_kb is 8");
  o = prof_session_opts_default();
  o.sync = (prof_sync_source)7;
  assert_i64(prof_start(t, PROF_COLLECT_CPU, &o), ATTN_STATUS_INVALID_ARGUMENT);
  assert_i64(prof_active(), 0);
  o = prof_session_opts_default();
  o.defer_mb = 64, o.max_buffers = 4, o.all_api = 1;
  assert_i64(prof_start(t, PROF_COLLECT_CPU, &o), ATTN_STATUS_OK);
  prof_stop();
  prof_trace_destroy(t);
}

/* Without a GPU collector compiled in (or usable), a GPU request still
 * profiles the CPU side, says why, and returns OK. */
static void gpu_request_falls_back(void **state) {
  const char *names[8];
  size_t n = prof_collector_list(names, 8);
  assert_true(n >= 1);
  assert_str(names[0], "cpu");
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_i64(prof_start(t, PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL), ATTN_STATUS_OK);
  if (prof_collecting() & PROF_COLLECT_GPU) {
    prof_stop();
    prof_trace_destroy(t);
    skip(); /* a GPU collector ran: the fallback is not what happens here */
  }
  assert_contains(attn_last_error(), "GPU collection unavailable");
  assert_contains(attn_last_error(), "CPU events only");
  assert_i64(prof_collecting(), PROF_COLLECT_CPU);
  prof_range_push("r");
  prof_op_scope op = prof_op_begin("op", PROF_KIND_COPY);
  prof_op_end(&op, 0, 0);
  prof_range_pop();
  prof_stop();
  assert_i64(prof_trace_count(t), 2);
  /* GPU only: user ranges still (work is attributed to them), no CPU ops. */
  prof_trace *g = NULL;
  prof_trace_create(&g);
  assert_i64(prof_start(g, PROF_COLLECT_GPU, NULL), ATTN_STATUS_OK);
  prof_range_push("r");
  op = prof_op_begin("op", PROF_KIND_COPY);
  prof_op_end(&op, 0, 0);
  prof_range_pop();
  prof_stop();
  assert_i64(prof_trace_count(g), 1);
  assert_i64(prof_trace_at(g, 0)->cat, PROF_CAT_USER_ANNOTATION);
  prof_trace_destroy(t);
  prof_trace_destroy(g);
}

/* prof_prepare: a session started and stopped, nothing left running or kept
 * in the next session; refused (and the running session untouched) while one
 * runs; prof_start's argument checks. */
static void prepare_leaves_nothing(void **state) {
  assert_i64(prof_prepare(PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL), ATTN_STATUS_OK);
  assert_false(prof_active());
  prof_range_push("after prepare, before start"); /* outside any session: dropped */
  prof_range_pop();
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_i64(prof_start(t, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  assert_i64(prof_prepare(PROF_COLLECT_CPU, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "already running");
  assert_true(prof_active());
  prof_range_push("kept");
  prof_range_pop();
  prof_stop();
  assert_i64(prof_trace_count(t), 1);
  assert_str(prof_trace_at(t, 0)->name, "kept");
  assert_i64(prof_prepare(0, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "PROF_COLLECT_CPU");
  prof_trace_destroy(t);
}

static void deep_nesting_is_counted(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_i64(prof_start(t, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  for (int i = 0; i < 300; i++) prof_range_push("deep");
  for (int i = 0; i < 300; i++) prof_range_pop();
  prof_stop();
  assert_i64(prof_trace_count(t) + (size_t)prof_trace_dropped(t), 300);
  assert_true(prof_trace_dropped(t) > 0);
  prof_trace_destroy(t);
}

enum { THREADS = 6, FORWARDS = 50, OPS = 7 };

static void *worker(void *arg) {
  int64_t *tid = arg;
  *tid = syscall(SYS_gettid);
  for (int f = 0; f < FORWARDS; f++) {
    prof_range_push("thread_fwd");
    for (int o = 0; o < OPS; o++) {
      prof_op_scope op =
          prof_op_begin(o % 2 ? "gemm" : "softmax", o % 2 ? PROF_KIND_GEMM : PROF_KIND_SOFTMAX);
      prof_op_end(&op, o, o);
    }
    prof_range_pop();
  }
  return NULL;
}

/* Ops from several threads at once: every op kept, each in its own thread's
 * range, so the summary sees OPS ops per call. */
static void many_threads(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_i64(prof_start(t, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  pthread_t th[THREADS];
  int64_t tids[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, &tids[i]);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  prof_stop();
  assert_i64(prof_trace_count(t), THREADS * FORWARDS * (OPS + 1));
  int64_t *range = NULL;
  prof_attribute(t, &range);
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    int known = 0;
    for (int k = 0; k < THREADS; k++) known |= e->tid == tids[k];
    if (!known) fail_msg("event %zu has tid %lld of no worker", i, (long long)e->tid);
    if (e->cat != PROF_CAT_CPU_OP) continue;
    if (range[i] < 0 || prof_trace_at(t, (size_t)range[i])->tid != e->tid)
      fail_msg("op %zu (tid %lld) attributed to %lld", i, (long long)e->tid, (long long)range[i]);
  }
  free(range);
  prof_range_summary *rows;
  int64_t n_rows = 0;
  assert_i64(prof_summarize_ranges(t, &rows, &n_rows), ATTN_STATUS_OK);
  assert_i64(n_rows, 1);
  assert_i64(rows[0].calls, THREADS * FORWARDS);
  assert_near(rows[0].per_call_total, OPS, 0);
  assert_near(rows[0].per_call_kind[PROF_KIND_GEMM], OPS / 2, 0);
  assert_near(rows[0].per_call_kind[PROF_KIND_SOFTMAX], OPS - OPS / 2, 0);
  free(rows);
  prof_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(records_ranges_and_ops),  cmocka_unit_test(one_session_at_a_time),
      cmocka_unit_test(session_opts_checked),    cmocka_unit_test(gpu_request_falls_back),
      cmocka_unit_test(deep_nesting_is_counted), cmocka_unit_test(many_threads),
      cmocka_unit_test(prepare_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
