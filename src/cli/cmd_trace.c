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
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cmd_trace.h"
#include "cli/report.h"
#include "cli/summary_json.h"
#include "cli/traces.h"

static const char trace_usage[] =
    "usage: attnprof trace [--out FILE] [--format F] [--range NAME] [--json] [--all-api] "
    "[--stream-only] "
    "[--defer MB] -- CMD [ARGS...]\n"
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
    "  --defer MB      keep up to MB of CUPTI's buffers unconverted and write them when\n"
    "                  the program ends (past MB: written during the run, as without it);\n"
    "                  a program killed outright (SIGKILL, OOM) loses what was kept\n"
    "NVTX ranges (torch.cuda.nvtx.range_push/pop) become the summary's ranges.\n"
    "Processes the program starts (torchrun's workers) are traced too, one trace each:\n"
    "FILE with .<pid> before .json; attnprof merge puts them on one timeline.\n"
    "exit status: the program's (128+N when killed by signal N); 3 if no trace could be written\n";

/* --defer's MB, and ATTNPROF_CUPTI_DEFER's when inherited: 1 to 1048576. */
static int defer_mb_ok(const char *v) {
  char *end;
  long mb = strtol(v, &end, 10);
  return *v && !*end && mb >= 1 && mb <= 1048576;
}

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
      if (r < 0) return CLI_USAGE;
      if (prof_trace_format_from_name(v, &o->format))
        return cli_usage_error(
            "trace: --format: unknown trace format '%s' (json, json.gz or pftrace)", v);
    } else if ((r = cli_opt_value(argc, argv, &i, "--defer", &v))) {
      if (r < 0) return CLI_USAGE;
      if (!defer_mb_ok(v))
        return cli_usage_error("trace: --defer: '%s' is not a size in MB (1 to 1048576)", v);
      o->defer_mb = v;
    } else if ((r = cli_opt_value(argc, argv, &i, "--range", &v))) {
      if (r < 0) return CLI_USAGE;
      o->range = v;
    } else {
      return cli_usage_error("trace: unknown option '%s' (the program goes after --; attnprof help "
                             "trace lists the options)",
                             argv[i]);
    }
  }
  if (i + 1 >= argc)
    return cli_usage_error(
        "trace: no program given after --: attnprof trace [options] -- CMD [ARGS...]");
  const char *env_defer = getenv("ATTNPROF_CUPTI_DEFER");
  if (!o->defer_mb && env_defer && !defer_mb_ok(env_defer))
    return cli_usage_error("trace: ATTNPROF_CUPTI_DEFER='%s' is not a size in MB (1 to 1048576); "
                           "unset it or pass --defer MB",
                           env_defer);
  if (o->stream_only && o->format != PROF_FORMAT_AUTO && o->format != PROF_FORMAT_JSON)
    return cli_usage_error(
        "trace: --stream-only keeps the streamed JSON as it is; --format %s needs "
        "the rewrite (drop --stream-only)",
        prof_trace_format_name(o->format));
  if (o->format == PROF_FORMAT_JSON_GZ && !o->out_given) o->out = "attnprof_trace.json.gz";
  if (o->format == PROF_FORMAT_PFTRACE && !o->out_given) o->out = "attnprof_trace.pftrace";
  if (o->stream_only && prof_trace_format_for_path(o->out) != PROF_FORMAT_JSON &&
      o->format == PROF_FORMAT_AUTO)
    return cli_usage_error("trace: --stream-only writes JSON; '%s' asks for %s by its name", o->out,
                           prof_trace_format_name(prof_trace_format_for_path(o->out)));
  o->argv = argv + i + 1;
  return CLI_OK;
}

/* ---- running the program ------------------------------------------------- */

/* Runs the program through attnprof_spawn (trace_spawn.c), which measures
 * its peak memory apart from ours; returns only if that exec failed. */
static void exec_spawn(const trace_opts *o, const trace_paths *p, int fd) {
  size_t n = 0;
  while (o->argv[n]) n++;
  char **av = calloc(n + 3, sizeof *av);
  char fds[16];
  if (!av) return;
  snprintf(fds, sizeof fds, "%d", fd);
  av[0] = p->spawn, av[1] = fds;
  memcpy(av + 2, o->argv, n * sizeof *av);
  execv(p->spawn, av);
  free(av);
}

static void child(const trace_opts *o, const trace_paths *p, int spawn_fd) {
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
  if (o->defer_mb) setenv("ATTNPROF_CUPTI_DEFER", o->defer_mb, 1);
  if (p->spawn && spawn_fd >= 0) exec_spawn(o, p, spawn_fd);
  execvp(o->argv[0], o->argv);
  fprintf(stderr, "attnprof: cannot run '%s': %s\n", o->argv[0], strerror(errno));
  _exit(127);
}

/* attnprof_spawn's line "STATUS MAXRSS": the program's wait status and peak
 * replace the helper's. Nothing read (no helper, or it died) leaves both. */
static void read_spawn(int fd, trace_outcome *out) {
  char line[64];
  ssize_t n = fd < 0 ? -1 : read(fd, line, sizeof line - 1);
  if (n <= 0) return;
  line[n] = 0;
  int status;
  long kib;
  if (sscanf(line, "%d %ld", &status, &kib) == 2) out->status = status, out->peak_rss_kib = kib;
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
  int fds[2] = {-1, -1};
  if (p->spawn && pipe2(fds, O_CLOEXEC)) fds[0] = fds[1] = -1;
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    if (fds[1] >= 0) fcntl(fds[1], F_SETFD, 0); /* the helper writes here */
    child(o, p, fds[1]);
  }
  if (fds[1] >= 0) close(fds[1]);
  int rc = -1;
  if (pid > 0) {
    while (waitpid(pid, &out->status, 0) < 0 && errno == EINTR) {}
    out->peak_rss_kib = -1;
    read_spawn(fds[0], out);
    rc = 0;
  } else {
    fprintf(stderr, "attnprof: cannot start the program: %s\n", strerror(errno));
  }
  if (fds[0] >= 0) close(fds[0]);
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
