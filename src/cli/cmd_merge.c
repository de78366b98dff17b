/* attnprof merge --out FILE TRACE... : the traces of several processes
 * (`attnprof trace -- torchrun ...` writes one per rank) on one timeline,
 * each process its own lanes, clocks aligned on the ends of NCCL collectives
 * (prof_merge); then the per-rank figures and their spread, which `summary`
 * over several files prints too (cli_print_ranks, ranks.c). */
#include <stdlib.h>
#include <string.h>

#include "cli/ranks.h"
#include "cli/summary_json.h"
#include "cli/traces.h"

static const char merge_usage[] =
    "usage: attnprof merge --out FILE TRACE TRACE...\n"
    "  TRACE      one trace per process or rank (rank = order given), Chrome/Kineto JSON\n"
    "  --out FILE the merged trace: each process in lanes of its own, clocks aligned on the\n"
    "             ends of NCCL collectives where there are any and they pair up (else\n"
    "             kept, and said in one line)\n";

int cli_load_traces(const char *const *files, size_t n, prof_trace **traces) {
  for (size_t r = 0; r < n; r++) {
    prof_read_stats st;
    int rc = cli_load_trace(files[r], &traces[r], &st);
    if (rc) {
      for (size_t q = 0; q < r; q++) prof_trace_destroy(traces[q]);
      return rc;
    }
  }
  return CLI_OK;
}

/* Each file a rank (its own clock: the figures do not depend on the offsets). */
static int print_ranks(const char *const *files, prof_trace *const *traces, size_t n) {
  cli_rank *ranks = calloc(n, sizeof *ranks);
  if (!ranks) return cli_failure("no memory");
  for (size_t r = 0; r < n; r++) ranks[r] = (cli_rank){traces[r], -1, files[r]};
  int rc = cli_print_ranks(stdout, ranks, n, 20);
  free(ranks);
  return rc;
}

static void say_inputs(const char *const *files, const prof_merge_input *info, size_t n) {
  for (size_t r = 0; r < n; r++) {
    printf("rank %zu: ", r);
    cli_put_cell(stdout, files[r], -1);
    printf(" -> process %lld, GPU %d; %lld NCCL collectives; clock %s by %+.3f us",
           (long long)info[r].pid, info[r].device, (long long)info[r].collectives,
           info[r].aligned ? "aligned" : "kept", (double)info[r].offset_ns / 1e3);
    if (r > 0 && info[r].aligned) /* how far the paired ends still are apart */
      printf(" (ends then within a median of %.3f us)", (double)info[r].residual_ns / 1e3);
    putchar('\n');
    if (info[r].why[0] && r > 0) fprintf(stderr, "attnprof: rank %zu: %s\n", r, info[r].why);
  }
}

int cmd_merge(int argc, char **argv) {
  const char *out = NULL;
  const char **files = calloc(argc > 0 ? (size_t)argc : 1, sizeof *files);
  size_t n = 0;
  if (!files) return cli_failure("no memory");
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return free(files), fputs(merge_usage, stdout), CLI_OK;
    if ((r = cli_opt_value(argc, argv, &i, "--out", &v))) {
      if (r < 0) return free(files), CLI_USAGE;
      out = v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      free(files);
      return cli_usage_error("merge: unknown option '%s'\n%s", argv[i], merge_usage);
    } else {
      files[n++] = argv[i];
    }
  }
  if (!out || n < 2) {
    free(files);
    return cli_usage_error("merge: %s\n%s",
                           !out ? "no --out FILE given" : "two traces or more are merged",
                           merge_usage);
  }
  if (prof_check_writable(out)) return free(files), cli_usage_error("%s", attn_last_error());
  prof_trace **traces = calloc(n, sizeof *traces);
  prof_merge_input *info = calloc(n, sizeof *info);
  int rc = traces && info ? cli_load_traces(files, n, traces) : cli_failure("no memory");
  if (!rc) {
    prof_trace *m = NULL;
    if (prof_merge(traces, n, info, &m) || prof_add_gpu_annotations(m, NULL) ||
        prof_write_chrome_trace(m, out)) {
      rc = cli_failure("%s", attn_last_error());
    } else {
      say_inputs(files, info, n);
      printf("merged: %s (%zu events)\n\n", out, prof_trace_count(m));
      rc = print_ranks(files, traces, n);
    }
    prof_trace_destroy(m);
    for (size_t r = 0; r < n; r++) prof_trace_destroy(traces[r]);
  }
  free(traces);
  free(info);
  free(files);
  return rc;
}
