/* The roofline of the report: every backend whose group annotation carries a
 * roofline point (prof_roof, written by attnprof run/compare) as one dot on
 * log-log axes, arithmetic intensity (flop per byte moved) across and
 * TFLOP/s up, under the two roofs: the copy bandwidth (a slanted line,
 * TFLOP/s = GB/s x intensity / 1000) and the matmul peak (flat). The roofs
 * are those of the first point that has them. Nothing when no trace has a
 * point. */
#include <math.h>

#include "prof/report/report.h"

enum { W = 720, H = 400, LEFT = 70, RIGHT = 20, TOP = 20, BOTTOM = 50, MAX_POINTS = 256 };

typedef struct {
  const char *label, *backend;
  double intensity, tflops; /* flops / bytes; flops / time */
} roof_point;

typedef struct {
  double x0, x1, y0, y1; /* log10 of the axes' ends */
} axes;

static int point_of(const prof_event *e, roof_point *p) {
  if (e->cat != PROF_CAT_USER_ANNOTATION || !(e->roof.time_us > 0) || !isfinite(e->roof.time_us) ||
      !(e->flops > 0) || !isfinite(e->flops) || e->bytes <= 0)
    return 0;
  p->backend = e->name;
  p->intensity = e->flops / (double)e->bytes;
  p->tflops = e->flops / (e->roof.time_us * 1e6);
  return 1;
}

/* Points of every trace; *bw and *peak from the first that has each. */
static size_t collect(const report_trace *tr, size_t n, roof_point *pts, double *bw, double *peak) {
  size_t np = 0;
  *bw = *peak = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < prof_trace_count(tr[i].t) && np < MAX_POINTS; j++) {
      const prof_event *e = prof_trace_at(tr[i].t, j);
      if (!point_of(e, &pts[np])) continue;
      pts[np++].label = tr[i].label;
      if (!(*bw > 0) && e->roof.copy_gbps > 0 && isfinite(e->roof.copy_gbps))
        *bw = e->roof.copy_gbps;
      if (!(*peak > 0) && e->roof.peak_tflops > 0 && isfinite(e->roof.peak_tflops))
        *peak = e->roof.peak_tflops;
    }
  return np;
}

/* Whole decades around the points, the ridge and the peak. */
static axes axes_for(const roof_point *pts, size_t np, double bw, double peak) {
  double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
  for (size_t i = 0; i < np; i++) {
    xl = fmin(xl, pts[i].intensity), xh = fmax(xh, pts[i].intensity);
    yl = fmin(yl, pts[i].tflops), yh = fmax(yh, pts[i].tflops);
  }
  if (peak > 0) yh = fmax(yh, peak);
  if (bw > 0 && peak > 0) xl = fmin(xl, peak * 1e3 / bw), xh = fmax(xh, peak * 1e3 / bw);
  axes a = {floor(log10(xl)), ceil(log10(xh)), floor(log10(yl)), ceil(log10(yh))};
  if (a.x1 <= a.x0) a.x1 = a.x0 + 1;
  if (a.y1 <= a.y0) a.y1 = a.y0 + 1;
  return a;
}

static double px(const axes *a, double x) {
  return LEFT + (log10(x) - a->x0) / (a->x1 - a->x0) * (W - LEFT - RIGHT);
}
static double py(const axes *a, double y) {
  return TOP + (a->y1 - log10(y)) / (a->y1 - a->y0) * (H - TOP - BOTTOM);
}

static void grid(html_out *o, const axes *a) {
  for (double d = a->x0; d <= a->x1; d++)
    html_fmt(o,
             "<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/><text x=\"%.1f\" "
             "y=\"%d\" text-anchor=\"middle\">1e%g</text>",
             px(a, pow(10, d)), TOP, px(a, pow(10, d)), H - BOTTOM, px(a, pow(10, d)),
             H - BOTTOM + 14, d);
  for (double d = a->y0; d <= a->y1; d++)
    html_fmt(o,
             "<line class=\"axis\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/><text x=\"%d\" "
             "y=\"%.1f\" text-anchor=\"end\">1e%g</text>",
             LEFT, py(a, pow(10, d)), W - RIGHT, py(a, pow(10, d)), LEFT - 4, py(a, pow(10, d)) + 4,
             d);
  html_fmt(o,
           "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">flop per byte moved</text>"
           "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">"
           "TFLOP/s</text>",
           (LEFT + W - RIGHT) / 2, H - 8, (TOP + H - BOTTOM) / 2, (TOP + H - BOTTOM) / 2);
}

