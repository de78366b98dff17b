/* The HTML report (prof_write_html_report): one self-contained page over one
 * or more traces. Top to bottom: the traces compared in bar charts; then per
 * trace a timeline of one forward (CPU and GPU lanes), its per-range table,
 * its kernel table (occupancy ours beside the file's) and its key averages;
 * at the end the same figures as JSON in a data block for scripts. No
 * external asset, no script that runs: the page is inert and offline. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "attnprof/prof/ranks.h"
#include "prof/report/report.h"

/* Rows shown: a trace of thousands of ProfilerStep#N ranges would otherwise
 * make a page of megabytes that says nothing more. */
enum { NAME_CHARS = 90, KEY_ROWS = 15, RANGE_ROWS = 40 };

/* Whether range row i is shown: the first RANGE_ROWS, and the focus range. */
static int range_shown(const report_trace *tr, int64_t i) {
  return i < RANGE_ROWS || &tr->ranges[i] == tr->focus;
}

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:36px;border-bottom:1px solid #ccc}"
    "h3{font-size:15px;margin-bottom:4px}"
    "table{border-collapse:collapse;margin:6px 0 12px}"
    "th,td{border:1px solid #ddd;padding:2px "
    "6px;text-align:right;font-variant-numeric:tabular-nums}"
    "th{background:#f3f3f3}th:first-child{text-align:left}"
    "td.n{text-align:left;max-width:640px;overflow-wrap:anywhere}td.api{text-align:left;white-"
    "space:nowrap}"
    "svg{display:block;margin:6px 0 12px}svg text{font:11px system-ui,sans-serif}"
    ".lane{fill:#fafafa;stroke:#eee}.axis{stroke:#999}"
    ".c-user_annotation{fill:#9b7fd1}.c-cpu_op{fill:#5b8fd6}.c-cuda_runtime{fill:#e39a3b}"
    ".c-cuda_driver{fill:#b5763a}.c-kernel{fill:#3aa55d}.c-gpu_memcpy{fill:#d9534f}"
    ".c-gpu_memset{fill:#e6c229}.c-gpu_user_annotation{fill:#c7b8e8}.c-other,.c-cuda_sync{fill:#"
    "999}"
    ".outside{opacity:.35}.bar{fill:#5b8fd6}.k-kernel{fill:#3aa55d}.k-memcpy{fill:#d9534f}"
    ".k-memset{fill:#e6c229}.k-cpu{fill:#5b8fd6}"
    ".flow{stroke:#555;stroke-width:.7;opacity:.6}text.rank{font-weight:600}"
    ".call-tl{display:none;border-left:3px solid #5b8fd6;padding-left:8px}.call-tl:target{display:"
    "block}tr.rank td{color:#555;font-size:12px}tr.rank td.n{padding-left:18px}"
    ".note{color:#666;font-size:12px}.legend span{display:inline-block;padding:0 "
    "8px;margin-right:4px;"
    "color:#fff}.legend .k-kernel{background:#3aa55d}.legend .k-memcpy{background:#d9534f}"
    ".legend .k-memset{background:#e6c229;color:#222}.legend .k-cpu{background:#5b8fd6}";

/* A number cell: prec digits after the point, or prec < 0: 3 significant. */
static void td_num(html_out *o, int prec, double v) {
  if (prec < 0) html_fmt(o, "<td>%.3g</td>", v);
  else html_fmt(o, "<td>%.*f</td>", prec, v);
}

static void td_name(html_out *o, const char *s) {
  html_raw(o, "<td class=\"n\" title=\"");
  html_text(o, s, 0);
  html_raw(o, "\">");
  html_text(o, s, NAME_CHARS);
  html_raw(o, "</td>");
}

static void td_pct(html_out *o, double v) {
  if (v < 0) html_raw(o, "<td>-</td>");
  else html_fmt(o, "<td>%.1f%%</td>", v);
}

static void range_cells(html_out *o, const prof_range_summary *r) {
  td_num(o, 0, (double)r->calls);
  td_num(o, -1, r->per_call_total);
  for (int k = PROF_KIND_KERNEL; k <= PROF_KIND_MEMSET; k++) td_num(o, -1, r->per_call_kind[k]);
  /* A range without GPU events has no device time (its ops are CPU
   * ops): "-" here, as key averages' 0 device time says. */
  if (r->gpu) td_num(o, 1, r->device_us_per_call);
  else html_raw(o, "<td>-</td>");
  td_num(o, 1, r->host_us_per_call);
  html_raw(o, "<td class=\"n\">");
  for (int j = 0; j < r->n_launch_apis; j++) {
    html_raw(o, j ? ", " : "");
    html_text(o, r->launch_api[j], NAME_CHARS);
    html_fmt(o, " &times;%g", r->launch_api_per_call[j]);
  }
  html_raw(o, "</td>");
}

