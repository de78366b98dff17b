/* The report beyond the first call: for the focus range, the distribution of
 * device time per call (p50, p90, p99 and a histogram) and the slowest calls.
 * Each of the SLOWEST slowest calls carries its timeline, hidden until its
 * row (or the histogram bar it falls in) is clicked: a link to the fragment
 * #call-T-K, shown by CSS :target, so the page stays free of scripts. Only
 * those calls are embedded, which bounds the file's size; the page says so.
 * A call's device time is the summed duration of the GPU work launched inside
 * it (the summary's rule: by the launch call's start; a range inside one of
 * the same name is part of it), so the mean of these is the summary's
 * device us per call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof/analysis/nest.h"
#include "prof/report/report.h"

enum { BINS = 20, SLOWEST = 10 };

typedef struct {
  int64_t idx, device_ns, host_ns, start_ns;
} call;

static int cmp_device(const void *a, const void *b) {
  const call *x = a, *y = b;
  if (x->device_ns != y->device_ns) return x->device_ns > y->device_ns ? -1 : 1;
  return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int named(const prof_trace *t, int64_t r, const char *name) {
  const char *n = prof_trace_at(t, (size_t)r)->name;
  return n && !strcmp(n, name);
}

/* The outermost range named `name` open at event i's reference time, or -1. */
static int64_t outer_call(const prof_trace *t, const prof_nest *nest, size_t i, const char *name) {
  int64_t ts = prof_nest_ref_ns(t, nest, i), found = -1;
  for (int64_t r = nest->range[i]; r >= 0; r = prof_nest_outer(t, nest, r, ts))
    if (named(t, r, name)) found = r;
  return found;
}

/* The calls of `name` with their device time, slowest first; their count or -1. */
static int64_t tally(const prof_trace *t, const char *name, call **out) {
  const prof_nest *nest = prof_nest_acquire(t);
  if (!nest) return -1;
  int64_t *slot = malloc((nest->n ? nest->n : 1) * sizeof *slot);
  call *calls = malloc((nest->n ? nest->n : 1) * sizeof *calls);
  int64_t n = -1;
  if (slot && calls) {
    n = 0;
    for (size_t i = 0; i < nest->n; i++) {
      const prof_event *e = prof_trace_at(t, i);
      slot[i] = -1;
      if (e->cat != PROF_CAT_USER_ANNOTATION || !named(t, (int64_t)i, name)) continue;
      if (outer_call(t, nest, i, name) >= 0) continue; /* part of an enclosing call */
      slot[i] = n;
      calls[n++] = (call){(int64_t)i, 0, e->dur_ns, e->start_ns};
    }
    for (size_t i = 0; i < nest->n; i++) {
      if (!prof_cat_is_gpu_activity(prof_trace_at(t, i)->cat)) continue;
      int64_t c = outer_call(t, nest, i, name);
      if (c >= 0 && slot[c] >= 0) calls[slot[c]].device_ns += prof_trace_at(t, i)->dur_ns;
    }
    if (n > 1) qsort(calls, (size_t)n, sizeof *calls, cmp_device);
  }
  free(slot);
  prof_nest_release(nest);
  if (n < 0) free(calls), calls = NULL;
  *out = calls;
  return n;
}

/* Nearest rank: the smallest value with at least p of the calls at or below it. */
static double pct_us(const call *slowest_first, int64_t n, double p) {
  int64_t rank = (int64_t)ceil(p * (double)n); /* 1-based, ascending */
  if (rank < 1) rank = 1;
  return (double)slowest_first[n - rank].device_ns / 1e3;
}

static int bin_of(double us, double lo, double width) {
  int b = (int)((us - lo) / width);
  return b < BINS ? b : BINS - 1;
}

/* A bar holding one of the embedded slowest calls links to the slowest of them. */
static void histogram(html_out *o, const call *c, int64_t n, size_t idx) {
  double lo = (double)c[n - 1].device_ns / 1e3, hi = (double)c[0].device_ns / 1e3;
  double width = hi > lo ? (hi - lo) / BINS : 1;
  int64_t count[BINS] = {0}, most = 1;
  int64_t slowest_in[BINS];
  for (int b = 0; b < BINS; b++) slowest_in[b] = -1;
  for (int64_t i = n - 1; i >= 0; i--) { /* fastest first: the slowest of a bin is left */
    int b = bin_of((double)c[i].device_ns / 1e3, lo, width);
    count[b]++;
    if (i < SLOWEST) slowest_in[b] = i;
  }
  for (int b = 0; b < BINS; b++) most = count[b] > most ? count[b] : most;
  html_raw(o, "<svg class=\"hist\" width=\"620\" height=\"130\">");
  for (int b = 0; b < BINS; b++) {
    double h = 100.0 * (double)count[b] / (double)most;
    if (slowest_in[b] >= 0)
      html_fmt(o, "<a href=\"#call-%zu-%lld\">", idx, (long long)slowest_in[b] + 1);
    html_fmt(o,
             "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"28\" "
             "height=\"%.1f\"><title>%.1f-%.1f us: %lld calls%s</title></rect>",
             10 + 30 * b, 105 - h, h, lo + b * width, lo + (b + 1) * width, (long long)count[b],
             slowest_in[b] >= 0 ? " (click: the slowest's timeline)" : "");
    if (slowest_in[b] >= 0) html_raw(o, "</a>");
  }
  html_fmt(
      o, "<text x=\"10\" y=\"122\">%.1f us</text><text x=\"560\" y=\"122\">%.1f us</text></svg>\n",
      lo, hi);
}

