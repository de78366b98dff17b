/* libattnprof_inject.so: the CUPTI collector inside an unmodified CUDA
 * program. The CUDA driver loads it from CUDA_INJECTION64_PATH at cuInit and
 * calls InitializeInjection; `attnprof trace` sets that variable and these:
 *   ATTNPROF_TRACE_OUT      the streamed trace (chrome_stream.c)
 *   ATTNPROF_TRACE_REPORT   key=value lines for attnprof trace: how far the
 *                           trace got (safe offset), counts, faults
 *   ATTNPROF_TRACE_ROOT_PID the program's own process; any other process
 *                           that inherits the environment (an exec'd child)
 *                           writes OUT.<pid> and REPORT.<pid> instead
 *   ATTNPROF_TRACE_CHUNK    events per streamed chunk (default 65536)
 *   ATTNPROF_CUPTI_API=all, ATTNPROF_CUPTI_SYNC=kind|callback,
 *   ATTNPROF_CUPTI_BUFFER_KB, ATTNPROF_CUPTI_MAX_BUFFERS, ATTNPROF_CUPTI_DEFER
 *                           the session's options (prof_session_opts), given
 *                           to prof_start: the library itself reads none
 *
 * The trace is finished at exit (on_exit, so also exit() from another
 * thread; the report gets the exit status, so a rank that exits non-zero
 * mid-run is said as such) and, best effort, on a fatal signal; if the
 * program dies without either, the report's safe offset lets attnprof
 * trace cut the file back to its last whole chunk. The library links only
 * the profiler's own sources (no attention engine, no CUDA runtime, no
 * BLAS) so it adds nothing to the program's process but itself and
 * libcupti. */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "inject_report.h"
#include "prof/io/chrome_stream.h"
#include "prof/collect/collector_cupti.h"

#define EXPORT __attribute__((visibility("default")))

static atomic_int started, finishing;
static chrome_stream *stream;
static prof_trace *session;
static int fatal_signal;
static int64_t write_ns; /* time in on_chunk: the streamed export's cost */

static void say(const char *what, const char *why) {
  fprintf(stderr, "attnprof: %s%s%s\n", what, why ? ": " : "", why ? why : "");
}

/* A chunk from the collector: written, flushed, and the report's safe offset
 * moved past it. Runs under the collector's lock, so chunks come in order. */
static void on_chunk(prof_trace *chunk, void *ctx) {
  (void)ctx;
  if (!stream) {
    prof_trace_destroy(chunk);
    return;
  }
  int64_t t0 = attn_clock_ns();
  int err = chrome_stream_chunk(stream, chunk);
  write_ns += attn_clock_ns() - t0;
  inject_report_progress(chrome_stream_safe_offset(stream), chrome_stream_events(stream),
                         chrome_stream_dropped(stream));
  if (err) inject_report_error("writing the trace failed", strerror(err));
}

static void process_name(char *buf, size_t len) {
  snprintf(buf, len, "process");
  FILE *f = fopen("/proc/self/comm", "r");
  if (f) {
    if (fgets(buf, (int)len, f)) buf[strcspn(buf, "\n")] = 0;
    fclose(f);
  }
}

/* Stops collection, writes the rest and closes the trace; once. */
static void finish(void) {
  if (!atomic_load(&started) || atomic_exchange(&finishing, 1)) return;
  prof_stop(); /* flush: the last chunks reach on_chunk */
  cupti_stats st;
  cupti_collector_stats(&st);
  char name[64];
  process_name(name, sizeof name);
  int64_t t0 = attn_clock_ns();
  int err = chrome_stream_close(stream, 0, (int64_t)getpid(), name);
  write_ns += attn_clock_ns() - t0;
  stream = NULL;
  inject_report_final(&st, err, fatal_signal, (double)write_ns / 1e9);
  cupti_collector_shutdown(); /* cuptiFinalize: CUDA 13.0's CUPTI can crash at exit without it */
}

static void at_exit(int status, void *arg) {
  (void)arg;
  inject_report_exit_status(status);
  finish();
}

/* ---- fatal signals ------------------------------------------------------- */

static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM};
enum { N_FATAL = sizeof fatal / sizeof fatal[0] };
static struct sigaction previous[N_FATAL];

/* Best effort: finishing takes locks and writes files, which a signal
 * handler should not; a watchdog alarm ends a finish that hangs, and the
 * report's safe offset still saves what was flushed before. */
static void on_fatal(int sig) {
  fatal_signal = sig;
  alarm(10);
  finish();
  for (int i = 0; i < N_FATAL; i++)
    if (fatal[i] == sig) sigaction(sig, &previous[i], NULL);
  raise(sig);
}

