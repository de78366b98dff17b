/* attnprof summary FILE: the analyses of a live run on a trace read from disk
 * (torch.profiler's or ours): per-range ops by kind and launch API, device and
 * host time, the kernel table with occupancy recomputed beside the file's
 * figure, key averages; --json in DESIGN.md's contract; --expect checks. */
#include <stdlib.h>
#include <string.h>

#include "cli/summary_json.h"
#include "cli/report.h"
#include "cli/traces.h"

static const char summary_usage[] =
    "usage: attnprof summary FILE [--range NAME] [--json] [--top N] [--per-step]\n"
    "                        [--expect EXPR|@FILE]\n"
    "       attnprof summary FILE FILE... [--json]   per-rank figures and their spread\n"
    "  FILE             a Chrome/Kineto trace (.json or .json.gz), torch.profiler's or attnprof's\n"
    "  --range NAME     only this range (and the kernels inside it)\n"
    "  --json           the machine-readable summary (DESIGN.md)\n"
    "  --top N          rows of key averages shown (default 20)\n"
    "  --per-step       one row per ProfilerStep#<n> (default: one row ProfilerStep#N, a call\n"
    "                   per step, as diff counts them)\n"
    "  --expect E       guess first: 'kernels == 5, memcpy == 0' or @file with [range] sections;\n"
    "                   exit status 1 when one broke\n";

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
      return cli_usage_error("summary: unknown option '%s'\n%s", argv[i], summary_usage);
    } else if (o->file) {
      o->more[o->n_more++] = argv[i];
    } else {
      o->file = argv[i];
    }
  }
  if (!o->file) return cli_usage_error("summary: no FILE given\n%s", summary_usage);
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
  if (!gpu && s->n_ranges)
    printf("(no GPU events in the ranges: they count their CPU ops)\n");
  if (!s->n_ranges) printf("(no ranges in the trace: only the kernel table and key averages)\n");
  cli_print_links(stdout, &s->links);
  printf("\nper range (ops per call; GPU events where the range launched any):\n");
  prof_print_range_summary(stdout, s->ranges, s->n_ranges);
  if (s->n_kernels > 0) {
    printf("\nkernels%s%s (occupancy: ours, estimated achieved; file: the trace's own figure):\n",
           o->range ? " in " : "", o->range ? o->range : "");
    cli_print_kernels(stdout, s->kernels, s->n_kernels);
  }
  if (!o->range && s->n_keys > 0) {
    printf("\nkey averages:\n");
    prof_print_key_averages(stdout, s->keys, s->n_keys, o->top);
  }
}

/* Several files: a trace per rank, the per-rank table. */
static int summary_ranks(const summary_opts *o, const char **files) {
  size_t n = (size_t)o->n_more + 1;
  files[0] = o->file;
  prof_trace **traces = calloc(n, sizeof *traces);
  int rc = traces ? cli_load_traces(files, n, traces) : cli_failure("no memory");
  if (!rc) {
    rc = o->json ? cli_json_print(cli_ranks_json(files, traces, n))
                 : cli_print_ranks(stdout, files, traces, n);
    for (size_t r = 0; r < n; r++) prof_trace_destroy(traces[r]);
  }
  free(traces);
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
  if (!(rc = cli_load_trace(o.file, &t, &stats)) && !(rc = cli_summary_build_ex(t, o.range, o.per_step ? PROF_SUMMARY_PER_STEP : 0, &s))) {
    if (o.json) {
      json_t *doc = cli_summary_json(o.file, &stats, t, &s);
      if (ex) json_object_set_new(doc, "expectations", cli_expect_json(ex, t, o.range, &rc));
      int wrc = cli_json_print(doc);
      rc = wrc ? wrc : rc;
    } else {
      print_text(&o, t, &s);
      if (ex) rc = cli_expect_print(stdout, ex, t, o.range);
    }
    cli_summary_free(&s);
  }
  prof_trace_destroy(t);
  prof_expect_free(ex);
  return rc;
}
