/* attnprof summary FILE: the analyses of a live run on a trace read from disk
 * (torch.profiler's or ours): per-range ops by kind and launch API, device and
 * host time, the kernel table with occupancy recomputed beside the file's
 * figure, key averages; --json in docs/output-contract.md's contract; --expect checks. */
#include <stdlib.h>
#include <string.h>

#include "cli/ranks.h"
#include "cli/summary_json.h"
#include "cli/report.h"
#include "cli/traces.h"

static const char summary_usage[] =
    "usage: attnprof summary FILE [--range NAME] [--json] [--top N] [--per-step]\n"
    "                        [--expect EXPR|@FILE]\n"
    "       attnprof summary FILE FILE... [--json] [--top N]   per-rank figures and their spread\n"
    "  FILE             a Chrome/Kineto trace (.json or .json.gz), torch.profiler's or attnprof's\n"
    "  --range NAME     only this range (and the kernels inside it)\n"
    "  --json           the machine-readable summary (docs/output-contract.md)\n"
    "  --top N          rows of key averages shown (default 20)\n"
    "A trace of several processes (ranks merged by attnprof merge) also gets the per-rank\n"
    "figures, a rank per process: per range, kernel and key-average rows of each rank.\n"
    "  --per-step       one row per ProfilerStep#<n> (default: one row ProfilerStep#N, a call\n"
    "                   per step, as diff counts them)\n"
    "  --expect E       guess first: 'kernels == 5, memcpy == 0' or @file; exit 1 if broken\n"
    "  --verbose        also the reader's routine notes (events it does not model)\n"
    "  --wide           names whole in the tables (default: cut to 44 characters)\n";

typedef struct {
  const char *file, *range, *expect;
  const char **more; /* files after the first: a trace per rank */
  int n_more;
  int json, per_step;
  int64_t top;
} summary_opts;

static int parse_summary(int argc, char **argv, summary_opts *o) {
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if (cli_opt_flag(argc, argv, &i, "--json")) {
      o->json = 1;
    } else if (cli_opt_flag(argc, argv, &i, "--per-step")) {
      o->per_step = 1;
    } else if ((r = cli_opt_value(argc, argv, &i, "--range", &v))) {
      if (r < 0) return CLI_USAGE;
      o->range = v;
    } else if ((r = cli_opt_value(argc, argv, &i, "--expect", &v))) {
      if (r < 0) return CLI_USAGE;
      o->expect = v;
    } else if ((r = cli_opt_value(argc, argv, &i, "--top", &v))) {
      if (r < 0) return CLI_USAGE;
      char *end;
      o->top = strtoll(v, &end, 10);
      if (*end || o->top <= 0) return cli_usage_error("--top %s: a positive count is accepted", v);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("summary: unknown option '%s' (attnprof help summary lists them)",
                             argv[i]);
    } else if (o->file) {
      o->more[o->n_more++] = argv[i];
    } else {
      o->file = argv[i];
    }
  }
  if (!o->file) return cli_usage_error("summary: no FILE given: attnprof summary FILE [options]");
  if (o->n_more && (o->range || o->expect))
    return cli_usage_error("summary: several FILEs give the per-rank figures only (no --range or "
                           "--expect)");
  return CLI_OK;
}

static void print_devices(const prof_trace *t) {
  for (size_t i = 0; i < prof_trace_device_count(t); i++) {
    const prof_device *d = prof_trace_device(t, i);
    printf("device %d: ", d->id);
    cli_put_cell(stdout, d->name, -1);
    printf(" (sm_%d%d, %d SMs)\n", d->compute_major, d->compute_minor, d->num_sms);
  }
}