/* The slowest calls' table: a row per call, its first cell the link to its
 * timeline; the process where the trace has several. */
static void slowest_table(html_out *o, const report_trace *tr, const call *c, int64_t n,
                          size_t idx) {
  int64_t t0 = prof_trace_at(tr->t, 0)->start_ns;
  for (size_t i = 0; i < prof_trace_count(tr->t); i++)
    if (prof_trace_at(tr->t, i)->start_ns < t0) t0 = prof_trace_at(tr->t, i)->start_ns;
  int ranks = tr->n_pids > 1;
  html_fmt(o,
           "<table class=\"slowest\"><tr><th>slowest calls (click: timeline)</th>%s<th>start "
           "(us into the trace)</th><th>device us</th><th>host us</th></tr>\n",
           ranks ? "<th>process</th>" : "");
  for (int64_t i = 0; i < n && i < SLOWEST; i++) {
    html_fmt(o, "<tr><td class=\"n\"><a href=\"#call-%zu-%lld\">#%lld</a></td>", idx,
             (long long)i + 1, (long long)i + 1);
    if (ranks) html_fmt(o, "<td>%lld</td>", (long long)prof_trace_at(tr->t, (size_t)c[i].idx)->pid);
    html_fmt(o, "<td>%.3f</td><td>%.3f</td><td>%.3f</td></tr>\n",
             (double)(c[i].start_ns - t0) / 1e3, (double)c[i].device_ns / 1e3,
             (double)c[i].host_ns / 1e3);
  }
  html_raw(o, "</table>\n");
}

/* The slowest calls' timelines, each hidden until its link is followed. */
static void slowest_timelines(html_out *o, const report_trace *tr, const call *c, int64_t n,
                              size_t idx) {
  int64_t k = n < SLOWEST ? n : SLOWEST;
  html_fmt(o,
           "<p class=\"note\">The page holds the timelines of the %lld slowest of %lld calls "
           "only (click a row above, or a bar holding one).</p>\n",
           (long long)k, (long long)n);
  for (int64_t i = 0; i < k; i++) {
    char title[64];
    snprintf(title, sizeof title, "slowest call #%lld of ", (long long)i + 1);
    html_fmt(o, "<div class=\"call-tl\" id=\"call-%zu-%lld\" data-device-us=\"", idx,
             (long long)i + 1);
    html_num(o, (double)c[i].device_ns / 1e3);
    html_raw(o, "\">");
    report_call_timeline(o, tr, idx, c[i].idx, title);
    html_raw(o, "</div>\n");
  }
}

void report_distribution(html_out *o, const report_trace *tr, size_t idx) {
  if (!tr->focus || !tr->focus->gpu) return;
  call *c = NULL;
  int64_t n = tally(tr->t, tr->focus->name, &c);
  if (n > 0) {
    html_raw(o, "<h3>Device time per call of ");
    html_text(o, tr->focus->name, 0);
    html_fmt(o, "</h3>\n<div class=\"dist\" data-calls=\"%lld\" data-p50-us=\"", (long long)n);
    html_num(o, pct_us(c, n, 0.50));
    html_raw(o, "\" data-p90-us=\"");
    html_num(o, pct_us(c, n, 0.90));
    html_raw(o, "\" data-p99-us=\"");
    html_num(o, pct_us(c, n, 0.99));
    html_fmt(o,
             "\"><p class=\"note\">%lld calls: p50 %.1f us, p90 %.1f us, p99 %.1f us "
             "(nearest rank), min %.1f, max %.1f</p>\n",
             (long long)n, pct_us(c, n, 0.5), pct_us(c, n, 0.9), pct_us(c, n, 0.99),
             (double)c[n - 1].device_ns / 1e3, (double)c[0].device_ns / 1e3);
    histogram(o, c, n, idx);
    slowest_table(o, tr, c, n, idx);
    slowest_timelines(o, tr, c, n, idx);
    html_raw(o, "</div>\n");
  }
  free(c);
}
