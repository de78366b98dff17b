/* Checking parsed expectations against one range of a trace: each observed
 * per-call figure is compared and reported as held or BROKEN with the value
 * seen, the line a user reads first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/expect.h"

/* Whole numbers without decimals, others with up to 3, trailing zeros cut. */
static void format_number(char *buf, size_t len, double v) {
  if (fabs(v) < 1e15 && v == floor(v)) {
    snprintf(buf, len, "%lld", (long long)v);
    return;
  }
  snprintf(buf, len, "%.3f", v);
  char *end = buf + strlen(buf);
  while (end[-1] == '0') *--end = 0;
}

static int compare(const prof_expectation *x, const prof_observed *o) {
  if (x->m->flags & PROF_METRIC_STRING)
    return (strcmp(o->str, x->str) == 0) == (x->op == PROF_OP_EQ);
  switch (x->op) {
    case PROF_OP_EQ:
      return o->num == x->num;
    case PROF_OP_NE:
      return o->num != x->num;
    case PROF_OP_LT:
      return o->num < x->num;
    case PROF_OP_LE:
      return o->num <= x->num;
    case PROF_OP_GT:
      return o->num > x->num;
    case PROF_OP_GE:
      return o->num >= x->num;
  }
  return 0;
}

static void check_one(const prof_expectation *x, const prof_expect_ctx *ctx,
                      prof_expect_result *r) {
  prof_observed o;
  char why[sizeof r->observed - 6] = ""; /* "none: " + why fits observed */
  memset(&o, 0, sizeof o);
  snprintf(r->text, sizeof r->text, "%s", x->text);
  if (x->m->observe(x->m, ctx, x->arg, &o, why, sizeof why)) {
    snprintf(r->observed, sizeof r->observed, "none: %s", why);
    r->held = 0;
    return;
  }
  if (x->m->flags & PROF_METRIC_STRING) snprintf(r->observed, sizeof r->observed, "%s", o.str);
  else format_number(r->observed, sizeof r->observed, o.num);
  r->held = compare(x, &o);
}

/* "a, b, c" of the range names, for the message when the range is missing. */
static void list_names(char *buf, size_t len, const prof_range_summary *rows, int64_t n) {
  buf[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", i ? ", " : "", rows[i].name);
  }
}

static const prof_range_summary *pick_range(const prof_range_summary *rows, int64_t n,
                                            const char *range) {
  const prof_range_summary *row = range    ? prof_range_summary_find(rows, n, range)
                                  : n == 1 ? rows
                                           : NULL;
  if (row) return row;
  char names[512];
  list_names(names, sizeof names, rows, n);
  if (!n)
    attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "the trace has no ranges to check expectations on");
  else if (!range)
    attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "the trace has several ranges (%s); name one", names);
  else
    attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "range '%s' is not in the trace; its ranges: %s", range,
              names);
  return NULL;
}

attn_status prof_expect_evaluate(const prof_expect *e, const prof_trace *t, const char *range,
                                 prof_expect_result *out, int *broken) {
  prof_range_summary *rows = NULL;
  int64_t n = 0;
  attn_status st = prof_summarize_ranges(t, &rows, &n);
  int count = 0;
  for (size_t i = 0; !st && i < e->n; i++) {
    /* An expectation under a "[range]" section checks that range. */
    const prof_range_summary *row = pick_range(rows, n, e->v[i].range ? e->v[i].range : range);
    if (!row) {
      st = ATTN_STATUS_INVALID_ARGUMENT; /* pick_range said why */
      break;
    }
    prof_expect_ctx ctx = {t, row};
    check_one(&e->v[i], &ctx, &out[i]);
    count += !out[i].held;
  }
  free(rows);
  if (!st) *broken = count;
  return st;
}

attn_status prof_expect_check(const prof_expect *e, const prof_trace *t, const char *range, FILE *f,
                              int *broken) {
  prof_expect_result *r = calloc(e->n ? e->n : 1, sizeof *r);
  if (!r) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "out of memory");
  attn_status st = prof_expect_evaluate(e, t, range, r, broken);
  for (size_t i = 0; f && !st && i < e->n; i++)
    fprintf(f, "%-6s %s (observed %s)\n", r[i].held ? "held" : "BROKEN", r[i].text, r[i].observed);
  free(r);
  return st;
}
