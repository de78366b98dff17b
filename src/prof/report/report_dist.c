/* The report beyond the first call: for the focus range, the distribution of
 * device time per call (p50, p90, p99 and a histogram) and the slowest calls.
 * A call's device time is the summed duration of the GPU work launched inside
 * it (the summary's rule: by the launch call's start; a range inside one of
 * the same name is part of it), so the mean of these is the summary's
 * device us per call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof/analysis/nest.h"
#include "prof/report/report.h"

enum { BINS = 20, SLOWEST = 5 };

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

static void histogram(html_out *o, const call *c, int64_t n) {
  double lo = (double)c[n - 1].device_ns / 1e3, hi = (double)c[0].device_ns / 1e3;
  double width = hi > lo ? (hi - lo) / BINS : 1;
  int64_t count[BINS] = {0}, most = 1;
  for (int64_t i = 0; i < n; i++) {
    int b = (int)(((double)c[i].device_ns / 1e3 - lo) / width);
    count[b < BINS ? b : BINS - 1]++;
  }
  for (int b = 0; b < BINS; b++) most = count[b] > most ? count[b] : most;
  html_raw(o, "<svg class=\"hist\" width=\"620\" height=\"130\">");
  for (int b = 0; b < BINS; b++) {
    double h = 100.0 * (double)count[b] / (double)most;
    html_fmt(o, "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"28\" height=\"%.1f\"><title>%.1f-%.1f us: %lld calls</title></rect>",
             10 + 30 * b, 105 - h, h, lo + b * width, lo + (b + 1) * width, (long long)count[b]);
  }
  html_fmt(o, "<text x=\"10\" y=\"122\">%.1f us</text><text x=\"560\" y=\"122\">%.1f us</text></svg>\n",
           lo, hi);
}

void report_distribution(html_out *o, const report_trace *tr) {
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
    html_fmt(o, "\"><p class=\"note\">%lld calls: p50 %.1f us, p90 %.1f us, p99 %.1f us "
                "(nearest rank), min %.1f, max %.1f</p>\n",
             (long long)n, pct_us(c, n, 0.5), pct_us(c, n, 0.9), pct_us(c, n, 0.99),
             (double)c[n - 1].device_ns / 1e3, (double)c[0].device_ns / 1e3);
    histogram(o, c, n);
    int64_t t0 = prof_trace_at(tr->t, 0)->start_ns;
    for (size_t i = 0; i < prof_trace_count(tr->t); i++)
      if (prof_trace_at(tr->t, i)->start_ns < t0) t0 = prof_trace_at(tr->t, i)->start_ns;
    html_raw(o, "<table class=\"slowest\"><tr><th>slowest calls</th><th>start (us into the trace)"
                "</th><th>device us</th><th>host us</th></tr>\n");
    for (int64_t i = 0; i < n && i < SLOWEST; i++)
      html_fmt(o, "<tr><td class=\"n\">#%lld</td><td>%.3f</td><td>%.3f</td><td>%.3f</td></tr>\n",
               (long long)i + 1, (double)(c[i].start_ns - t0) / 1e3, (double)c[i].device_ns / 1e3,
               (double)c[i].host_ns / 1e3);
    html_raw(o, "</table></div>\n");
  }
  free(c);
}
