/* The summary of a trace file (summary_json.h): built once from the
 * library's analyses, printed as text or as the JSON contract of docs/output-contract.md,
 * and checked against expectations. */
#include <stdlib.h>
#include <string.h>

#include "cli/summary_json.h"
#include "cli/traces.h"

/* "a, b, c": the range names a user may pick from. */
static void range_names(char *buf, size_t len, const prof_range_summary *rows, int64_t n) {
  buf[0] = 0;
  for (int64_t i = 0; i < n && strlen(buf) + 4 < len; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", rows[i].name);
}

static int pick_range(cli_summary *s, const char *range) {
  const prof_range_summary *r = prof_range_summary_find(s->ranges, s->n_ranges, range);
  if (!r) {
    char names[512];
    range_names(names, sizeof names, s->ranges, s->n_ranges);
    return cli_usage_error("--range %s: no range of that name in the trace (ranges: %s)", range,
                           s->n_ranges ? names : "none");
  }
  s->ranges[0] = *r;
  s->n_ranges = 1;
  return CLI_OK;
}

int cli_summary_build(const prof_trace *t, const char *range, cli_summary *s) {
  return cli_summary_build_ex(t, range, 0, s);
}

int cli_summary_build_ex(const prof_trace *t, const char *range, unsigned flags, cli_summary *s) {
  memset(s, 0, sizeof *s);
  if (range && prof_is_step_name(range)) flags |= PROF_SUMMARY_PER_STEP;
  if (prof_summarize_ranges_ex(t, flags, &s->ranges, &s->n_ranges, &s->links) ||
      prof_summarize_kernels(t, range, &s->kernels, &s->n_kernels) ||
      prof_key_averages(t, &s->keys, &s->n_keys)) {
    cli_summary_free(s);
    return cli_failure("%s", attn_last_error());
  }
  int rc = range ? pick_range(s, range) : CLI_OK;
  if (rc) cli_summary_free(s);
  return rc;
}

void cli_summary_free(cli_summary *s) {
  free(s->ranges);
  free(s->kernels);
  free(s->keys);
  memset(s, 0, sizeof *s);
}

void cli_print_links(FILE *f, const prof_link_stats *l) {
  if (l->gpu_without_launch)
    fprintf(f,
            "note: %lld GPU event(s) matched no launch call (no correlation id in common): "
            "counted in the kernel table, in no range\n",
            (long long)l->gpu_without_launch);
  if (l->launches_without_gpu)
    fprintf(f, "note: %lld launch call(s) had no GPU work in the trace\n",
            (long long)l->launches_without_gpu);
  if (l->ambiguous)
    fprintf(f,
            "note: %lld GPU event(s) carry a correlation id that launch calls of several "
            "processes share: linked to the process using that device, then by time\n",
            (long long)l->ambiguous);
  if (l->crossing_ranges)
    fprintf(f,
            "note: %lld range(s) overlap without nesting: work counts for every range open "
            "at its launch call's start\n",
            (long long)l->crossing_ranges);
}

json_t *cli_links_json(const prof_link_stats *l) {
  return json_pack("{sI sI sI sI}", "gpu_without_launch", (json_int_t)l->gpu_without_launch,
                   "launches_without_gpu", (json_int_t)l->launches_without_gpu, "ambiguous",
                   (json_int_t)l->ambiguous, "crossing_ranges", (json_int_t)l->crossing_ranges);
}

/* ---- JSON ---------------------------------------------------------------- */

json_t *cli_range_json(const prof_range_summary *r) {
  json_t *per = json_object();
  json_object_set_new(per, "total", json_real(r->per_call_total));
  json_object_set_new(per, "graph", json_real(r->graph_per_call));
  for (int k = 0; k < PROF_KIND_COUNT; k++)
    json_object_set_new(per, prof_kind_name((prof_kind)k), json_real(r->per_call_kind[k]));
  json_object_set_new(per, "device_us", json_real(r->device_us_per_call));
  json_object_set_new(per, "host_us", json_real(r->host_us_per_call));
  json_t *apis = json_object();
  for (int j = 0; j < r->n_launch_apis; j++) {
    json_t *name = cli_json_text(r->launch_api[j]); /* keys must be valid UTF-8 too */
    json_object_set_new(apis, json_string_value(name), json_real(r->launch_api_per_call[j]));
    json_decref(name);
  }
  json_object_set_new(per, "launch_api", apis);
  return json_pack("{so sI so so}", "name", cli_json_text(r->name), "calls", (json_int_t)r->calls,
                   "gpu", json_boolean(r->gpu), "per_call", per);
}

json_t *cli_kernel_json(const prof_kernel_summary *k) {
  const prof_footprint *fp = &k->fp;
  char limits[64];
  json_t *o =
      json_pack("{so sI sf sf so so so sI sI sI sI}", "name", cli_json_text(k->name), "calls",
                (json_int_t)k->calls, "device_us_avg", k->device_us_avg, "device_us_total",
                k->device_us_total, "grid", cli_json_dim3(fp->grid), "block",
                cli_json_dim3(fp->block), "cluster", cli_json_dim3(fp->cluster),
                "registers_per_thread", (json_int_t)fp->registers_per_thread, "shared_memory",
                (json_int_t)fp->static_shared_memory + fp->dynamic_shared_memory,
                "static_shared_memory", (json_int_t)fp->static_shared_memory,
                "dynamic_shared_memory", (json_int_t)fp->dynamic_shared_memory);
  json_object_set_new(o, "occupancy_pct", cli_json_known(k->occupancy_pct));
  json_object_set_new(o, "occupancy_theoretical_pct", cli_json_known(k->occupancy_theoretical_pct));
  json_object_set_new(
      o, "occupancy_limiting",
      json_string(prof_occupancy_limit_names(k->occupancy_limiting, limits, sizeof limits)));
  json_object_set_new(o, "occupancy_pct_in_file", cli_json_known(fp->occupancy_pct_in_file));
  json_object_set_new(o, "launch_api", cli_json_text(k->launch_api));
  json_object_set_new(o, "device", json_integer(k->device));
  json_object_set_new(o, "graph_calls", json_integer(k->graph_calls));
  return o;
}

json_t *cli_key_json(const prof_key_average *r) {
  return json_pack("{so ss sI sf sf sf}", "name", cli_json_text(r->name), "cat",
                   prof_cat_name(r->cat), "calls", (json_int_t)r->calls, "host_us_total",
                   r->host_us_total, "host_us_self_total", r->host_us_self_total, "device_us_total",
                   r->device_us_total);
}

static json_t *devices_json(const prof_trace *t) {
  json_t *a = json_array();
  for (size_t i = 0; i < prof_trace_device_count(t); i++) {
    const prof_device *d = prof_trace_device(t, i);
    json_array_append_new(a, json_pack("{si so si si si}", "id", d->id, "name",
                                       cli_json_text(d->name), "compute_major", d->compute_major,
                                       "compute_minor", d->compute_minor, "num_sms", d->num_sms));
  }
  return a;
}

json_t *cli_summary_json(const char *file, const prof_read_stats *stats, const prof_trace *t,
                         const cli_summary *s) {
  json_t *ranges = json_array(), *kernels = json_array(), *keys = json_array();
  for (int64_t i = 0; i < s->n_ranges; i++)
    json_array_append_new(ranges, cli_range_json(&s->ranges[i]));
  for (int64_t i = 0; i < s->n_kernels; i++)
    json_array_append_new(kernels, cli_kernel_json(&s->kernels[i]));
  for (int64_t i = 0; i < s->n_keys; i++) json_array_append_new(keys, cli_key_json(&s->keys[i]));
  return json_pack("{so so so so so so so}", "file", cli_json_text(file), "read",
                   cli_read_stats_json(stats), "devices", devices_json(t), "links",
                   cli_links_json(&s->links), "ranges", ranges, "kernels", kernels, "key_averages",
                   keys);
}

/* ---- kernel table -------------------------------------------------------- */

static void put_pct(FILE *f, double v) {
  if (v < 0) fprintf(f, " %7s", "-");
  else fprintf(f, " %6.1f%%", v);
}

void cli_print_kernels(FILE *f, const prof_kernel_summary *rows, int64_t n) {
  int NAME_W = 44; /* --wide: the longest name */
  for (int64_t i = 0; cli_wide && i < n; i++)
    if ((int)strlen(rows[i].name) > NAME_W) NAME_W = (int)strlen(rows[i].name);
  cli_put_cell(f, "kernel", NAME_W);
  fprintf(f, " %6s %11s %16s %14s %5s %9s %7s %7s %7s %-10s %s\n", "calls", "us avg", "grid",
          "block", "regs", "smem B", "occ", "theor", "file", "limit", "launch");
  for (int64_t i = 0; i < n; i++) {
    const prof_kernel_summary *k = &rows[i];
    const prof_footprint *fp = &k->fp;
    char grid[48], block[48], limits[64];
    snprintf(grid, sizeof grid, "%dx%dx%d", fp->grid[0], fp->grid[1], fp->grid[2]);
    snprintf(block, sizeof block, "%dx%dx%d", fp->block[0], fp->block[1], fp->block[2]);
    cli_put_cell(f, k->name, NAME_W);
    fprintf(f, " %6lld %11.1f %16s %14s %5d %9lld", (long long)k->calls, k->device_us_avg, grid,
            block, fp->registers_per_thread,
            (long long)fp->static_shared_memory + fp->dynamic_shared_memory);
    put_pct(f, k->occupancy_pct);
    put_pct(f, k->occupancy_theoretical_pct);
    put_pct(f, fp->occupancy_pct_in_file);
    fprintf(f, " %-10s ", prof_occupancy_limit_names(k->occupancy_limiting, limits, sizeof limits));
    cli_put_cell(f, k->launch_api ? k->launch_api : "-", -1);
    if (k->graph_calls) fprintf(f, " (%lld in CUDA graphs)", (long long)k->graph_calls);
    fputc('\n', f);
  }
}

/* ---- expectations -------------------------------------------------------- */

int cli_parse_expect(const char *value, prof_expect **out) {
  char *text = cli_expect_text(value);
  if (!text) return CLI_USAGE;
  attn_status st = prof_expect_parse(text, out);
  free(text);
  return st ? cli_usage_error("--expect: %s", attn_last_error()) : CLI_OK;
}

const char *cli_expect_range(const prof_trace *t, const char *range) {
  if (range) return range;
  prof_range_summary *rows = NULL;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  int has = n > 0 && prof_range_summary_find(rows, n, CLI_RANGE);
  free(rows);
  return has ? CLI_RANGE : NULL;
}

int cli_expect_print(FILE *f, const prof_expect *ex, const prof_trace *t, const char *range) {
  range = cli_expect_range(t, range);
  fprintf(f, "\nexpectations%s%s:\n", range ? " per " : "", range ? range : "");
  int broken = 0;
  if (prof_expect_check(ex, t, range, f, &broken))
    return cli_usage_error("--expect: %s", attn_last_error());
  fprintf(f, "%s\n", broken ? "some expectations BROKE" : "all expectations held");
  return broken ? CLI_EXPECT_BROKEN : CLI_OK;
}

json_t *cli_expect_json(const prof_expect *ex, const prof_trace *t, const char *range, int *rc) {
  size_t n = prof_expect_count(ex);
  prof_expect_result *r = calloc(n ? n : 1, sizeof *r);
  int broken = -1;
  if (r && prof_expect_evaluate(ex, t, cli_expect_range(t, range), r, &broken)) broken = -1;
  json_t *a = json_array();
  for (size_t i = 0; broken >= 0 && i < n; i++)
    json_array_append_new(
        a, json_pack("{so so sb}", "expectation", cli_json_text(r[i].text), "observed",
                     cli_json_text(r[i].observed), "held", r[i].held));
  free(r);
  *rc = broken < 0 ? cli_usage_error("--expect: %s", attn_last_error())
        : broken   ? CLI_EXPECT_BROKEN
                   : CLI_OK;
  return a;
}
