/* What the host-time benches share: a microsecond wall clock, the
 * percentile of a sample (sorted in place) and the --shape BxHxSxD option.
 * Header-only, one copy per bench. */
#ifndef ATTNPROF_BENCH_BENCH_CLOCK_H
#define ATTNPROF_BENCH_BENCH_CLOCK_H

#include <stdint.h>
#include <stdio.h>
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

/* "BxHxSxD" into b, h, s, d; 0 when it is not four integers. */
static inline int bench_parse_shape(const char *text, int64_t *b, int64_t *h, int64_t *s,
                                    int64_t *d) {
  long long v[4];
  if (sscanf(text, "%lldx%lldx%lldx%lld", &v[0], &v[1], &v[2], &v[3]) != 4) return 0;
  *b = v[0], *h = v[1], *s = v[2], *d = v[3];
  return 1;
}

#endif
