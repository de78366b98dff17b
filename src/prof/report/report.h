/* Internals of the HTML report (prof_write_html_report), shared by its files:
 * html_out.c (escaping: HTML text and attributes, JSON inside <script>),
 * report_html.c (the page, its tables and embedded data), report_charts.c
 * (bar charts comparing the traces), report_timeline.c (the CPU and GPU
 * lanes of one forward). Everything is inline SVG and CSS: the page works
 * offline and loads nothing.
 *
 * Names in a trace are untrusted: every string from a trace reaches the page
 * through html_text (or html_json_str inside the data block), never raw. */
#ifndef ATTNPROF_SRC_PROF_REPORT_H
#define ATTNPROF_SRC_PROF_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "attnprof/prof.h"

/* Output to a FILE that remembers its first error (errno), so the writer
 * checks once at the end. */
typedef struct {
  FILE *f;
  int err;
} html_out;

void html_raw(html_out *o, const char *s);
void html_fmt(html_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A finite double as JSON (null for NaN and infinities). */
void html_num(html_out *o, double v);

/* Text as HTML: & < > " ' as entities, control characters and bytes that are
 * not UTF-8 as U+FFFD; at most max_chars characters ("..." marks a cut;
 * max_chars 0: all). Safe in element content and in quoted attributes. */
void html_text(html_out *o, const char *s, size_t max_chars);
/* A JSON string safe inside <script type="application/json">: beyond JSON's
 * escapes, < > & as \u003c \u003e \u0026 (no "</script>", no "<!--") and
 * U+2028/U+2029 as \u2028/\u2029; bytes that are not UTF-8 as U+FFFD. */
void html_json_str(html_out *o, const char *s);

/* One trace and what the page shows of it. */
typedef struct {
  const char *label;
  const prof_trace *t;
  prof_range_summary *ranges;
  int64_t n_ranges;
  prof_kernel_summary *kernels; /* inside the focus range (all when no range) */
  int64_t n_kernels;
  prof_key_average *keys;
  int64_t n_keys;
  const prof_range_summary *focus; /* the range charts and timeline show, or NULL */
  int64_t *pids;                   /* the processes (ranks) with host events, ascending */
  int64_t n_pids;
  prof_range_summary **pid_ranges; /* with several: each one's ranges (ranks.h) */
  int64_t *n_pid_ranges;
} report_trace;

/* Bar charts: the focus range's device and host time and ops per call, one
 * bar per trace. */
void report_charts(html_out *o, const report_trace *tr, size_t n);
/* Each backend with a roofline point (prof_roof) on log-log axes under the
 * copy and matmul roofs (report_roofline.c). Nothing when no trace has one. */
void report_roofline(html_out *o, const report_trace *tr, size_t n);
/* The timeline of the first call of tr->focus (or the trace's start): lanes
 * per CPU thread and GPU stream, grouped per process when there are several,
 * flows from launches to GPU work. idx numbers the svg (data-trace). */
void report_timeline(html_out *o, const report_trace *tr, size_t idx);
/* The same for the call whose range event is `call`, under an <h3> of title
 * (trusted text) and the range's name. */
void report_call_timeline(html_out *o, const report_trace *tr, size_t idx, int64_t call,
                          const char *title);
/* Device time per call of tr->focus: p50/p90/p99, a histogram, the slowest
 * calls, each with its timeline shown on a click (report_dist.c). Nothing for
 * a range without GPU work. idx numbers the trace, as for the timeline. */
void report_distribution(html_out *o, const report_trace *tr, size_t idx);

#endif