/* The memory roof up to the ridge (or the axis' end), then the flat peak. */
static void roofs(html_out *o, const axes *a, double bw, double peak) {
  double xl = pow(10, a->x0), xh = pow(10, a->x1),
         ridge = peak > 0 && bw > 0 ? peak * 1e3 / bw : xh;
  if (bw > 0) {
    /* without a peak the slanted roof stops at the plot's top */
    double xe = fmin(fmin(ridge, xh), pow(10, a->y1) * 1e3 / bw), ys = bw * xl / 1e3, xs = xl;
    if (ys < pow(10, a->y0)) xs = pow(10, a->y0) * 1e3 / bw, ys = pow(10, a->y0);
    html_fmt(o,
             "<line class=\"roof roof-memory\" data-gbps=\"%.17g\" x1=\"%.1f\" y1=\"%.1f\" "
             "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d9534f\" stroke-width=\"2\"><title>copy roof "
             "%.1f GB/s</title></line>",
             bw, px(a, xs), py(a, ys), px(a, xe), py(a, bw * xe / 1e3), bw);
  }
  if (peak > 0)
    html_fmt(o,
             "<line class=\"roof roof-compute\" data-tflops=\"%.17g\" x1=\"%.1f\" y1=\"%.1f\" "
             "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#3aa55d\" stroke-width=\"2\"><title>matmul peak "
             "%.1f TFLOP/s</title></line>",
             peak, px(a, bw > 0 ? ridge : xl), py(a, peak), px(a, xh), py(a, peak), peak);
}

static void dots(html_out *o, const axes *a, const roof_point *pts, size_t np) {
  for (size_t i = 0; i < np; i++) {
    const roof_point *p = &pts[i];
    double x = px(a, p->intensity), y = py(a, p->tflops);
    html_fmt(o,
             "<circle class=\"point\" data-intensity=\"%.17g\" data-tflops=\"%.17g\" "
             "cx=\"%.2f\" cy=\"%.2f\" r=\"5\" fill=\"#5b8fd6\"><title>",
             p->intensity, p->tflops, x, y);
    html_text(o, p->label, 40);
    html_raw(o, ": ");
    html_text(o, p->backend, 40);
    html_fmt(o, ", %.3g flop/byte, %.3g TFLOP/s</title></circle><text x=\"%.1f\" y=\"%.1f\">",
             p->intensity, p->tflops, x + 7,
             y - 6 + 12.0 * (double)(i % 3)); /* dots that coincide */
    html_text(o, p->backend, 24);
    html_raw(o, "</text>");
  }
}

void report_roofline(html_out *o, const report_trace *tr, size_t n) {
  roof_point pts[MAX_POINTS];
  double bw, peak;
  size_t np = collect(tr, n, pts, &bw, &peak);
  if (!np) return;
  axes a = axes_for(pts, np, bw, peak);
  html_raw(o, "<h2>Roofline</h2><p class=\"note\">One dot per backend: flops and bytes moved "
              "by one forward over its median time. ");
  if (bw > 0) html_fmt(o, "Red: the measured copy bandwidth, %.1f GB/s. ", bw);
  else html_raw(o, "The copy bandwidth is unknown. ");
  if (peak > 0) html_fmt(o, "Green: the matmul peak, %.1f TFLOP/s.", peak);
  else html_raw(o, "The matmul peak is unknown (attnprof --peak-tflops gives one).");
  html_fmt(o, "</p>\n<svg class=\"roofline\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">", W,
           H, W, H);
  grid(o, &a);
  roofs(o, &a, bw, peak);
  dots(o, &a, pts, np);
  html_raw(o, "</svg>\n");
}