static void hook_signals(void) {
  for (int i = 0; i < N_FATAL; i++) {
    struct sigaction old;
    if (sigaction(fatal[i], NULL, &old)) continue;
    /* A program that handles SIGTERM itself decides how it ends. */
    if (fatal[i] == SIGTERM && old.sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    previous[i] = old;
    sigaction(fatal[i], &sa, NULL);
  }
}

/* ---- start --------------------------------------------------------------- */

static int is_root_process(void) {
  const char *root = getenv("ATTNPROF_TRACE_ROOT_PID");
  return !root || atoll(root) == (long long)getpid();
}

/* The variable's path, with ".<pid>" appended in a process the traced
 * program started (torchrun's workers, a script's CUDA child): each process
 * streams its own trace, which attnprof trace collects when the program ends.
 * The variables are inherited, so following exec'd children needs no more. */
static const char *own_path(const char *var, char *buf, size_t len) {
  const char *v = getenv(var);
  if (!v || !*v || is_root_process()) return v;
  snprintf(buf, len, "%s.%lld", v, (long long)getpid());
  return buf;
}

/* A bad value is said on stderr and ignored: the traced program runs on. */
static size_t env_size(const char *name, size_t lo, size_t hi) {
  const char *v = getenv(name);
  if (!v) return 0;
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  if (*v && *v != '-' && !*end && n >= lo && n <= hi) return (size_t)n;
  fprintf(stderr, "attnprof: %s='%s' ignored: want a whole number from %zu to %zu\n", name, v, lo,
          hi);
  return 0;
}

/* The session's options from the protocol's variables. */
static prof_session_opts session_opts(void) {
  prof_session_opts o = prof_session_opts_default();
  const char *api = getenv("ATTNPROF_CUPTI_API"), *sync = getenv("ATTNPROF_CUPTI_SYNC");
  o.all_api = api && !strcmp(api, "all");
  if (sync && strcmp(sync, "kind") && strcmp(sync, "callback"))
    fprintf(stderr, "attnprof: ATTNPROF_CUPTI_SYNC='%s' ignored: want kind or callback\n", sync);
  if (sync && !strcmp(sync, "kind")) o.sync = PROF_SYNC_FROM_KIND;
  o.buffer_kb = env_size("ATTNPROF_CUPTI_BUFFER_KB", 16, 1 << 20);
  o.max_buffers = env_size("ATTNPROF_CUPTI_MAX_BUFFERS", 1, 1 << 16);
  o.defer_mb = env_size("ATTNPROF_CUPTI_DEFER", 1, 1 << 20);
  return o;
}

static int start(void) {
  char out_buf[4096], report_buf[4096];
  const char *out = own_path("ATTNPROF_TRACE_OUT", out_buf, sizeof out_buf);
  if (!out || !*out) return say("ATTNPROF_TRACE_OUT is not set: nothing to trace into", NULL), -1;
  inject_report_open(own_path("ATTNPROF_TRACE_REPORT", report_buf, sizeof report_buf));
  int64_t offset = attn_clock_epoch_offset(), now = attn_clock_ns() + offset;
  char why[512];
  stream = chrome_stream_open(out, now - now % 1000000, offset, why, sizeof why);
  if (!stream) return inject_report_error("cannot open the trace", why), say(why, NULL), -1;
  const char *chunk = getenv("ATTNPROF_TRACE_CHUNK");
  cupti_collector_set_injected(1);
  cupti_collector_set_sink(on_chunk, NULL, chunk ? (size_t)atoll(chunk) : 65536);
  prof_trace_create(&session);
  prof_trace_set_epoch_offset(session, offset);
  prof_session_opts opts = session_opts();
  if (!session || prof_start(session, PROF_COLLECT_GPU, &opts) ||
      !(prof_collecting() & PROF_COLLECT_GPU)) {
    inject_report_error("GPU collection could not start", attn_last_error());
    say("GPU collection could not start", attn_last_error());
    chrome_stream_close(stream, 0, (int64_t)getpid(), "process");
    stream = NULL;
    return -1;
  }
  atomic_store(&started, 1);
  on_exit(at_exit, NULL);
  hook_signals();
  return 0;
}

/* Starts collection once, from whichever entry comes first: NVTX's (a
 * program may push a range before it initializes CUDA, and that range must
 * be recorded) or the driver's. Any failure leaves the program running
 * untraced, with the reason said. */
void attnprof_inject_start(void) {
  static atomic_int once;
  if (atomic_exchange(&once, 1)) return;
  start();
}

/* Called by the driver inside cuInit; returning 1 tells it we loaded. */
EXPORT int InitializeInjection(void) {
  attnprof_inject_start();
  return 1;
}
