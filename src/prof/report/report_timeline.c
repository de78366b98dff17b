/* The report's timeline: one call of the focus range (the first, or one of
 * the slowest) as lanes of inline SVG, a lane per CPU thread (nested events
 * stacked by depth) and per GPU stream, and a flow line from each launch call
 * to the GPU work it launched. The window runs from the call's start to the
 * end of the last GPU activity it launched, so kernels that finish after the
 * range closed are in view; GPU work in the window that the call did not
 * launch is drawn faded. With several processes (ranks) the lanes are grouped
 * per process under a header, a GPU stream with the process that launched on
 * it. Every event has a tooltip (SVG <title>). */
#include <stdlib.h>
#include <string.h>

#include "prof/analysis/nest.h"
#include "prof/report/report.h"

enum {
  LEFT = 190,
  WIDTH = 1000,
  ROW = 18,
  AXIS = 26,
  MAX_DEPTH = 12,
  MAX_LANES = 48,
  MAX_DRAWN = 3000
};

typedef struct {
  int64_t a, b; /* pid and tid, or device and stream */
  int64_t proc; /* the process: pid, or for a stream the launching one (-1: unknown) */
  int gpu, rows, y;
} lane;

typedef struct {
  html_out *o;
  const prof_trace *t;
  const prof_nest *nest;
  int64_t call, w0, w1; /* the call drawn (-1: none), the window in ns */
  int *depth;           /* host events: nesting depth */
  lane lanes[MAX_LANES];
  int first;           /* the first call's timeline (else one of the slowest: class "call") */
  int n_lanes, groups; /* groups: lane groups per process, when more than one */
  size_t drawn, skipped, flows;
  char *shown; /* events drawn, for the flows */
} tl_ctx;

static int is_gpu_row(prof_cat c) {
  return prof_cat_is_gpu_activity(c) || c == PROF_CAT_GPU_USER_ANNOTATION ||
         c == PROF_CAT_CUDA_SYNC;
}

static int in_call(const tl_ctx *c, size_t i) {
  int64_t ts = prof_nest_ref_ns(c->t, c->nest, i);
  for (int64_t r = c->nest->range[i]; r >= 0; r = prof_nest_outer(c->t, c->nest, r, ts))
    if (r == c->call) return 1;
  return 0;
}

/* The call's span and the GPU work it launched; the whole trace without a call. */
static void window(tl_ctx *c) {
  int first = 1;
  for (size_t i = 0; i < c->nest->n; i++) {
    const prof_event *e = prof_trace_at(c->t, i);
    int take =
        c->call < 0 || (size_t)c->call == i || (prof_cat_is_gpu_activity(e->cat) && in_call(c, i));
    if (!take) continue;
    if (first || e->start_ns < c->w0) c->w0 = e->start_ns;
    if (first || e->start_ns + e->dur_ns > c->w1) c->w1 = e->start_ns + e->dur_ns;
    first = 0;
  }
  if (c->w1 <= c->w0) c->w1 = c->w0 + 1;
}

static int visible(const tl_ctx *c, const prof_event *e) {
  return e->start_ns <= c->w1 && e->start_ns + e->dur_ns >= c->w0 &&
         (is_gpu_row(e->cat) || prof_cat_is_host(e->cat));
}

/* The process behind event i: its own, or its launch call's for GPU work. */
static int64_t proc_of(const tl_ctx *c, size_t i, const prof_event *e) {
  if (!is_gpu_row(e->cat)) return e->pid;
  int64_t l = c->nest->launch[i];
  return l >= 0 ? prof_trace_at(c->t, (size_t)l)->pid : -1;
}

static lane *lane_of(tl_ctx *c, size_t i, const prof_event *e) {
  int gpu = is_gpu_row(e->cat);
  int64_t a = gpu ? (e->device >= 0 ? e->device : e->pid) : e->pid;
  int64_t b = gpu ? (e->stream >= 0 ? e->stream : e->tid) : e->tid;
  for (int k = 0; k < c->n_lanes; k++) {
    lane *l = &c->lanes[k];
    if (l->gpu != gpu || l->a != a || l->b != b) continue;
    if (l->proc < 0) l->proc = proc_of(c, i, e);
    return l;
  }
  if (c->n_lanes == MAX_LANES) return NULL;
  c->lanes[c->n_lanes] = (lane){a, b, proc_of(c, i, e), gpu, 1, 0};
  return &c->lanes[c->n_lanes++];
}

/* Row of an event within its lane: nesting depth on the CPU; on the GPU the
 * annotations above (row 0) and the activities below (row 1). */