/* Under a range's row, one per process that ran it (traces of several ranks). */
static void rank_rows(html_out *o, const report_trace *tr, const char *name) {
  for (int64_t p = 0; tr->pid_ranges && p < tr->n_pids; p++) {
    const prof_range_summary *r =
        prof_range_summary_find(tr->pid_ranges[p], tr->n_pid_ranges[p], name);
    if (!r) continue;
    html_fmt(o, "<tr class=\"rank\" data-pid=\"%lld\"><td class=\"n\">process %lld</td>",
             (long long)tr->pids[p], (long long)tr->pids[p]);
    range_cells(o, r);
    html_raw(o, "</tr>\n");
  }
}

static void ranges_table(html_out *o, const report_trace *tr) {
  if (tr->pid_ranges)
    html_fmt(o,
             "<p class=\"note\">%lld processes (ranks) in this trace: each range has a row "
             "per process under it, and the timelines a lane group per process.</p>\n",
             (long long)tr->n_pids);
  html_raw(o, "<h3>Per range (per call)</h3><table class=\"ranges\"><tr><th>range</th><th>calls"
              "</th><th>ops</th><th>kernel</th><th>memcpy</th><th>memset</th><th>device us</th>"
              "<th>host us</th><th>launch APIs</th></tr>\n");
  for (int64_t i = 0; i < tr->n_ranges; i++) {
    const prof_range_summary *r = &tr->ranges[i];
    if (!range_shown(tr, i)) continue;
    html_raw(o, "<tr>");
    td_name(o, r->name);
    range_cells(o, r);
    html_raw(o, "</tr>\n");
    rank_rows(o, tr, r->name);
  }
  html_raw(o, "</table>\n");
  if (tr->n_ranges > RANGE_ROWS)
    html_fmt(o,
             "<p class=\"note\">%lld more ranges not shown (attnprof summary lists them all)</p>\n",
             (long long)(tr->n_ranges - RANGE_ROWS -
                         (tr->focus && tr->focus - tr->ranges >= RANGE_ROWS)));
}

static void kernels_table(html_out *o, const report_trace *tr) {
  if (!tr->n_kernels) return;
  html_raw(o, "<h3>Kernels</h3><table class=\"kernels\"><tr><th>kernel</th><th>calls</th><th>avg us"
              "</th><th>grid</th><th>block</th><th>regs</th><th>shared B</th><th>occupancy (ours)"
              "</th><th>theoretical</th><th>occupancy (file)</th><th>launch</th></tr>\n");
  for (int64_t i = 0; i < tr->n_kernels; i++) {
    const prof_kernel_summary *k = &tr->kernels[i];
    const prof_footprint *fp = &k->fp;
    html_raw(o, "<tr>");
    td_name(o, k->name);
    td_num(o, 0, (double)k->calls);
    td_num(o, 1, k->device_us_avg);
    html_fmt(
        o, "<td>%d&times;%d&times;%d</td><td>%d&times;%d&times;%d</td><td>%d</td><td>%lld</td>",
        fp->grid[0], fp->grid[1], fp->grid[2], fp->block[0], fp->block[1], fp->block[2],
        fp->registers_per_thread, (long long)fp->static_shared_memory + fp->dynamic_shared_memory);
    td_pct(o, k->occupancy_pct);
    td_pct(o, k->occupancy_theoretical_pct);
    td_pct(o, fp->occupancy_pct_in_file);
    html_raw(o, "<td class=\"api\">");
    html_text(o, k->launch_api ? k->launch_api : "-", NAME_CHARS);
    html_raw(o, "</td>");
    html_raw(o, "</tr>\n");
  }
  html_raw(o, "</table>\n");
}

static void keys_table(html_out *o, const report_trace *tr) {
  int64_t n = tr->n_keys < KEY_ROWS ? tr->n_keys : KEY_ROWS;
  html_fmt(o,
           "<h3>Key averages (top %lld of %lld)</h3><table class=\"keys\"><tr><th>name</th>"
           "<th>cat</th><th>calls</th><th>host total us</th><th>self us</th><th>device total us"
           "</th></tr>\n",
           (long long)n, (long long)tr->n_keys);
  for (int64_t i = 0; i < n; i++) {
    const prof_key_average *r = &tr->keys[i];
    html_raw(o, "<tr>");
    td_name(o, r->name);
    html_fmt(o, "<td class=\"n\">%s</td>", prof_cat_name(r->cat));
    td_num(o, 0, (double)r->calls);
    td_num(o, 1, r->host_us_total);
    td_num(o, 1, r->host_us_self_total);
    td_num(o, 1, r->device_us_total);
    html_raw(o, "</tr>\n");
  }
  html_raw(o, "</table>\n");
}

/* ---- the data block ------------------------------------------------------ */

