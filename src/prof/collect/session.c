/* The profiling session: one at a time, over every collector compiled in.
 * prof_start starts the CPU collector always (user ranges are what GPU work
 * is attributed to) and each other collector whose PROF_COLLECT_* bits were
 * asked for; one that cannot run here is skipped with its reason, and the
 * session goes on with what it has (a GPU request on a machine without a GPU
 * still profiles the CPU side). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/opts.h"
#include "prof/collect/collector.h"
#ifdef ATTNPROF_HAVE_CUPTI
#include "prof/collect/collector_cupti.h"
#endif

/* The collectors, CPU first; the CUPTI collector joins behind its build
 * switch. */
static const prof_collector *const collectors[] = {
    &prof_collector_cpu,
#ifdef ATTNPROF_HAVE_CUPTI
    &prof_collector_cupti,
#endif
};
enum { N_COLLECTORS = sizeof collectors / sizeof collectors[0] };

static pthread_mutex_t session_mu = PTHREAD_MUTEX_INITIALIZER;
static prof_trace *session_trace;
static int session_started[N_COLLECTORS];
static atomic_uint session_collecting;

size_t prof_collector_list(const char **names, size_t max) {
  for (size_t i = 0; i < N_COLLECTORS && i < max; i++) names[i] = collectors[i]->name;
  return N_COLLECTORS;
}

unsigned prof_collecting(void) { return atomic_load(&session_collecting); }

/* The process name as the kernel knows it, for the trace's metadata. */
static void name_process(prof_trace *t, int64_t pid) {
  char name[64] = "attnprof";
  FILE *f = fopen("/proc/self/comm", "r");
  if (f) {
    if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
    fclose(f);
  }
  prof_trace_set_process(t, pid, name);
}

/* Starts collector i if asked for and usable; on failure appends its reason. */
static unsigned start_one(size_t i, prof_trace *t, unsigned collect, const prof_session_opts *o,
                          char *why, size_t len) {
  const prof_collector *c = collectors[i];
  unsigned want = collect & c->serves;
  char reason[256] = "";
  if (!want && c != &prof_collector_cpu) return 0;
  attn_status st = c->available ? c->available(reason, sizeof reason) : ATTN_STATUS_OK;
  if (!st && (st = c->start(t, collect, o)) != ATTN_STATUS_OK)
    snprintf(reason, sizeof reason, "%s", attn_last_error());
  if (st) {
    size_t used = strlen(why);
    snprintf(why + used, len - used, "%s%s: %s", used ? "; " : "", c->name, reason);
    return 0;
  }
  session_started[i] = 1;
  return want;
}

prof_session_opts prof_session_opts_default(void) {
  prof_session_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  return o;
}

/* A count that is 0 (the default) or within lo..hi. */
static attn_status in_range(const char *what, size_t v, size_t lo, size_t hi) {
  if (!v || (v >= lo && v <= hi)) return ATTN_STATUS_OK;
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "prof_session_opts.%s is %zu: accepted are 0 (the default) or %zu to %zu", what,
                   v, lo, hi);
}

static attn_status take_opts(prof_session_opts *o, const prof_session_opts *given) {
  *o = prof_session_opts_default();
  attn_status st = attn_opts_take(o, sizeof *o, ATTN_OPTS_SIZE(prof_session_opts, defer_mb), given,
                                  "prof_session_opts");
  if (!st && (unsigned)o->all_api > 1)
    st = attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "prof_session_opts.all_api is %d: accepted "
                   "are 0 and 1",
                   o->all_api);
  if (!st && (unsigned)o->sync > PROF_SYNC_FROM_KIND)
    st = attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "prof_session_opts.sync is %d: accepted are "
                   "PROF_SYNC_FROM_CALLBACKS (0) and PROF_SYNC_FROM_KIND (1)",
                   (int)o->sync);
  if (!st) st = in_range("buffer_kb", o->buffer_kb, 16, (size_t)1 << 20);
  if (!st) st = in_range("max_buffers", o->max_buffers, 1, (size_t)1 << 16);
  if (!st) st = in_range("defer_mb", o->defer_mb, 1, (size_t)1 << 20);
  return st;
}

attn_status prof_start(prof_trace *t, unsigned collect, const prof_session_opts *given) {
  prof_session_opts o;
  attn_status st = take_opts(&o, given);
  if (st) return st;
  if (!t) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "prof_start: no trace given");
  if (!collect || (collect & ~(unsigned)(PROF_COLLECT_CPU | PROF_COLLECT_GPU)))
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "prof_start: collectors 0x%x; accepted: PROF_COLLECT_CPU (1), "
                     "PROF_COLLECT_GPU (2) or both",
                     collect);
  pthread_mutex_lock(&session_mu);
  if (session_trace) {
    pthread_mutex_unlock(&session_mu);
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "prof_start: a profiling session is already running; call prof_stop first");
  }
  if (!prof_trace_process_id(t)) name_process(t, (int64_t)getpid());
  if (!prof_trace_epoch_offset(t)) prof_trace_set_epoch_offset(t, attn_clock_epoch_offset());
  char why[512] = "";
  unsigned on = 0;
  for (size_t i = 0; i < N_COLLECTORS; i++) on |= start_one(i, t, collect, &o, why, sizeof why);
  session_trace = t;
  atomic_store(&session_collecting, on);
  pthread_mutex_unlock(&session_mu);
  if ((collect & PROF_COLLECT_GPU) && !(on & PROF_COLLECT_GPU))
    attn_fail(ATTN_STATUS_NO_DEVICE, "GPU collection unavailable (%s); recording CPU events only",
              why[0] ? why : "no GPU collector compiled in: built without CUPTI");
  return ATTN_STATUS_OK;
}

void prof_stop(void) {
  pthread_mutex_lock(&session_mu);
  for (size_t i = N_COLLECTORS; session_trace && i-- > 0;) {
    if (!session_started[i]) continue;
    collectors[i]->flush(session_trace);
    collectors[i]->stop(session_trace);
    session_started[i] = 0;
  }
  session_trace = NULL;
  atomic_store(&session_collecting, 0);
  pthread_mutex_unlock(&session_mu);
}

attn_status prof_prepare(unsigned collect, const prof_session_opts *opts) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  if (!t) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "prof_prepare: no memory for a trace");
  attn_status st = prof_start(t, collect, opts);
  if (!st) prof_stop();
  prof_trace_destroy(t);
  return st;
}
