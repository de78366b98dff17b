/* The CUDA-loop half of bench/trace_cost.py: the empty-kernel loop of
 * trace_overhead_prog.cu, under each variant of the collector in turn, inside
 * one traced process (attnprof_bench_set from the injection library, with
 * ATTNPROF_BENCH=1). Prints every round, then per variant the median host us
 * per launch, the median per-round difference to "none", and CUPTI records
 * per launch. Its trace holds 2 events per launch, written at about 0.2
 * million events/s: give 11 rounds of 20480 a minute.
 *   usage: trace_cost_prog [ROUNDS] [N] */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BURST = 256, MAX_ROUNDS = 64, NV = 9 };
static const char *const names[NV] = {
    "none (subscribed only)",  "kernel",           "gpu kinds",
    "gpu + RUNTIME kind",      "gpu + RUNTIME+DRIVER kinds",
    "gpu + select ids",        "gpu + callback ids",
    "kinds, no convert/write", "callback, no convert/write"};
static const unsigned masks[NV] = {0, 1, 3, 7, 15, 19, 35, 79, 99};

__global__ void empty_kernel(float *out, float s) {
  if (s == -1.f) out[threadIdx.x] = s;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double loop(long n) {
  double issued = 0;
  for (long b = 0; b < n / BURST; b++) {
    double t0 = now_s();
    for (int i = 0; i < BURST; i++) empty_kernel<<<1, 32>>>(NULL, 1.f);
    issued += now_s() - t0;
    cudaDeviceSynchronize();
  }
  return issued / (n / BURST * BURST) * 1e6;
}

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

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  long n = argc > 2 ? atol(argv[2]) : 20480;
  if (rounds < 1 || rounds > MAX_ROUNDS || n < BURST)
    return fprintf(stderr, "usage: trace_cost_prog [ROUNDS 1..%d] [N >= %d]\n", MAX_ROUNDS, BURST), 2;
  setvbuf(stdout, NULL, _IOLBF, 0); /* every round out at once: a timeout keeps what ran */
  loop(4 * BURST);                  /* cuInit: the injection starts here */
  const char *path = getenv("CUDA_INJECTION64_PATH");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  long long (*set)(unsigned) = NULL;
  if (h) *(void **)&set = dlsym(h, "attnprof_bench_set");
  if (!set || set(0) < 0)
    return fprintf(stderr, "trace_cost_prog: run under attnprof trace with ATTNPROF_BENCH=1\n"), 2;
  static double us[NV][MAX_ROUNDS], recs[NV][MAX_ROUNDS], diff[MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < NV; k++) {
      int v = (k + r) % NV;
      cudaDeviceSynchronize();
      long long c0 = set(masks[v]);
      us[v][r] = loop(n);
      cudaDeviceSynchronize();
      recs[v][r] = (double)(set(0) - c0) / n;
    }
    printf("round %2d", r + 1);
    for (int v = 0; v < NV; v++) printf(" %.3f", us[v][r]);
    printf("\n");
  }
  printf("# CUDA loop, %d rounds x %ld launches per variant (columns above in this order)\n", rounds, n);
  printf("%-30s %9s %7s %7s %7s %15s\n", "variant", "us/launch", "added", "[min", "max]", "records/launch");
  for (int v = 0; v < NV; v++) {
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
