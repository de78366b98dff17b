/* attnprof diff A B: per range, the kernels and ops that vanished, appeared,
 * or changed count or device time per call between two trace files (any mix
 * of torch.profiler's and ours); --json in docs/output-contract.md's contract. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"
#include "cli/traces.h"

static const char diff_usage[] =
    "usage: attnprof diff A B [--range NAME] [--json] [--all] [--threshold PCT] [--min-us US]\n"
    "  A, B             Chrome/Kineto traces (.json or .json.gz)\n"
    "  --range NAME     only this range (names are normalized: ProfilerStep#N)\n"
    "  --all            also list the ops that did not change\n"
    "  --threshold PCT  a device time changed when it moved by more than PCT percent (default 10)\n"
    "  --min-us US      ... and by more than US microseconds per call (default 1)\n";

typedef struct {
  const char *file[2], *range;
  int json, all;
  prof_diff_opts d;
} diff_opts;

static int number_opt(const char *name, const char *v, double *out) {
  char *end;
  double x = strtod(v, &end);
  if (*end || !isfinite(x) || x < 0)
    return cli_usage_error("%s %s: a number >= 0 is accepted", name, v);
  *out = x;
  return CLI_OK;
}

static int parse_diff(int argc, char **argv, diff_opts *o) {
  int n = 0;
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if (cli_opt_flag(argc, argv, &i, "--json")) o->json = 1;
    else if (cli_opt_flag(argc, argv, &i, "--all")) o->all = 1;
    else if ((r = cli_opt_value(argc, argv, &i, "--range", &v))) {
      if (r < 0) return CLI_USAGE;
      o->range = v;
    } else if ((r = cli_opt_value(argc, argv, &i, "--threshold", &v))) {
      if (r < 0 || number_opt("--threshold", v, &o->d.time_pct)) return CLI_USAGE;
    } else if ((r = cli_opt_value(argc, argv, &i, "--min-us", &v))) {
      if (r < 0 || number_opt("--min-us", v, &o->d.time_min_us)) return CLI_USAGE;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cli_usage_error("diff: unknown option '%s' (attnprof help diff lists them)", argv[i]);
    } else if (n == 2) {
      return cli_usage_error("diff: two files are accepted, a third was given ('%s')", argv[i]);
    } else {
      o->file[n++] = argv[i];
    }
  }
  if (n < 2)
    return cli_usage_error("diff: two trace files are needed: attnprof diff A B [options]");
  return CLI_OK;
}

static const char *status_word(prof_diff_status s) {
  static const char *const w[] = {"same", "changed", "appeared", "vanished"};
  return w[s];
}

static void print_item(const prof_diff_item *it) {
  printf("  %-9s ", status_word(it->status));
  cli_put_cell(stdout, it->name, 60);
  printf(" %7.3g -> %-7.3g %10.1f -> %-10.1f us/call", it->count_a, it->count_b, it->device_us_a,
         it->device_us_b);
  if (it->status == PROF_DIFF_CHANGED && it->device_us_a > 0)
    printf(" (%+.0f%%)", 100.0 * (it->device_us_b - it->device_us_a) / it->device_us_a);
  putchar('\n');
}

/* What a side's counts are: GPU events, CPU ops, or no such range there. */
static const char *counted(int64_t calls, int gpu) {
  return !calls ? "absent" : gpu ? "GPU events" : "CPU ops";
}

static void print_range(const diff_opts *o, const prof_diff_range *r) {
  size_t same = 0;
  printf("\nrange ");
  cli_put_cell(stdout, r->name, -1);
  printf(" (calls %lld -> %lld; %s -> %s)\n", (long long)r->calls_a, (long long)r->calls_b,
         counted(r->calls_a, r->gpu_a), counted(r->calls_b, r->gpu_b));
  for (size_t i = 0; i < r->n_items; i++) {
    if (r->items[i].status == PROF_DIFF_SAME && !o->all) same++;
    else print_item(&r->items[i]);
  }
  if (same) printf("  (%zu unchanged; --all lists them)\n", same);
}