static void print_text(const summary_opts *o, const prof_trace *t, const cli_summary *s) {
  printf("attnprof summary: ");
  cli_put_cell(stdout, o->file, -1);
  printf(" (%zu events)\n", prof_trace_count(t));
  print_devices(t);
  int gpu = 0;
  for (int64_t i = 0; i < s->n_ranges; i++) gpu |= s->ranges[i].gpu;
  if (!gpu && s->n_ranges) printf("(no GPU events in the ranges: they count their CPU ops)\n");
  if (!s->n_ranges) printf("(no ranges in the trace: only the kernel table and key averages)\n");
  cli_print_links(stdout, &s->links);
  printf("\nper range, each range's own events (ops per call; GPU events where the range "
         "launched any):\n");
  prof_print_range_summary(stdout, s->ranges, s->n_ranges);
  if (s->n_kernels > 0) {
    printf("\nkernels %s%s (occupancy: ours, estimated achieved; file: the trace's own "
           "figure):\n",
           o->range ? "in range " : "in the whole trace", o->range ? o->range : "");
    cli_print_kernels(stdout, s->kernels, s->n_kernels);
  }
  if (!o->range && s->n_keys > 0) {
    printf("\nkey averages over the whole trace:\n");
    prof_print_key_averages(stdout, s->keys, s->n_keys, o->top);
  }
}

/* Several files: a trace per rank, the per-rank tables. */
static int summary_ranks(const summary_opts *o, const char **files) {
  size_t n = (size_t)o->n_more + 1;
  files[0] = o->file;
  prof_trace **traces = calloc(n, sizeof *traces);
  cli_rank *ranks = calloc(n, sizeof *ranks);
  int rc = traces && ranks ? cli_load_traces(files, n, traces) : cli_failure("no memory");
  if (!rc) {
    for (size_t r = 0; r < n; r++) ranks[r] = (cli_rank){traces[r], -1, files[r]};
    if (o->json) {
      json_t *doc = cli_ranks_json(ranks, n);
      rc = doc ? cli_json_print(doc) : cli_failure("no memory for the per-rank tables");
    } else {
      rc = cli_print_ranks(stdout, ranks, n, o->top);
    }
    for (size_t r = 0; r < n; r++) prof_trace_destroy(traces[r]);
  }
  free(ranks);
  free(traces);
  return rc;
}

/* One trace of several processes: a rank per process, after the summary
 * (text), or under "ranks" and "spread" (doc). Nothing for one process. */
static int process_ranks(const summary_opts *o, const prof_trace *t, json_t *doc) {
  cli_rank *ranks = NULL;
  int64_t n = cli_ranks_of_trace(t, &ranks);
  int rc = n < 0 ? cli_failure("%s", attn_last_error()) : CLI_OK;
  if (n > 1 && doc) {
    json_t *r = cli_ranks_json(ranks, (size_t)n);
    if (!r) rc = cli_failure("no memory for the per-rank tables");
    else json_object_update(doc, r), json_decref(r);
  } else if (n > 1) {
    printf("\n");
    rc = cli_print_ranks(stdout, ranks, (size_t)n, o->top);
  }
  free(ranks);
  return rc;
}

int cmd_summary(int argc, char **argv) {
  summary_opts o = {NULL, NULL, NULL, NULL, 0, 0, 0, 20};
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
    return fputs(summary_usage, stdout), CLI_OK;
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  if (!files) return cli_failure("no memory");
  o.more = files + 1;
  int rc = parse_summary(argc, argv, &o);
  if (!rc && o.n_more) rc = summary_ranks(&o, files);
  if (rc || o.n_more) return free(files), rc;
  free(files);
  prof_expect *ex = NULL;
  if (o.expect && (rc = cli_parse_expect(o.expect, &ex))) return rc;
  prof_trace *t = NULL;
  prof_read_stats stats;
  cli_summary s;
  if (!(rc = cli_load_trace(o.file, &t, &stats)) &&
      !(rc = cli_summary_build_ex(t, o.range, o.per_step ? PROF_SUMMARY_PER_STEP : 0, &s))) {
    int prc = CLI_OK;
    if (o.json) {
      json_t *doc = cli_summary_json(o.file, &stats, t, &s);
      if (ex) json_object_set_new(doc, "expectations", cli_expect_json(ex, t, o.range, &rc));
      if (!o.range) prc = process_ranks(&o, t, doc);
      int wrc = cli_json_print(doc);
      rc = wrc ? wrc : rc;
    } else {
      print_text(&o, t, &s);
      if (!o.range) prc = process_ranks(&o, t, NULL);
      if (ex) rc = cli_expect_print(stdout, ex, t, o.range);
    }
    rc = rc ? rc : prc;
    cli_summary_free(&s);
  }
  prof_trace_destroy(t);
  prof_expect_free(ex);
  return rc;
}
