/* The CPU collector: the shared clock, user ranges (push/pop per thread) and
 * CPU ops (begin/end), recorded into the session's trace.
 *
 * Cost when no session runs: prof_op_begin and prof_range_push read one
 * atomic and return; no clock read, no lock. When recording, an event is one
 * clock read at each end and one locked append. Ranges are kept on a
 * per-thread stack; a range is written (as a user_annotation) when it is
 * popped, so a range still open at prof_stop is not in the trace. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prof/collect/collector.h"

/* Deeper nesting is counted as dropped; real code nests a handful. */
enum { RANGE_DEPTH = 256 };
enum { MODE_OFF = 0, MODE_RANGES = 1, MODE_OPS = 2 };

/* The fast-path flag; everything else below is guarded by cpu_mu. */
static atomic_int cpu_mode;
static pthread_mutex_t cpu_mu = PTHREAD_MUTEX_INITIALIZER;
static prof_trace *cpu_trace;
static uint64_t cpu_session; /* counts sessions: a range pushed in one is not popped into another */
static int64_t cpu_session_start;
static int64_t cpu_pid;
/* Kineto gives every CPU op and annotation an "External id"; ours count up
 * per session. */
static int64_t cpu_external_id;

typedef struct {
  const char *name; /* interned in the trace of `session`; NULL = not recorded */
  int64_t start_ns;
  uint64_t session;
} range_entry;

static _Thread_local range_entry tls_ranges[RANGE_DEPTH];
static _Thread_local int tls_depth;
static _Thread_local int64_t tls_tid;

static int64_t thread_id(void) {
  if (!tls_tid) tls_tid = (int64_t)syscall(SYS_gettid);
  return tls_tid;
}

static int mode_now(void) { return atomic_load_explicit(&cpu_mode, memory_order_acquire); }

int prof_active(void) { return mode_now() != MODE_OFF; }

/* Appends a host event of this thread to the session's trace if the session
 * that began it is still the current one. */
static void record(prof_event *e, uint64_t session, int64_t start_ns) {
  e->tid = thread_id();
  pthread_mutex_lock(&cpu_mu);
  if (cpu_trace && (session ? session == cpu_session : start_ns >= cpu_session_start)) {
    e->pid = cpu_pid;
    if (!e->external_id) e->external_id = ++cpu_external_id;
    prof_trace_append(cpu_trace, e, NULL);
  }
  pthread_mutex_unlock(&cpu_mu);
}

static void count_dropped(void) {
  pthread_mutex_lock(&cpu_mu);
  if (cpu_trace) prof_trace_add_dropped(cpu_trace, 1);
  pthread_mutex_unlock(&cpu_mu);
}

/* ---- ranges -------------------------------------------------------------- */

void prof_range_push(const char *name) {
  int d = tls_depth++;
  if (d >= RANGE_DEPTH) {
    if (mode_now()) count_dropped();
    return;
  }
  range_entry *r = &tls_ranges[d];
  r->name = NULL;
  if (!mode_now()) return;
  pthread_mutex_lock(&cpu_mu);
  if (cpu_trace) {
    /* Interned now: the caller's string may be gone by the pop. */
    prof_trace_intern(cpu_trace, name ? name : "",
                      &r->name); /* NULL without memory: not recorded */
    r->session = cpu_session;
  }
  pthread_mutex_unlock(&cpu_mu);
  r->start_ns = attn_clock_ns();
}

void prof_range_pop(void) {
  if (tls_depth == 0) return; /* a pop without a push: nothing to close */
  int d = --tls_depth;
  if (d >= RANGE_DEPTH || !tls_ranges[d].name) return;
  const range_entry *r = &tls_ranges[d];
  prof_event e = prof_event_init(PROF_CAT_USER_ANNOTATION, r->name);
  e.start_ns = r->start_ns;
  e.dur_ns = attn_clock_ns() - r->start_ns;
  record(&e, r->session, 0);
}

/* ---- ops ----------------------------------------------------------------- */

prof_op_scope prof_op_begin(const char *name, prof_kind kind) {
  prof_op_scope op = {name, kind, 0};
  if (mode_now() & MODE_OPS) op.start_ns = attn_clock_ns();
  return op;
}

void prof_op_end(prof_op_scope *op, int64_t bytes, double flops) {
  if (!op->start_ns) return; /* begun while no session recorded ops */
  prof_event e = prof_event_init(PROF_CAT_CPU_OP, op->name ? op->name : "");
  e.kind = op->kind;
  e.start_ns = op->start_ns;
  e.dur_ns = attn_clock_ns() - op->start_ns;
  e.bytes = bytes;
  e.flops = flops;
  op->start_ns = 0; /* ending twice records once */
  record(&e, 0, e.start_ns);
}

/* ---- the collector ------------------------------------------------------- */

static attn_status cpu_start(prof_trace *t, unsigned collect, const prof_session_opts *opts) {
  (void)opts;
  pthread_mutex_lock(&cpu_mu);
  cpu_trace = t;
  cpu_session++;
  cpu_external_id = 0;
  cpu_pid = (int64_t)getpid();
  cpu_session_start = attn_clock_ns();
  /* Ranges always: attribution needs them even when only GPU work is asked for. */
  atomic_store_explicit(&cpu_mode, MODE_RANGES | (collect & PROF_COLLECT_CPU ? MODE_OPS : 0),
                        memory_order_release);
  pthread_mutex_unlock(&cpu_mu);
  return ATTN_STATUS_OK;
}

static void cpu_flush(prof_trace *t) { (void)t; /* events go straight into the trace */ }

static void cpu_stop(prof_trace *t) {
  (void)t;
  pthread_mutex_lock(&cpu_mu);
  atomic_store_explicit(&cpu_mode, MODE_OFF, memory_order_release);
  cpu_trace = NULL;
  pthread_mutex_unlock(&cpu_mu);
}

const prof_collector prof_collector_cpu = {
    .name = "cpu",
    .serves = PROF_COLLECT_CPU,
    .available = NULL,
    .start = cpu_start,
    .flush = cpu_flush,
    .stop = cpu_stop,
};
