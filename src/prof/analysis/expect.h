/* Internals of expectations shared by the parser (expect.c) and the metric
 * table (expect_metrics.c). A metric is a row in that table: its name, its
 * flags (takes an argument, compares a name rather than a number, accepts a
 * '%' value) and the function that observes it in a range. New metrics such
 * as occupancy(top) or launch(top) are new rows; the parser already reads
 * `metric(arg) OP value[%]`. */
#ifndef ATTNPROF_SRC_PROF_EXPECT_H
#define ATTNPROF_SRC_PROF_EXPECT_H

#include <stddef.h>

#include "attnprof/prof.h"

enum {
  PROF_METRIC_ARG = 1,     /* written metric(arg) */
  PROF_METRIC_STRING = 2,  /* the value is a name (== and != only) */
  PROF_METRIC_PERCENT = 4, /* the value may end in '%' */
};

/* What a metric is observed in: the trace and the range's summary row. */
typedef struct {
  const prof_trace *t;
  const prof_range_summary *row;
} prof_expect_ctx;

typedef struct {
  double num;
  char str[64]; /* PROF_METRIC_STRING metrics */
} prof_observed;

typedef struct prof_metric prof_metric;
struct prof_metric {
  const char *name;
  const char *plural; /* another accepted spelling, or NULL */
  int param;          /* for the observer, e.g. a prof_kind */
  unsigned flags;
  /* 0, or -1 with a reason in why (observed shown as "none"). */
  int (*observe)(const prof_metric *m, const prof_expect_ctx *ctx, const char *arg,
                 prof_observed *out, char *why, size_t why_len);
};

typedef enum { PROF_OP_EQ, PROF_OP_NE, PROF_OP_LT, PROF_OP_LE, PROF_OP_GT, PROF_OP_GE } prof_cmp_op;

/* One parsed comparison. */
typedef struct {
  const prof_metric *m;
  char *text; /* normalized: "copies == 0", "occupancy(top) < 20%" */
  char *arg;  /* NULL when none */
  prof_cmp_op op;
  double num;
  char *str;   /* the value of a PROF_METRIC_STRING metric */
  char *range; /* the "[range]" section it sits under; NULL: the range the caller names */
} prof_expectation;

struct prof_expect {
  prof_expectation *v;
  size_t n, cap;
};

/* occupancy(K) and launch(K): one kernel of the range (expect_kernels.c). */
int prof_observe_occupancy(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                           prof_observed *out, char *why, size_t len);
int prof_observe_launch(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                        prof_observed *out, char *why, size_t len);

/* The metric spelled `word`, or NULL. */
const prof_metric *prof_metric_find(const char *word);
/* "ops, kernel(s), ..., calls": what an error message lists as accepted. */
const char *prof_metric_list(void);

#endif