static int row_of(const tl_ctx *c, size_t i, const prof_event *e) {
  if (!is_gpu_row(e->cat)) return c->depth[i] < MAX_DEPTH ? c->depth[i] : MAX_DEPTH - 1;
  return e->cat == PROF_CAT_GPU_USER_ANNOTATION ? 0 : 1;
}

/* Per process (unknown last), CPU lanes before GPU ones. */
static int cmp_lane(const void *pa, const void *pb) {
  const lane *a = pa, *b = pb;
  if (a->proc != b->proc) return a->proc < 0 ? 1 : b->proc < 0 ? -1 : a->proc < b->proc ? -1 : 1;
  if (a->gpu != b->gpu) return a->gpu - b->gpu;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return (a->b > b->b) - (a->b < b->b);
}

static void layout(tl_ctx *c) {
  for (size_t j = 0; j < c->nest->n_order; j++) { /* parents come before children */
    int64_t i = c->nest->order[j], p = c->nest->parent[i];
    c->depth[i] = p >= 0 ? c->depth[p] + 1 : 0;
  }
  for (size_t i = 0; i < c->nest->n; i++) {
    const prof_event *e = prof_trace_at(c->t, i);
    lane *l = visible(c, e) ? lane_of(c, i, e) : NULL;
    int r = l ? row_of(c, i, e) + 1 : 0;
    if (l && r > l->rows) l->rows = r;
  }
  qsort(c->lanes, (size_t)c->n_lanes, sizeof c->lanes[0], cmp_lane);
  int y = AXIS;
  for (int i = 0; i < c->n_lanes; i++) {
    if (c->groups && (!i || c->lanes[i].proc != c->lanes[i - 1].proc)) y += ROW; /* header */
    c->lanes[i].y = y, y += c->lanes[i].rows * ROW + 4;
  }
}

static double x_of(const tl_ctx *c, int64_t ns) {
  if (ns < c->w0) ns = c->w0;
  if (ns > c->w1) ns = c->w1;
  return LEFT + (double)(ns - c->w0) * WIDTH / (double)(c->w1 - c->w0);
}

static void event(tl_ctx *c, size_t i, const prof_event *e, const lane *l) {
  html_out *o = c->o;
  double x = x_of(c, e->start_ns), w = x_of(c, e->start_ns + e->dur_ns) - x;
  int y = l->y + row_of(c, i, e) * ROW;
  int outside = c->call >= 0 && prof_cat_is_gpu_activity(e->cat) && !in_call(c, i);
  html_fmt(o,
           "<g class=\"ev c-%s%s\"><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\"><title>",
           prof_cat_name(e->cat), outside ? " outside" : "", x, y + 1, w < 0.5 ? 0.5 : w, ROW - 2);
  html_text(o, e->name, 400);
  html_fmt(o, " (%s, %.3f us)</title></rect>", prof_cat_name(e->cat), (double)e->dur_ns / 1e3);
  if (w > 40) {
    html_fmt(o, "<text x=\"%.2f\" y=\"%d\" fill=\"#fff\" pointer-events=\"none\">", x + 2,
             y + ROW - 5);
    html_text(o, e->name, (size_t)(w / 6.5));
    html_raw(o, "</text>");
  }
  html_raw(o, "</g>\n");
}

