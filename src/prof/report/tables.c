/* The two text tables: the per-range summary and the key averages. Columns
 * are aligned for a terminal: names are cut to a width counted in
 * characters (UTF-8 aware), and control characters in names are shown as
 * '?', so a hostile op name cannot move the cursor or recolour the screen. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attnprof/prof.h"

enum { NAME_MAX_WIDTH = 48 };

/* Characters in s (UTF-8 continuation bytes do not count). */
static int text_width(const char *s) {
  int w = 0;
  for (; s && *s; s++) w += ((unsigned char)*s & 0xc0) != 0x80;
  return w;
}

/* s cut to width characters ("..." marks a cut), then padded to width. */
static void put_cell(FILE *f, const char *s, int width) {
  if (!s) s = "";
  int w = text_width(s), keep = w > width ? width - 3 : w, shown = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int starts_char = (*p & 0xc0) != 0x80;
    if (starts_char && shown == keep) break;
    shown += starts_char;
    fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
  }
  if (w > width) fputs("...", f), shown += 3;
  for (; shown < width; shown++) fputc(' ', f);
}

static int name_width(int longest) {
  return longest < 8 ? 8 : longest > NAME_MAX_WIDTH ? NAME_MAX_WIDTH : longest;
}

/* A per-call count: whole numbers without decimals. */
static void put_count(FILE *f, int width, double v) {
  if (fabs(v) < 1e15 && v == floor(v)) fprintf(f, " %*lld", width, (long long)v);
  else fprintf(f, " %*.2f", width, v);
}

/* ---- range summary -------------------------------------------------------- */

static void kinds_shown(const prof_range_summary *rows, int64_t n, int shown[PROF_KIND_COUNT]) {
  for (int k = 0; k < PROF_KIND_COUNT; k++) {
    shown[k] = 0;
    for (int64_t i = 0; i < n; i++) shown[k] |= rows[i].per_call_kind[k] != 0;
  }
}

static void print_launch_apis(FILE *f, const prof_range_summary *r) {
  fputs("  ", f);
  for (int j = 0; j < r->n_launch_apis; j++) {
    fprintf(f, "%s", j ? ", " : "");
    put_cell(f, r->launch_api[j], text_width(r->launch_api[j]));
    fprintf(f, " x%g", r->launch_api_per_call[j]);
  }
}

void prof_print_range_summary(FILE *f, const prof_range_summary *rows, int64_t n) {
  int longest = 5, shown[PROF_KIND_COUNT], any_launch = 0;
  for (int64_t i = 0; i < n; i++) {
    int w = text_width(rows[i].name);
    longest = w > longest ? w : longest;
    any_launch |= rows[i].n_launch_apis > 0;
  }
  int nw = name_width(longest);
  kinds_shown(rows, n, shown);
  put_cell(f, "range", nw);
  fprintf(f, " %6s %8s", "calls", "ops/call");
  for (int k = 0; k < PROF_KIND_COUNT; k++)
    if (shown[k]) fprintf(f, " %11s", prof_kind_name((prof_kind)k));
  fprintf(f, " %14s %14s%s\n", "device us/call", "host us/call",
          any_launch ? "  launch APIs per call" : "");
  for (int64_t i = 0; i < n; i++) {
    const prof_range_summary *r = &rows[i];
    put_cell(f, r->name, nw);
    fprintf(f, " %6lld", (long long)r->calls);
    put_count(f, 8, r->per_call_total);
    for (int k = 0; k < PROF_KIND_COUNT; k++)
      if (shown[k]) put_count(f, 11, r->per_call_kind[k]);
    fprintf(f, " %14.1f %14.1f", r->device_us_per_call, r->host_us_per_call);
    if (r->n_launch_apis) print_launch_apis(f, r);
    if (r->graph_per_call > 0) fprintf(f, "  (x%g from CUDA graphs)", r->graph_per_call);
    fputc('\n', f);
  }
}

/* ---- key averages --------------------------------------------------------- */

void prof_print_key_averages(FILE *f, const prof_key_average *rows, int64_t n, int64_t max_rows) {
  int64_t shown = max_rows > 0 && max_rows < n ? max_rows : n;
  int longest = 4, device = 0;
  for (int64_t i = 0; i < shown; i++) {
    int w = text_width(rows[i].name);
    longest = w > longest ? w : longest;
  }
  for (int64_t i = 0; i < n; i++) device |= rows[i].device_us_total != 0;
  int nw = name_width(longest);
  put_cell(f, "name", nw);
  fprintf(f, " %-19s %7s %14s %12s %14s", "cat", "calls", "host total us", "host avg us",
          "self total us");
  if (device) fprintf(f, " %15s %13s", "device total us", "device avg us");
  fputc('\n', f);
  for (int64_t i = 0; i < shown; i++) {
    const prof_key_average *r = &rows[i];
    double calls = r->calls ? (double)r->calls : 1;
    put_cell(f, r->name, nw);
    fprintf(f, " %-19s %7lld %14.1f %12.1f %14.1f", prof_cat_name(r->cat), (long long)r->calls,
            r->host_us_total, r->host_us_total / calls, r->host_us_self_total);
    if (device) fprintf(f, " %15.1f %13.1f", r->device_us_total, r->device_us_total / calls);
    fputc('\n', f);
  }
  if (shown < n) fprintf(f, "(%lld more rows)\n", (long long)(n - shown));
}
