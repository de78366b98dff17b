/* attnprof merge --out FILE TRACE... : the traces of several processes
 * (`attnprof trace -- torchrun ...` writes one per rank) on one timeline,
 * each process its own lanes, clocks aligned on the ends of NCCL collectives
 * (prof_merge); then the per-rank figures and their spread, which `summary`
 * over several files prints too (cli_print_ranks). */
#include <stdlib.h>
#include <string.h>

#include "cli/summary_json.h"
#include "cli/traces.h"

static const char merge_usage[] =
    "usage: attnprof merge --out FILE TRACE TRACE...\n"
    "  TRACE      one trace per process or rank (rank = order given), Chrome/Kineto JSON\n"
    "  --out FILE the merged trace: each process in lanes of its own, clocks aligned on the\n"
    "             ends of NCCL collectives where there are any (else kept, and said)\n";

typedef struct {
  prof_range_summary *rows;
  int64_t n;
} rank_rows;

/* min, max and mean of one figure over the ranks that have the range */
static void spread(FILE *f, const char *what, const double *v, size_t n) {
  double lo = v[0], hi = v[0], sum = 0;
  for (size_t i = 0; i < n; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi, sum += v[i];
  double mean = sum / (double)n;
  fprintf(f, "    spread of %s: min %.1f, max %.1f, max-min %.1f (%.1f%% of the mean)\n", what, lo, hi,
          hi - lo, mean > 0 ? 100.0 * (hi - lo) / mean : 0.0);
}

static void print_range(FILE *f, const char *name, const char *const *files, const rank_rows *rr,
                        size_t n) {
  double dev[n ? n : 1], host[n ? n : 1];
  size_t m = 0;
  fprintf(f, "\nrange ");
  cli_put_cell(f, name, -1);
  fprintf(f, "\n  %4s %-32s %6s %9s %9s %14s %14s\n", "rank", "file", "calls", "kernels", "comm",
          "device us/call", "host us/call");
  for (size_t r = 0; r < n; r++) {
    const prof_range_summary *s = prof_range_summary_find(rr[r].rows, rr[r].n, name);
    if (!s) continue;
    fprintf(f, "  %4zu ", r);
    cli_put_cell(f, files[r], 32);
    fprintf(f, " %6lld %9.2f %9.2f %14.1f %14.1f\n", (long long)s->calls,
            s->per_call_kind[PROF_KIND_KERNEL], s->per_call_kind[PROF_KIND_COMM],
            s->device_us_per_call, s->host_us_per_call);
    dev[m] = s->device_us_per_call, host[m++] = s->host_us_per_call;
  }
  if (m > 1) spread(f, "device us/call", dev, m), spread(f, "host us/call", host, m);
}

int cli_print_ranks(FILE *f, const char *const *files, prof_trace *const *traces, size_t n) {
  rank_rows *rr = calloc(n ? n : 1, sizeof *rr);
  if (!rr) return cli_failure("no memory");
  int rc = CLI_OK;
  for (size_t r = 0; r < n && !rc; r++)
    if ((rr[r].n = prof_summarize_ranges_ex(traces[r], 0, &rr[r].rows, NULL)) < 0)
      rc = cli_failure("%s", attn_last_error());
  fprintf(f, "per rank (rank = the order of the files; GPU events per call of each range):\n");
  for (size_t r = 0; r < n && !rc; r++) /* each name once, at its first rank */
    for (int64_t i = 0; i < rr[r].n; i++) {
      int seen = 0;
      for (size_t q = 0; q < r && !seen; q++)
        seen = prof_range_summary_find(rr[q].rows, rr[q].n, rr[r].rows[i].name) != NULL;
      if (!seen) print_range(f, rr[r].rows[i].name, files, rr, n);
    }
  for (size_t r = 0; r < n; r++) free(rr[r].rows);
  free(rr);
  return rc;
}

/* {"ranks": [{"rank", "file", "ranges": [...]}], "spread": [{"name", "ranks",
 * "device_us_min", "device_us_max", "host_us_min", "host_us_max"}]} */
json_t *cli_ranks_json(const char *const *files, prof_trace *const *traces, size_t n) {
  json_t *ranks = json_array(), *spread = json_array();
  rank_rows *rr = calloc(n ? n : 1, sizeof *rr);
  for (size_t r = 0; rr && r < n; r++) {
    rr[r].n = prof_summarize_ranges_ex(traces[r], 0, &rr[r].rows, NULL);
    json_t *rows = json_array();
    for (int64_t i = 0; i < rr[r].n; i++) json_array_append_new(rows, cli_range_json(&rr[r].rows[i]));
    json_array_append_new(ranks, json_pack("{sI so so}", "rank", (json_int_t)r, "file",
                                           cli_json_text(files[r]), "ranges", rows));
  }
  for (size_t r = 0; rr && r < n; r++)
    for (int64_t i = 0; i < rr[r].n; i++) {
      const char *name = rr[r].rows[i].name;
      int seen = 0;
      for (size_t q = 0; q < r && !seen; q++) seen = prof_range_summary_find(rr[q].rows, rr[q].n, name) != NULL;
      if (seen) continue;
      double dlo = 0, dhi = 0, hlo = 0, hhi = 0;
      json_int_t k = 0;
      for (size_t q = 0; q < n; q++) {
        const prof_range_summary *s = prof_range_summary_find(rr[q].rows, rr[q].n, name);
        if (!s) continue;
        if (!k++) dlo = dhi = s->device_us_per_call, hlo = hhi = s->host_us_per_call;
        dlo = s->device_us_per_call < dlo ? s->device_us_per_call : dlo;
        dhi = s->device_us_per_call > dhi ? s->device_us_per_call : dhi;
        hlo = s->host_us_per_call < hlo ? s->host_us_per_call : hlo;
        hhi = s->host_us_per_call > hhi ? s->host_us_per_call : hhi;
      }
      json_array_append_new(spread, json_pack("{so sI sf sf sf sf}", "name", cli_json_text(name),
                                              "ranks", k, "device_us_min", dlo, "device_us_max",
                                              dhi, "host_us_min", hlo, "host_us_max", hhi));
    }
  for (size_t r = 0; rr && r < n; r++) free(rr[r].rows);
  free(rr);
  return json_pack("{so so}", "ranks", ranks, "spread", spread);
}

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

static void say_inputs(const char *const *files, const prof_merge_input *info, size_t n) {
  for (size_t r = 0; r < n; r++) {
    printf("rank %zu: ", r);
    cli_put_cell(stdout, files[r], -1);
    printf(" -> process %lld, GPU %d; %lld NCCL collectives; clock %s by %+.3f us\n",
           (long long)info[r].pid, info[r].device, (long long)info[r].collectives,
           info[r].aligned ? "aligned" : "kept", (double)info[r].offset_ns / 1e3);
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
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return free(files), fputs(merge_usage, stdout), CLI_OK;
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
    return cli_usage_error("merge: %s\n%s", !out ? "no --out FILE given" : "two traces or more are merged",
                           merge_usage);
  }
  if (prof_check_writable(out)) return free(files), cli_usage_error("%s", attn_last_error());
  prof_trace **traces = calloc(n, sizeof *traces);
  prof_merge_input *info = calloc(n, sizeof *info);
  int rc = traces && info ? cli_load_traces(files, n, traces) : cli_failure("no memory");
  if (!rc) {
    prof_trace *m = prof_merge(traces, n, info);
    if (!m || prof_add_gpu_annotations(m) < 0 || prof_write_chrome_trace(m, out)) {
      rc = cli_failure("%s", attn_last_error());
    } else {
      say_inputs(files, info, n);
      printf("merged: %s (%zu events)\n\n", out, prof_trace_count(m));
      rc = cli_print_ranks(stdout, files, traces, n);
    }
    prof_trace_destroy(m);
    for (size_t r = 0; r < n; r++) prof_trace_destroy(traces[r]);
  }
  free(traces);
  free(info);
  free(files);
  return rc;
}