static void data_range(html_out *o, const prof_range_summary *r) {
  html_raw(o, "{\"name\": ");
  html_json_str(o, r->name);
  html_fmt(o, ", \"calls\": %lld, \"kernel\": ", (long long)r->calls);
  html_num(o, r->per_call_kind[PROF_KIND_KERNEL]);
  html_raw(o, ", \"memcpy\": ");
  html_num(o, r->per_call_kind[PROF_KIND_MEMCPY]);
  html_raw(o, ", \"memset\": ");
  html_num(o, r->per_call_kind[PROF_KIND_MEMSET]);
  html_raw(o, ", \"device_us\": ");
  if (r->gpu) html_num(o, r->device_us_per_call);
  else html_raw(o, "null");
  html_raw(o, ", \"host_us\": ");
  html_num(o, r->host_us_per_call);
  html_raw(o, "}");
}

static void data_block(html_out *o, const report_trace *tr, size_t n) {
  html_raw(o, "<script type=\"application/json\" id=\"attnprof-data\">{\"traces\": [");
  for (size_t i = 0; i < n; i++) {
    html_raw(o, i ? ", {\"label\": " : "{\"label\": ");
    html_json_str(o, tr[i].label);
    html_raw(o, ", \"ranges\": [");
    for (int64_t r = 0, shown = 0; r < tr[i].n_ranges; r++) {
      if (!range_shown(&tr[i], r)) continue;
      html_raw(o, shown++ ? ", " : "");
      data_range(o, &tr[i].ranges[r]);
    }
    html_raw(o, "], \"processes\": [");
    for (int64_t p = 0; p < tr[i].n_pids; p++) {
      html_fmt(o, "%s{\"pid\": %lld, \"ranges\": [", p ? ", " : "", (long long)tr[i].pids[p]);
      for (int64_t r = 0; tr[i].pid_ranges && r < tr[i].n_pid_ranges[p]; r++) {
        html_raw(o, r ? ", " : "");
        data_range(o, &tr[i].pid_ranges[p][r]);
      }
      html_raw(o, "]}");
    }
    html_raw(o, "], \"kernels\": [");
    for (int64_t k = 0; k < tr[i].n_kernels; k++) {
      html_raw(o, k ? ", {\"name\": " : "{\"name\": ");
      html_json_str(o, tr[i].kernels[k].name);
      html_fmt(o, ", \"calls\": %lld, \"device_us_avg\": ", (long long)tr[i].kernels[k].calls);
      html_num(o, tr[i].kernels[k].device_us_avg);
      html_raw(o, "}");
    }
    html_raw(o, "]}");
  }
  html_raw(o, "]}</script>\n");
}

/* ---- the page ------------------------------------------------------------ */

static void trace_section(html_out *o, const report_trace *tr, size_t idx) {
  html_fmt(o, "<section class=\"trace\" id=\"trace-%zu\"><h2>", idx);
  html_text(o, tr->label, 0);
  html_fmt(o, "</h2><p class=\"note\">%zu events", prof_trace_count(tr->t));
  for (size_t d = 0; d < prof_trace_device_count(tr->t); d++) {
    const prof_device *dev = prof_trace_device(tr->t, d);
    html_fmt(o, "; device %d: ", dev->id);
    html_text(o, dev->name, 0);
    html_fmt(o, " (sm_%d%d, %d SMs)", dev->compute_major, dev->compute_minor, dev->num_sms);
  }
  html_raw(o, "</p>\n");
  report_timeline(o, tr, idx);
  report_distribution(o, tr, idx);
  ranges_table(o, tr);
  kernels_table(o, tr);
  keys_table(o, tr);
  html_raw(o, "</section>\n");
}

/* Several files: a trace per rank (rank = the order given), the focus
 * range's figures side by side, as `attnprof summary FILE FILE...` gives. */
static void ranks_table(html_out *o, const report_trace *tr, size_t n) {
  if (n < 2) return;
  html_raw(o, "<h2>Per rank</h2><p class=\"note\">rank = the order of the files; the range each "
              "trace shows, per call.</p><table class=\"ranks\"><tr><th>rank</th><th>trace</th>"
              "<th>range</th><th>calls</th><th>ops</th><th>kernel</th><th>memcpy</th><th>memset"
              "</th><th>device us</th><th>host us</th><th>launch APIs</th></tr>\n");
  for (size_t i = 0; i < n; i++) {
    html_fmt(o, "<tr><td>%zu</td>", i);
    td_name(o, tr[i].label);
    if (tr[i].focus) {
      td_name(o, tr[i].focus->name);
      range_cells(o, tr[i].focus);
    } else {
      html_raw(o, "<td class=\"n\">(no range)</td>");
    }
    html_raw(o, "</tr>\n");
  }
  html_raw(o, "</table>\n");
}

