/* The CUDA-loop half of bench/trace_cost.py: the empty-kernel loop of
 * trace_overhead_prog.cu, under each variant of the collector in turn, inside
 * one traced process (attnprof_bench_set from the injection library, with
 * ATTNPROF_BENCH=1). Prints every round, then per variant the median host us
 * per launch, the median per-round difference to "none", and CUPTI records
 * per launch. Its trace holds 2 events per launch, written at about 0.2
 * million events/s: give 11 rounds of 20480 a minute. SET "split" runs only
 * "none" and the variants that split the four other GPU kinds, none of them
 * converted or written (a few seconds); "sync" runs "none" and the sync
 * records through the kind or the sync calls' callbacks; "nested" the launch
 * callbacks of both domains, of the runtime alone, and the runtime's with the
 * DRIVER kind (the driver callbacks inside each runtime launch, trace_cost.py).
 *   usage: trace_cost_prog [ROUNDS] [N] [all|split|sync|nested] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch_loop.cuh"

enum { MAX_ROUNDS = 64, NV = 20 };
static const char *const names[NV] = {"none (subscribed only)",
                                      "kernel",
                                      "gpu kinds",
                                      "gpu + RUNTIME kind",
                                      "gpu + RUNTIME+DRIVER kinds",
                                      "gpu + select ids",
                                      "gpu + callback ids",
                                      "kinds, no convert/write",
                                      "callback, no convert/write",
                                      "kernel, no convert/write",
                                      "kernel+MEMCPY, no c/w",
                                      "kernel+MEMSET, no c/w",
                                      "kernel+SYNC, no c/w",
                                      "kernel+MARKER, no c/w",
                                      "gpu kinds, no c/w",
                                      "kernel+callback ids, no c/w",
                                      "k+callback+SYNC kind, no c/w",
                                      "k+callback+sync cb, no c/w",
                                      "k+callback rt ids, no c/w",
                                      "k+cb rt+DRIVER kind, no c/w"};
/* Bits of attnprof_bench_set (src/prof/collect/collector_cupti.h). */
static const unsigned masks[NV] = {0,   1,   3,   7,    15, 19, 35,  79,   99,   65,
                                   193, 321, 577, 1089, 67, 97, 609, 2145, 4161, 4169};

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  double s[MAX_ROUNDS];
  for (int i = 0; i < n; i++) s[i] = v[i];
  qsort(s, n, sizeof *s, cmp);
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* Indices into names/masks: every variant, "none" and the kinds' split,
 * "none" and the sync records by kind or by callbacks (ATTNPROF_CUPTI_SYNC),
 * or "none" and the launch callbacks by domain. */
static const int all_set[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
static const int split_set[] = {0, 9, 10, 11, 12, 13, 14};
static const int sync_set[] = {0, 15, 16, 17};
static const int nested_set[] = {0, 15, 18, 19};

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  long n = argc > 2 ? atol(argv[2]) : 20480;
  const char *which = argc > 3 ? argv[3] : "all";
  int split = !strcmp(which, "split"), sync = !strcmp(which, "sync"),
      nested = !strcmp(which, "nested");
  if (rounds < 1 || rounds > MAX_ROUNDS || n < BURST ||
      (!split && !sync && !nested && strcmp(which, "all")))
    return fprintf(stderr,
                   "usage: trace_cost_prog [ROUNDS 1..%d] [N >= %d] [all|split|sync|nested]\n",
                   MAX_ROUNDS, BURST),
           2;
  const int *set_of = split ? split_set : sync ? sync_set : nested ? nested_set : all_set;
  int nv = split    ? (int)(sizeof split_set / sizeof *split_set)
           : sync   ? (int)(sizeof sync_set / sizeof *sync_set)
           : nested ? (int)(sizeof nested_set / sizeof *nested_set)
                    : (int)(sizeof all_set / sizeof *all_set);
  setvbuf(stdout, NULL, _IOLBF, 0); /* every round out at once: a timeout keeps what ran */
  burst_loop(4 * BURST);            /* cuInit: the injection starts here */
  const char *path = getenv("CUDA_INJECTION64_PATH");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  long long (*set)(unsigned) = NULL;
  if (h) *(void **)&set = dlsym(h, "attnprof_bench_set");
  if (!set || set(0) < 0)
    return fprintf(stderr, "trace_cost_prog: run under attnprof trace with ATTNPROF_BENCH=1\n"), 2;
  static double us[NV][MAX_ROUNDS], recs[NV][MAX_ROUNDS], diff[MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < nv; k++) {
      int v = set_of[(k + r) % nv];
      cudaDeviceSynchronize();
      long long c0 = set(masks[v]);
      us[v][r] = burst_loop(n);
      cudaDeviceSynchronize();
      recs[v][r] = (double)(set(0) - c0) / n;
    }
    printf("round %2d", r + 1);
    for (int k = 0; k < nv; k++) printf(" %.3f", us[set_of[k]][r]);
    printf("\n");
  }
  printf("# CUDA loop, %d rounds x %ld launches per variant (columns above in this order)\n",
         rounds, n);
  printf("%-30s %9s %7s %7s %7s %15s\n", "variant", "us/launch", "added", "[min", "max]",
         "records/launch");
  for (int k = 0; k < nv; k++) {
    int v = set_of[k];
    double lo = 1e9, hi = -1e9;
    for (int r = 0; r < rounds; r++) {
      diff[r] = us[v][r] - us[0][r];
      lo = diff[r] < lo ? diff[r] : lo, hi = diff[r] > hi ? diff[r] : hi;
    }
    printf("%-30s %9.3f %+7.3f %+7.3f %+7.3f %15.2f\n", names[v], median(us[v], rounds),
           median(diff, rounds), lo, hi, median(recs[v], rounds));
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
