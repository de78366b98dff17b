/* What the host-time benches share: a microsecond wall clock and the
 * percentile of a sample (sorted in place). Header-only, one copy per bench. */
#ifndef ATTNPROF_BENCH_BENCH_CLOCK_H
#define ATTNPROF_BENCH_BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The p-quantile (0..1) of v[0..n), nearest rank; sorts v. */
static inline double bench_pct(double *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return v[(int)(p * (n - 1) + 0.5)];
}

#endif
