/* attnprof trace, after the program has ended (see cmd_trace.h): read the
 * injected collector's report, make the streamed trace whole, write the final
 * trace and print what happened and the summary. Every fault is said in one
 * line: the program never used CUDA, collection could not start (no GPU, no
 * CUPTI, CUPTI held by another tool), records were dropped, the program
 * died before the trace was closed. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cmd_trace.h"
#include "cli/report.h"
#include "cli/summary_json.h"
#include "cli/traces.h"

typedef struct {
  int found, closed, api_all;
  int64_t safe_offset, events, dropped, signal, records, buffers, buffers_allocated, buffer_bytes,
      cupti_dropped, buffers_refused, incomplete, open_ranges, peak_rss_kib, write_ms, exit_status,
      rank; /* -1: not said (no exit(), no RANK) */
  char error[704];
} trace_report;

/* ---- paths ----------------------------------------------------------------- */

static char *joined(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", a, b);
  return s;
}

/* The first of dir-relative paths rel[] (relative to this attnprof's
 * folder) that exists with access `mode`, resolved; NULL if none. */
static char *find_beside_exe(const char *const *rel, size_t n, int mode) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return NULL;
  exe[len] = 0;
  char *slash = strrchr(exe, '/');
  if (slash) *slash = 0;
  for (size_t i = 0; i < n; i++) {
    char *p = joined(exe, rel[i]);
    char *real = p && !access(p, mode) ? realpath(p, NULL) : NULL;
    free(p);
    if (real) return real;
  }
  return NULL;
}

static char *find_inject(void) {
  const char *env = getenv("ATTNPROF_INJECT_LIB");
  if (env && *env) return access(env, R_OK) ? NULL : strdup(env);
  static const char *const rel[] = {"/../lib/libattnprof_inject.so",
                                    "/../lib64/libattnprof_inject.so", "/libattnprof_inject.so"};
  return find_beside_exe(rel, sizeof rel / sizeof rel[0], R_OK);
}

/* attnprof_spawn: beside this attnprof (the build tree), or in the install
 * tree's libexec/attnprof. */
static char *find_spawn(void) {
  static const char *const rel[] = {"/attnprof_spawn", "/../libexec/attnprof/attnprof_spawn"};
  return find_beside_exe(rel, sizeof rel / sizeof rel[0], X_OK);
}

int trace_paths_make(const trace_opts *o, trace_paths *p) {
  memset(p, 0, sizeof *p);
  if (!(p->inject = find_inject()))
    return cli_usage_error("trace: libattnprof_inject.so not found beside this attnprof (../lib) "
                           "nor at ATTNPROF_INJECT_LIB; was attnprof built with CUPTI?");
  p->spawn = find_spawn();
  p->partial = joined(o->out, ".partial");
  p->report = joined(o->out, ".report");
  if (!p->partial || !p->report) return trace_paths_free(p), cli_failure("no memory");
  unlink(p->report); /* a report left by an earlier run must not be read as this one's */
  return CLI_OK;
}

void trace_paths_free(trace_paths *p) {
  free(p->inject);
  free(p->partial);
  free(p->report);
  free(p->spawn);
}

/* ---- the report -------------------------------------------------------------- */

static void read_report(const char *path, trace_report *r) {
  memset(r, 0, sizeof *r);
  r->exit_status = r->rank = -1;
  FILE *f = fopen(path, "r");
  if (!f) return;
  r->found = 1;
  char line[700];
  static const struct {
    const char *key;
    size_t off;
  } keys[] = {
#define K(name) {#name "=", offsetof(trace_report, name)}
      K(safe_offset),   K(events),          K(dropped),           K(signal),
      K(records),       K(buffers),         K(buffers_allocated), K(buffer_bytes),
      K(cupti_dropped), K(buffers_refused), K(incomplete),        K(open_ranges),
      K(peak_rss_kib),  K(write_ms),        K(exit_status),       K(rank),
#undef K
  };
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      if (!strncmp(line, keys[i].key, strlen(keys[i].key)))
        *(int64_t *)((char *)r + keys[i].off) = strtoll(line + strlen(keys[i].key), NULL, 10);
    if (!strncmp(line, "closed=", 7)) r->closed = atoi(line + 7);
    if (!strncmp(line, "api_all=", 8)) r->api_all = atoi(line + 8);
    if (!strncmp(line, "error=", 6)) snprintf(r->error, sizeof r->error, "%s", line + 6);
  }
  fclose(f);
  unlink(path);
}

/* ---- what happened ------------------------------------------------------------- */

