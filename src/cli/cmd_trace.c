/* attnprof trace [options] -- CMD ARGS...: traces an unmodified CUDA program.
 *
 * The program runs as our child with libattnprof_inject.so injected (CUDA
 * and NVTX injection variables); the injected collector streams its trace
 * to FILE.partial and keeps a report (FILE.report) of how far it got. When
 * the program has ended (normally, by exit from any thread, or killed), the
 * trace is made whole (cut back to its last complete chunk if the program
 * died mid-write), read back, given its gpu_user_annotation spans, written
 * to FILE, and summarized with the same analyses as `attnprof summary`.
 * The traced program's memory stays bounded however long it runs; the
 * summary here costs memory in proportion to the trace (--stream-only
 * skips it and keeps the streamed file as it is). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cmd_trace.h"
#include "cli/report.h"
#include "cli/summary_json.h"
#include "cli/traces.h"

static const char trace_usage[] =
    "usage: attnprof trace [--out FILE] [--format F] [--range NAME] [--json] [--all-api] [--stream-only] "
    "-- CMD [ARGS...]\n"
    "  --out FILE      the trace to write (default attnprof_trace.json, or .json.gz /\n"
    "                  .pftrace by --format)\n"
    "  --format F      json, json.gz or pftrace (Perfetto protobuf); default: by FILE's\n"
    "                  name (.pftrace, .gz, else json)\n"
    "  --range NAME    summarize only this range (an NVTX range the program pushes)\n"
    "  --json          the summary as JSON (as `attnprof summary --json`)\n"
    "  --all-api       record every CUDA runtime/driver call, not only launches, copies,\n"
    "                  sets and waits (costs more per call)\n"
    "  --stream-only   keep the streamed trace as it is, no summary (memory stays bounded\n"
    "                  here too, for programs of millions of launches)\n"
    "NVTX ranges (torch.cuda.nvtx.range_push/pop) become the summary's ranges.\n"
    "Processes the program starts (torchrun's workers) are traced too, one trace each:\n"
    "FILE with .<pid> before .json; attnprof merge puts them on one timeline.\n"
    "exit status: the program's (128+N when killed by signal N); 3 if no trace could be written\n";

static int parse(int argc, char **argv, trace_opts *o) {
  int i = 0;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    const char *v;
    int r;
    if (cli_opt_flag(argc, argv, &i, "--json")) o->json = 1;
    else if (cli_opt_flag(argc, argv, &i, "--all-api")) o->all_api = 1;
    else if (cli_opt_flag(argc, argv, &i, "--stream-only")) o->stream_only = 1;
    else if ((r = cli_opt_value(argc, argv, &i, "--out", &v))) {
      if (r < 0) return CLI_USAGE;
      o->out = v;
      o->out_given = 1;
    } else if ((r = cli_opt_value(argc, argv, &i, "--format", &v))) {
      int f = r < 0 ? -1 : prof_trace_format_from_name(v);
      if (r < 0) return CLI_USAGE;
      if (f < 0) return cli_usage_error("trace: --format: unknown trace format '%s' (json, json.gz or pftrace)", v);
      o->format = (prof_trace_format)f;
    } else if ((r = cli_opt_value(argc, argv, &i, "--range", &v))) {
      if (r < 0) return CLI_USAGE;
      o->range = v;
    } else {
      return cli_usage_error("trace: unknown option '%s' (the program goes after --)\n%s", argv[i],
                             trace_usage);
    }
  }
  if (i + 1 >= argc) return cli_usage_error("trace: no program given after --\n%s", trace_usage);
  if (o->stream_only && o->format != PROF_FORMAT_AUTO && o->format != PROF_FORMAT_JSON)
    return cli_usage_error("trace: --stream-only keeps the streamed JSON as it is; --format %s needs "
                           "the rewrite (drop --stream-only)", prof_trace_format_name(o->format));
  if (o->format == PROF_FORMAT_JSON_GZ && !o->out_given) o->out = "attnprof_trace.json.gz";
  if (o->format == PROF_FORMAT_PFTRACE && !o->out_given) o->out = "attnprof_trace.pftrace";
  if (o->stream_only && prof_trace_format_for_path(o->out) != PROF_FORMAT_JSON && o->format == PROF_FORMAT_AUTO)
    return cli_usage_error("trace: --stream-only writes JSON; '%s' asks for %s by its name", o->out,
                           prof_trace_format_name(prof_trace_format_for_path(o->out)));
  o->argv = argv + i + 1;
  return CLI_OK;
}

/* ---- running the program ------------------------------------------------- */

static void child(const trace_opts *o, const trace_paths *p) {
  char pid[32];
  snprintf(pid, sizeof pid, "%lld", (long long)getpid());
  const char *old = getenv("CUDA_INJECTION64_PATH");
  if (old && *old && strcmp(old, p->inject))
    fprintf(stderr, "attnprof: replacing CUDA_INJECTION64_PATH=%s for this run\n", old);
  setenv("CUDA_INJECTION64_PATH", p->inject, 1);
  setenv("NVTX_INJECTION64_PATH", p->inject, 1);
  setenv("ATTNPROF_TRACE_OUT", p->partial, 1);
  setenv("ATTNPROF_TRACE_REPORT", p->report, 1);
  setenv("ATTNPROF_TRACE_ROOT_PID", pid, 1);
  if (o->all_api) setenv("ATTNPROF_CUPTI_API", "all", 1);
  execvp(o->argv[0], o->argv);
  fprintf(stderr, "attnprof: cannot run '%s': %s\n", o->argv[0], strerror(errno));
  _exit(127);
}

/* Runs the program; fills its wait status and peak memory. -1 if it could
 * not be started. Our SIGINT/SIGQUIT are ignored meanwhile: a Ctrl-C is the
 * program's to handle, and we still finish the trace after it. */
static int run_program(const trace_opts *o, const trace_paths *p, trace_outcome *out) {
  fflush(NULL);
  struct sigaction ign, old_int, old_quit;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    child(o, p);
  }
  int rc = -1;
  if (pid > 0) {
    struct rusage ru;
    while (wait4(pid, &out->status, 0, &ru) < 0 && errno == EINTR) {
    }
    out->peak_rss_kib = ru.ru_maxrss;
    rc = 0;
  } else {
    fprintf(stderr, "attnprof: cannot start the program: %s\n", strerror(errno));
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  return rc;
}

static int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return CLI_FAILED;
}

int cmd_trace(int argc, char **argv) {
  trace_opts o = {.out = "attnprof_trace.json"};
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
    return fputs(trace_usage, stdout), CLI_OK;
  int rc = parse(argc, argv, &o);
  if (rc) return rc;
  if (prof_check_writable(o.out)) return cli_usage_error("%s", attn_last_error());
  trace_paths p;
  if ((rc = trace_paths_make(&o, &p))) return rc;
  trace_children_clean(&p);
  trace_outcome r;
  memset(&r, 0, sizeof r);
  if (run_program(&o, &p, &r)) return trace_paths_free(&p), CLI_FAILED;
  int program_rc = exit_status_of(r.status);
  rc = trace_finish(&o, &p, &r);
  trace_paths_free(&p);
  return rc ? rc : program_rc;
}
