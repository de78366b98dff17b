/* attnprof report --html OUT FILE...: one self-contained HTML page over trace
 * files (torch.profiler's or ours): charts comparing them, a timeline of one
 * forward of each, and their tables. */
#include <stdlib.h>
#include <string.h>

#include "cli/traces.h"

static const char report_usage[] =
    "usage: attnprof report --html OUT [--range NAME] FILE...\n"
    "  --html OUT       the page to write (one file, works offline)\n"
    "  --range NAME     the range the charts and timelines show (default attn_fwd, else the "
    "first)\n"
    "  FILE...          Chrome/Kineto traces (.json or .json.gz)\n";

typedef struct {
  const char *out, *range;
  const char **files;
  int n;
} report_opts;

static int parse_report(int argc, char **argv, report_opts *o) {
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if ((r = cli_opt_value(argc, argv, &i, "--html", &v))) {
      if (r < 0) return CLI_USAGE;
      o->out = v;
    } else if ((r = cli_opt_value(argc, argv, &i, "--range", &v))) {
      if (r < 0) return CLI_USAGE;
      o->range = v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("report: unknown option '%s' (attnprof help report lists them)",
                             argv[i]);
    } else {
      o->files[o->n++] = argv[i];
    }
  }
  if (!o->out)
    return cli_usage_error("report: --html OUT is needed: attnprof report --html OUT FILE...");
  if (!o->n)
    return cli_usage_error("report: no trace FILE given: attnprof report --html OUT FILE...");
  return CLI_OK;
}

/* The label of a trace on the page: its file name without the directories. */
static const char *label_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

/* The output path first, as run does: nothing is read for a page that
 * cannot be written. */
static int check_out(const char *out) {
  if (!prof_check_writable(out)) return CLI_OK;
  const char *e = attn_last_error(), *reason = strstr(e, "': ");
  return cli_usage_error("--html: cannot write report '%s': %s", out, reason ? reason + 3 : e);
}

/* --range must name a range of at least one trace; else exit 2 listing the
 * ranges, as summary does. */
static int check_range(const char *range, prof_report_input *in, int n) {
  char names[1024] = "";
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    prof_range_summary *rows = NULL;
    int64_t k;
    if (prof_summarize_ranges(in[i].t, &rows, &k)) k = -1;
    int found = k > 0 && prof_range_summary_find(rows, k, range);
    for (int64_t j = 0; !found && j < k && len < sizeof names - 1; j++)
      if (!strstr(names, rows[j].name))
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                rows[j].name);
    free(rows);
    if (found) return CLI_OK;
  }
  if (len > sizeof names - 1) len = sizeof names - 1;
  return cli_usage_error("--range %s: no range of that name in the traces (ranges: %s)", range,
                         len ? names : "none");
}

static int write_report(const report_opts *o) {
  int rc = check_out(o->out);
  if (rc) return rc;
  prof_report_input *in = calloc((size_t)o->n, sizeof *in);
  if (!in) return cli_failure("no memory for %d traces", o->n);
  int loaded = 0;
  for (; !rc && loaded < o->n; loaded++) {
    prof_read_stats stats;
    prof_trace *t = NULL;
    rc = cli_load_trace(o->files[loaded], &t, &stats);
    in[loaded] = (prof_report_input){label_of(o->files[loaded]), t};
  }
  if (!rc && o->range) rc = check_range(o->range, in, loaded);
  if (!rc && prof_write_html_report(o->out, in, (size_t)o->n, o->range))
    rc = cli_failure("--html: %s", attn_last_error());
  if (!rc) fprintf(stderr, "attnprof: report written to %s\n", o->out);
  for (int i = 0; i < loaded; i++) prof_trace_destroy((prof_trace *)in[i].t);
  free(in);
  return rc;
}

int cmd_report(int argc, char **argv) {
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
    return fputs(report_usage, stdout), CLI_OK;
  report_opts o = {NULL, NULL, NULL, 0};
  o.files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *o.files);
  if (!o.files) return cli_failure("no memory");
  int rc = parse_report(argc, argv, &o);
  if (!rc) rc = write_report(&o);
  free(o.files);
  return rc;
}