static void say_program(const trace_opts *o, const trace_outcome *r, const trace_report *rep) {
  FILE *f = o->json ? stderr : stdout;
  fprintf(f, "attnprof trace: %s ", o->argv[0]);
  if (WIFSIGNALED(r->status))
    fprintf(f, "was killed by signal %d (%s)", WTERMSIG(r->status), strsignal(WTERMSIG(r->status)));
  else fprintf(f, "exited with status %d", WEXITSTATUS(r->status));
  /* The program's own peak: VmHWM from exec on when the collector said it,
   * else its rusage as attnprof_spawn read it. */
  double kib = rep->peak_rss_kib > 0 ? (double)rep->peak_rss_kib : (double)r->peak_rss_kib;
  if (kib > 0) fprintf(f, "; its peak memory %.1f MiB\n", kib / 1024.0);
  else fputs("; its peak memory unknown (attnprof_spawn not found)\n", f);
}

/* child: "" for the program, "child process N (rank R)" for a child, whose
 * end say_child tells. */
static void say_faults(const trace_report *rep, const char *child) {
  char who[128];
  snprintf(who, sizeof who, "%s%s", child, *child ? ": " : "");
  if (rep->error[0]) fprintf(stderr, "attnprof: %s%s\n", who, rep->error);
  if (!rep->closed && !*who)
    fprintf(stderr,
            "attnprof: the program ended without closing its trace%s; kept the %lld events "
            "flushed before that (records still in CUPTI's buffers are lost)\n",
            rep->signal ? " (killed)" : " (a crash, _exit or kill)", (long long)rep->events);
  if (rep->dropped > 0)
    fprintf(stderr,
            "attnprof: %s%lld activity records were dropped (CUPTI dropped %lld; buffer requests "
            "refused %lld; incomplete %lld): the counts are low by up to that many. More room: "
            "ATTNPROF_CUPTI_MAX_BUFFERS, ATTNPROF_CUPTI_BUFFER_KB\n",
            who, (long long)rep->dropped, (long long)rep->cupti_dropped,
            (long long)rep->buffers_refused, (long long)rep->incomplete);
  if (rep->open_ranges > 0)
    fprintf(stderr, "attnprof: %s%lld NVTX ranges were still open at the end (not in the trace)\n",
            who, (long long)rep->open_ranges);
}

/* One line on how a child process ended and what its trace holds: stdout
 * when it exited 0, else stderr (a rank that crashed, was killed, or exited
 * non-zero; its trace keeps what it flushed). */
static void say_child(const trace_opts *o, const char *who, const trace_report *rep,
                      size_t events) {
  FILE *f = stderr;
  if (rep->signal > 0)
    fprintf(f,
            "attnprof: %s was killed by signal %lld (%s); its trace %s keeps the %zu events it "
            "flushed\n",
            who, (long long)rep->signal, strsignal((int)rep->signal), o->out, events);
  else if (!rep->closed)
    fprintf(f,
            "attnprof: %s ended without closing its trace (a crash, _exit or SIGKILL); %s keeps "
            "the %zu events flushed before (records still in CUPTI's buffers are lost)\n",
            who, o->out, events);
  else if (rep->exit_status > 0)
    fprintf(f,
            "attnprof: %s exited with status %lld; its trace %s keeps the %zu events it flushed\n",
            who, (long long)rep->exit_status, o->out, events);
  else
    fprintf(f = o->json ? stderr : stdout, "attnprof trace: %s %s; trace %s (%zu events)\n", who,
            rep->exit_status == 0 ? "exited with status 0" : "ended", o->out, events);
}

static void say_collector(const trace_opts *o, const trace_report *rep, size_t events,
                          double final_s) {
  FILE *f = o->json ? stderr : stdout;
  fprintf(f, "export: streamed %lld events in %.3f s inside the program", (long long)rep->events,
          rep->write_ms / 1e3);
  if (rep->write_ms > 0) fprintf(f, " (%.0f events/s)", rep->events / (rep->write_ms / 1e3));
  if (final_s > 0)
    fprintf(f, "; read, annotated and rewritten in %.3f s (%.0f events/s)", final_s,
            events / final_s);
  fputc('\n', f);
  fprintf(f,
          "trace: %s (%zu events, %lld dropped); CUPTI: %lld records in %lld buffers, "
          "at most %lld buffers of %lld KiB in memory; API calls: %s\n",
          o->out, events, (long long)rep->dropped, (long long)rep->records, (long long)rep->buffers,
          (long long)rep->buffers_allocated, (long long)rep->buffer_bytes / 1024,
          rep->api_all ? "all" : "launches, copies, sets, waits");
}

/* ---- the trace ------------------------------------------------------------------ */