/* A tick spacing of 1, 2 or 5 times a power of ten: about 8 ticks. */
static double nice_step(double span) {
  double raw = span / 8, p = 1;
  while (p * 10 <= raw) p *= 10;
  while (p > raw) p /= 10;
  return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

static void lanes_and_axis(tl_ctx *c, int height) {
  html_out *o = c->o;
  double span_us = (double)(c->w1 - c->w0) / 1e3, step = nice_step(span_us);
  for (double t = 0; t <= span_us * 1.0001; t += step) {
    double x = LEFT + t / span_us * WIDTH;
    html_fmt(o,
             "<line class=\"axis\" x1=\"%.2f\" x2=\"%.2f\" y1=\"18\" y2=\"%d\" "
             "stroke-dasharray=\"2,4\"/>"
             "<text x=\"%.2f\" y=\"12\">%g us</text>\n",
             x, x, height, x + 2, t);
  }
  for (int i = 0; i < c->n_lanes; i++) {
    const lane *l = &c->lanes[i];
    if (c->groups && (!i || l->proc != c->lanes[i - 1].proc)) {
      if (l->proc >= 0)
        html_fmt(o, "<text class=\"rank\" x=\"4\" y=\"%d\" data-pid=\"%lld\">process %lld</text>\n",
                 l->y - 5, (long long)l->proc, (long long)l->proc);
      else html_fmt(o, "<text class=\"rank\" x=\"4\" y=\"%d\">launch unknown</text>\n", l->y - 5);
    }
    html_fmt(o,
             "<rect class=\"lane\" x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
             "<text x=\"4\" y=\"%d\">%s %lld %s %lld</text>\n",
             l->y, LEFT + WIDTH, l->rows * ROW, l->y + 13, l->gpu ? "GPU" : "CPU pid",
             (long long)l->a, l->gpu ? "stream" : "tid", (long long)l->b);
  }
}

/* Top (top != 0) or bottom of event i's row, for a flow's end. */
static double row_edge(tl_ctx *c, size_t i, const prof_event *e, int top) {
  const lane *l = lane_of(c, i, e);
  return l->y + row_of(c, i, e) * ROW + (top ? 1 : ROW - 1);
}

/* Launch call -> GPU work, where both ends are drawn (Kineto's ac2g flows). */
static void flows(tl_ctx *c) {
  html_raw(c->o, "<g class=\"flows\">");
  for (size_t i = 0; i < c->nest->n; i++) {
    int64_t l = c->nest->launch[i];
    if (l < 0 || !c->shown[i] || !c->shown[l]) continue;
    const prof_event *g = prof_trace_at(c->t, i), *h = prof_trace_at(c->t, (size_t)l);
    html_fmt(c->o, "<line class=\"flow\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>",
             x_of(c, h->start_ns), row_edge(c, (size_t)l, h, 0), x_of(c, g->start_ns),
             row_edge(c, i, g, 1));
    c->flows++;
  }
  html_raw(c->o, "</g>\n");
}

static void draw(tl_ctx *c, size_t idx) {
  int height =
      c->n_lanes ? c->lanes[c->n_lanes - 1].y + c->lanes[c->n_lanes - 1].rows * ROW + 4 : AXIS + 10;
  html_fmt(c->o,
           "<svg class=\"%s\" data-trace=\"%zu\" data-call=\"%lld\" width=\"%d\" "
           "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
           c->first ? "timeline" : "timeline call", idx, (long long)c->call, LEFT + WIDTH + 10,
           height, LEFT + WIDTH + 10, height);
  lanes_and_axis(c, height);
  for (size_t i = 0; i < c->nest->n; i++) {
    const prof_event *e = prof_trace_at(c->t, i);
    if (!visible(c, e)) continue;
    lane *l = lane_of(c, i, e);
    if (!l || c->drawn == MAX_DRAWN) { /* past MAX_LANES lanes or MAX_DRAWN events */
      c->skipped++;
      continue;
    }
    event(c, i, e, l);
    c->shown[i] = 1;
    c->drawn++;
  }
  flows(c);
  html_raw(c->o, "</svg>\n");
}

/* The first call of the range named `name` (earliest start), or -1. */
static int64_t first_call(const prof_trace *t, const char *name) {
  int64_t best = -1;
  for (size_t i = 0; name && i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_USER_ANNOTATION || !e->name || strcmp(e->name, name)) continue;
    if (best < 0 || e->start_ns < prof_trace_at(t, (size_t)best)->start_ns) best = (int64_t)i;
  }
  return best;
}

static void timeline(html_out *o, const report_trace *tr, size_t idx, int64_t call,
                     const char *title, int first) {
  tl_ctx *c = calloc(1, sizeof *c);
  if (!c || !(c->nest = prof_nest_acquire(tr->t))) {
    free(c);
    html_raw(o, "<p class=\"note\">timeline: not enough memory</p>\n");
    return;
  }
  c->o = o;
  c->t = tr->t;
  c->call = call;
  c->first = first;
  c->groups = tr->n_pids > 1;
  c->depth = calloc(c->nest->n ? c->nest->n : 1, sizeof *c->depth);
  c->shown = calloc(c->nest->n ? c->nest->n : 1, 1);
  if (c->depth && c->shown) {
    window(c);
    layout(c);
    html_raw(o, "<h3>Timeline: ");
    if (c->call >= 0) html_raw(o, title), html_text(o, tr->focus->name, 80);
    else html_raw(o, "the whole trace");
    html_fmt(o, " (%.1f us)</h3>\n", (double)(c->w1 - c->w0) / 1e3);
    draw(c, idx);
    if (c->skipped)
      html_fmt(o, "<p class=\"note\">%zu more events in this window not drawn</p>\n", c->skipped);
  } else {
    html_raw(o, "<p class=\"note\">timeline: not enough memory</p>\n");
  }
  free(c->depth);
  free(c->shown);
  prof_nest_release(c->nest);
  free(c);
}

void report_call_timeline(html_out *o, const report_trace *tr, size_t idx, int64_t call,
                          const char *title) {
  timeline(o, tr, idx, call, title, 0);
}

void report_timeline(html_out *o, const report_trace *tr, size_t idx) {
  timeline(o, tr, idx, first_call(tr->t, tr->focus ? tr->focus->name : NULL), "the first call of ",
           1);
}