static void page(html_out *o, const report_trace *tr, size_t n) {
  html_raw(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
              "style-src 'unsafe-inline'; img-src data:\">"
              "<title>attnprof report</title><style>");
  html_raw(o, css);
  html_raw(o, "</style></head><body>\n<h1>attnprof report</h1>\n<p class=\"note\">");
  html_fmt(o, "%zu trace%s:", n, n == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++) {
    html_fmt(o, "%s <a href=\"#trace-%zu\">", i ? "," : "", i);
    html_text(o, tr[i].label, 0);
    html_raw(o, "</a>");
  }
  html_raw(o,
           ". Times are per call of the range shown; hover a bar or an event for its name.</p>\n");
  ranks_table(o, tr, n);
  report_charts(o, tr, n);
  report_roofline(o, tr, n);
  for (size_t i = 0; i < n; i++) trace_section(o, &tr[i], i);
  data_block(o, tr, n);
  html_raw(o, "</body></html>\n");
}

/* ---- the analyses behind it ---------------------------------------------- */

static const prof_range_summary *focus_of(const report_trace *tr, const char *range) {
  const prof_range_summary *r =
      range ? prof_range_summary_find(tr->ranges, tr->n_ranges, range) : NULL;
  if (!r) r = prof_range_summary_find(tr->ranges, tr->n_ranges, "attn_fwd");
  return r ? r : tr->n_ranges ? &tr->ranges[0] : NULL;
}

static int prepare(report_trace *tr, const prof_report_input *in, const char *range) {
  memset(tr, 0, sizeof *tr);
  tr->label = in->label ? in->label : "trace";
  tr->t = in->t;
  if (prof_summarize_ranges(in->t, &tr->ranges, &tr->n_ranges)) return -1;
  tr->focus = focus_of(tr, range);
  if (prof_summarize_kernels(in->t, tr->focus ? tr->focus->name : NULL, &tr->kernels,
                             &tr->n_kernels) ||
      prof_key_averages(in->t, &tr->keys, &tr->n_keys) ||
      prof_trace_pids(in->t, &tr->pids, &tr->n_pids))
    return -1;
  if (tr->n_pids < 2) return 0;
  tr->pid_ranges = calloc((size_t)tr->n_pids, sizeof *tr->pid_ranges);
  tr->n_pid_ranges = calloc((size_t)tr->n_pids, sizeof *tr->n_pid_ranges);
  if (!tr->pid_ranges || !tr->n_pid_ranges) return -1;
  for (int64_t p = 0; p < tr->n_pids; p++)
    if (prof_summarize_ranges_pid(in->t, PROF_SUMMARY_PER_STEP, tr->pids[p], &tr->pid_ranges[p],
                                  &tr->n_pid_ranges[p]))
      return -1;
  return 0;
}

static void release(report_trace *tr) {
  for (int64_t p = 0; tr->pid_ranges && p < tr->n_pids; p++) free(tr->pid_ranges[p]);
  free(tr->pid_ranges);
  free(tr->n_pid_ranges);
  free(tr->pids);
  free(tr->ranges);
  free(tr->kernels);
  free(tr->keys);
}

attn_status prof_write_html_report_file(FILE *f, const prof_report_input *in, size_t n,
                                        const char *range) {
  report_trace *tr = calloc(n ? n : 1, sizeof *tr);
  html_out *o = malloc(sizeof *o);
  int rc = tr && o ? 0 : -1;
  for (size_t i = 0; !rc && i < n; i++) rc = prepare(&tr[i], &in[i], range);
  if (!rc) {
    o->f = f, o->err = 0;
    page(o, tr, n);
    if (!o->err && fflush(f)) o->err = errno ? errno : EIO;
  }
  attn_status st =
      rc       ? attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for the report")
      : o->err ? attn_fail(ATTN_STATUS_IO_ERROR, "cannot write the report: %s", strerror(o->err))
               : ATTN_STATUS_OK;
  for (size_t i = 0; tr && i < n; i++) release(&tr[i]);
  free(tr);
  free(o);
  return st;
}

attn_status prof_write_html_report(const char *path, const prof_report_input *in, size_t n,
                                   const char *range) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "report path too long");
  FILE *f = fopen(tmp, "w");
  if (!f) return attn_fail(ATTN_STATUS_IO_ERROR, "%s: cannot create: %s", tmp, strerror(errno));
  attn_status st = prof_write_html_report_file(f, in, n, range);
  if (fclose(f) && !st)
    st = attn_fail(ATTN_STATUS_IO_ERROR, "%s: cannot write: %s", tmp, strerror(errno));
  if (!st && rename(tmp, path))
    st = attn_fail(ATTN_STATUS_IO_ERROR, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
  if (st) remove(tmp);
  return st;
}