static json_t *range_json(const prof_diff_range *r) {
  json_t *appeared = json_array(), *vanished = json_array(), *changed = json_array(),
         *all = json_array();
  size_t same = 0;
  for (size_t i = 0; i < r->n_items; i++) {
    const prof_diff_item *it = &r->items[i];
    json_t *full =
        json_pack("{ss so sf sf sf sf}", "status", status_word(it->status), "name",
                  cli_json_text(it->name), "count_a", it->count_a, "count_b", it->count_b,
                  "device_us_a", it->device_us_a, "device_us_b", it->device_us_b);
    json_object_set_new(full, "name_a", cli_json_text(it->name_a));
    json_object_set_new(full, "name_b", cli_json_text(it->name_b));
    if (it->status == PROF_DIFF_APPEARED) json_array_append_new(appeared, cli_json_text(it->name));
    if (it->status == PROF_DIFF_VANISHED) json_array_append_new(vanished, cli_json_text(it->name));
    if (it->status == PROF_DIFF_CHANGED) json_array_append(changed, full);
    same += it->status == PROF_DIFF_SAME;
    json_array_append_new(all, full);
  }
  return json_pack("{so sI sI sb sb so so so sI so}", "name", cli_json_text(r->name), "calls_a",
                   (json_int_t)r->calls_a, "calls_b", (json_int_t)r->calls_b, "gpu_a", r->gpu_a,
                   "gpu_b", r->gpu_b, "appeared", appeared, "vanished", vanished, "changed",
                   changed, "unchanged", (json_int_t)same, "items", all);
}

/* --range accepts a name as summary lists it (ProfilerStep#2) or as the diff
 * shows it (ProfilerStep#N). */
static int range_matches(const char *asked, const char *name) {
  char norm[512];
  prof_normalize_name(asked, norm, sizeof norm);
  return !strcmp(asked, name) || !strcmp(norm, name);
}

/* Before anything is printed: the range exists, else one line listing them. */
static int check_range(const diff_opts *o, const prof_diff *d) {
  char names[1024] = "";
  size_t len = 0;
  for (size_t i = 0; i < d->n_ranges; i++) {
    if (range_matches(o->range, d->ranges[i].name)) return CLI_OK;
    if (len < sizeof names - 1)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                              d->ranges[i].name);
  }
  return cli_usage_error("--range %s: no range of that name in either trace (ranges: %s; "
                         "#N stands for any step number)",
                         o->range, len ? names : "none");
}

static int show(const diff_opts *o, const prof_diff *d) {
  if (o->range && check_range(o, d)) return CLI_USAGE;
  json_t *ranges = o->json ? json_array() : NULL;
  if (!o->json) {
    printf("attnprof diff: A = ");
    cli_put_cell(stdout, o->file[0], -1);
    printf(", B = ");
    cli_put_cell(stdout, o->file[1], -1);
    printf(" (per call of each range)\n");
  }
  for (size_t i = 0; i < d->n_ranges; i++) {
    const prof_diff_range *r = &d->ranges[i];
    if (o->range && !range_matches(o->range, r->name)) continue;
    if (o->json) json_array_append_new(ranges, range_json(r));
    else print_range(o, r);
  }
  if (!o->json) return CLI_OK;
  return cli_json_print(json_pack("{so so so}", "a", cli_json_text(o->file[0]), "b",
                                  cli_json_text(o->file[1]), "ranges", ranges));
}

int cmd_diff(int argc, char **argv) {
  diff_opts o = {{NULL, NULL}, NULL, 0, 0, prof_diff_opts_default()};
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
    return fputs(diff_usage, stdout), CLI_OK;
  int rc = parse_diff(argc, argv, &o);
  if (rc) return rc;
  prof_trace *t[2] = {NULL, NULL};
  prof_read_stats stats[2];
  prof_diff d;
  if (!(rc = cli_load_trace(o.file[0], &t[0], &stats[0])) &&
      !(rc = cli_load_trace(o.file[1], &t[1], &stats[1]))) {
    if (prof_diff_traces(t[0], t[1], &o.d, &d)) {
      rc = cli_failure("%s", attn_last_error());
    } else {
      rc = show(&o, &d);
      prof_diff_free(&d);
    }
  }
  prof_trace_destroy(t[0]);
  prof_trace_destroy(t[1]);
  return rc;
}