static int write_empty(const trace_opts *o) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_write_opts w = prof_write_opts_default();
  w.format = o->format;
  attn_status st = t ? prof_write_trace(t, o->out, &w) : ATTN_STATUS_OUT_OF_MEMORY;
  prof_trace_destroy(t);
  return st ? cli_failure("%s", attn_last_error()) : CLI_OK;
}

static int print_summary(const trace_opts *o, const prof_trace *t, const prof_read_stats *stats) {
  cli_summary s;
  int rc = cli_summary_build(t, o->range, &s);
  if (rc) return rc;
  if (o->json) {
    rc = cli_json_print(cli_summary_json(o->out, stats, t, &s));
  } else {
    printf("\nper range (GPU events per call, by NVTX range):\n");
    prof_print_range_summary(stdout, s.ranges, s.n_ranges);
    if (s.n_kernels > 0) {
      printf("\nkernels %s%s (occupancy: ours, estimated achieved, then theoretical; file: "
             "the trace's own figure):\n",
             o->range ? "in range " : "in the whole trace", o->range ? o->range : "");
      cli_print_kernels(stdout, s.kernels, s.n_kernels);
    }
  }
  cli_summary_free(&s);
  return rc;
}

/* The streamed file -> the final trace (with gpu_user_annotation spans) and
 * the summary (a child process's trace: one line instead). */
static int export_and_summarize(const trace_opts *o, const trace_paths *p, const trace_report *rep,
                                int child, size_t *kept) {
  prof_trace *t = NULL;
  prof_read_stats stats;
  int64_t t0 = attn_clock_ns();
  int rc = cli_load_trace(p->partial, &t, &stats);
  if (rc) return rc;
  prof_trace_add_dropped(t, rep->dropped); /* the reader does not read the count back */
  prof_add_gpu_annotations(t, NULL);       /* without them (no memory) the trace is still whole */
  prof_write_opts w = prof_write_opts_default();
  w.format = o->format;
  if (prof_write_trace(t, o->out, &w)) {
    rc = cli_failure("%s (the streamed trace is kept at %s)", attn_last_error(), p->partial);
  } else {
    unlink(p->partial);
    *kept = prof_trace_count(t);
    if (!child) say_collector(o, rep, prof_trace_count(t), (double)(attn_clock_ns() - t0) / 1e9);
    rc = child ? CLI_OK : print_summary(o, t, &stats);
  }
  prof_trace_destroy(t);
  return rc;
}

/* The streamed trace -> made whole -> the final one (see the callers). */
static int complete(const trace_opts *o, const trace_paths *p, const trace_report *rep, int child,
                    const char *who, size_t *kept) {
  say_faults(rep, who);
  struct stat st;
  if (stat(p->partial, &st)) return child ? CLI_OK : write_empty(o);
  if (!rep->closed) {
    if (prof_chrome_trace_repair(p->partial, rep->safe_offset, rep->dropped))
      return cli_failure("cannot complete the trace: %s", attn_last_error());
  }
  if (o->stream_only) {
    if (rename(p->partial, o->out))
      return cli_failure("cannot rename %s: %s", p->partial, strerror(errno));
    *kept = (size_t)rep->events;
    if (!child) say_collector(o, rep, (size_t)rep->events, 0);
    return CLI_OK;
  }
  return export_and_summarize(o, p, rep, child, kept);
}

int trace_finish_child(const trace_opts *o, const trace_paths *p, long long pid) {
  trace_report rep;
  read_report(p->report, &rep);
  if (!rep.found) rep.closed = 0, rep.safe_offset = 0; /* no report: keep what parses */
  char who[96];
  int n = snprintf(who, sizeof who, "child process %lld", pid);
  if (rep.rank >= 0)
    n += snprintf(who + n, sizeof who - (size_t)n, " (rank %lld)", (long long)rep.rank);
  size_t kept = 0;
  int rc = complete(o, p, &rep, 1, who, &kept);
  if (!rc) say_child(o, who, &rep, kept);
  return rc;
}

int trace_finish(const trace_opts *o, const trace_paths *p, const trace_outcome *r) {
  trace_report rep;
  read_report(p->report, &rep);
  say_program(o, r, &rep);
  int children = trace_children(o, p);
  if (!rep.found) {
    if (children > 0) { /* a launcher (torchrun, a script): its children traced */
      printf("attnprof trace: %s used no CUDA itself; %d child process trace(s) above "
             "(attnprof merge puts them on one timeline)\n",
             o->argv[0], children);
      return CLI_OK;
    }
    fprintf(stderr, "attnprof: the program never initialized CUDA (or the injection library "
                    "could not load): no GPU work to trace; writing an empty trace\n");
    return write_empty(o);
  }
  size_t kept = 0;
  return complete(o, p, &rep, 0, "", &kept);
}
