/* Bar charts of the report: the traces side by side on the focus range's
 * device time, host time and ops per call (GPU events stacked by kind), as
 * inline SVG, one horizontal bar per trace. */
#include <stdio.h>

#include "prof/report/report.h"

enum { LABEL_W = 260, PLOT_W = 560, VALUE_W = 120, ROW_H = 22, TOP = 24 };

typedef struct {
  const char *metric, *title, *unit;
} chart;

static double value_of(const chart *c, const prof_range_summary *r) {
  if (!r) return 0;
  switch (c->metric[0]) {
    case 'd':
      return r->gpu ? r->device_us_per_call : 0; /* CPU ops are not device time */
    case 'h':
      return r->host_us_per_call;
    default:
      return r->per_call_total;
  }
}

static void label(html_out *o, const report_trace *tr, int y) {
  html_fmt(o, "<text x=\"4\" y=\"%d\">", y + 15);
  html_text(o, tr->label, 38);
  if (tr->focus) {
    html_raw(o, " (");
    html_text(o, tr->focus->name, 16);
    html_raw(o, ")");
  }
  html_raw(o, "</text>");
}

/* One segment: a rect with its tooltip. */
static void segment(html_out *o, const char *cls, double x, double w, int y, const char *what,
                    double v, const char *unit) {
  html_fmt(o,
           "<rect class=\"%s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"16\"><title>%s: %g %s"
           "</title></rect>",
           cls, x, y + 3, w, what, v, unit);
}

/* GPU events stacked by kind; a CPU range is one bar of its ops. */
static void ops_bar(html_out *o, const prof_range_summary *r, double scale, int y) {
  if (!r) return;
  if (!r->gpu) {
    segment(o, "bar k-cpu", LABEL_W, r->per_call_total * scale, y, "CPU ops", r->per_call_total,
            "per call");
    return;
  }
  double x = LABEL_W;
  for (int k = PROF_KIND_KERNEL; k <= PROF_KIND_MEMSET; k++) {
    double v = r->per_call_kind[k], w = v * scale;
    char cls[32];
    snprintf(cls, sizeof cls, "bar k-%s", prof_kind_name((prof_kind)k));
    if (v > 0) segment(o, cls, x, w, y, prof_kind_name((prof_kind)k), v, "per call");
    x += w;
  }
}

static void one_chart(html_out *o, const chart *c, const report_trace *tr, size_t n) {
  double max = 0;
  for (size_t i = 0; i < n; i++) {
    double v = value_of(c, tr[i].focus);
    max = v > max ? v : max;
  }
  double scale = max > 0 ? PLOT_W / max : 0;
  int h = TOP + (int)n * ROW_H + 6;
  html_fmt(
      o,
      "<svg class=\"bars\" data-metric=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">"
      "<text x=\"4\" y=\"15\" font-weight=\"bold\">%s</text>\n",
      c->metric, LABEL_W + PLOT_W + VALUE_W, h, LABEL_W + PLOT_W + VALUE_W, h, c->title);
  for (size_t i = 0; i < n; i++) {
    int y = TOP + (int)i * ROW_H;
    double v = value_of(c, tr[i].focus);
    label(o, &tr[i], y);
    if (c->metric[0] == 'o') ops_bar(o, tr[i].focus, scale, y);
    else segment(o, "bar", LABEL_W, v * scale, y, c->title, v, c->unit);
    /* 4 significant digits, but whole numbers from 1000 up (no 9.19e+04) */
    html_fmt(o, "<text x=\"%.2f\" y=\"%d\">%.*f %s</text>\n", LABEL_W + v * scale + 4, y + 15,
             v >= 1000 || v == (long long)v ? 0
             : v >= 100                     ? 1
             : v >= 10                      ? 2
                                            : 3,
             v, c->unit);
  }
  html_raw(o, "</svg>\n");
}

void report_charts(html_out *o, const report_trace *tr, size_t n) {
  static const chart charts[] = {
      {"device_us", "Device time per call", "us"},
      {"host_us", "Host time per call", "us"},
      {"ops", "GPU events (or CPU ops) per call", "ops"},
  };
  html_raw(o, "<section class=\"charts\"><h2>Compared</h2><p class=\"legend note\">"
              "<span class=\"k-kernel\">kernel</span><span class=\"k-memcpy\">memcpy</span>"
              "<span class=\"k-memset\">memset</span><span class=\"k-cpu\">CPU op</span></p>\n");
  for (size_t c = 0; c < sizeof charts / sizeof charts[0]; c++) one_chart(o, &charts[c], tr, n);
  html_raw(o, "</section>\n");
}
