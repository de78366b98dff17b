/* bench_cpu_backends: GFLOP/s of every CPU backend in the table at three
 * sizes, without and with a causal mask. Each cell is the median of N
 * forwards after one warm-up; the fastest is printed too (on a shared
 * machine it shows what the code does when it has the cores). FLOPs as
 * attn_flops counts them: 4*B*H*S^2*D, halved for causal. Not a ctest test:
 * timings are not pass/fail; bench/README.md holds measured numbers.
 *
 *   bench_cpu_backends [--reps N] [--dtype f32|f16|bf16] [--threads T]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnprof/attn.h"
#include "attnprof/testing.h"

enum { MAX_BACKENDS = 32, MAX_REPS = 101 };

typedef struct {
  int64_t b, h, s, d;
} shape;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Inputs of one shape, filled with a cheap deterministic pattern. */
static void *alloc_filled(size_t elems, attn_dtype dt) {
  size_t es = attn_dtype_size(dt);
  unsigned char *p = malloc(elems * es);
  attn_tensor t = attn_tensor_bhsd(p, dt, ATTN_DEVICE_CPU, 1, 1, 1, (int64_t)elems);
  for (size_t i = 0; p && i < elems; i++)
    attn_tensor_set(&t, 0, 0, 0, (int64_t)i, (double)((i * 2654435761u) % 2001) / 1000.0 - 1.0);
  return p;
}

/* Median seconds per forward (and the fastest in *best), or a negative value
 * when the backend refused. */
static attn_ctx *g_ctx; /* made in main: opts.cpu_threads from --threads */

static double time_backend(attn_backend bk, const attn_args *a, int reps, double *best, char *why,
                           size_t why_len) {
  double t[MAX_REPS];
  if (attn_why_not(g_ctx, bk, a, why, why_len) != ATTN_STATUS_OK) return -1;
  if (attn_forward(g_ctx, bk, a) != ATTN_STATUS_OK) { /* warm-up */
    snprintf(why, why_len, "%s", attn_last_error());
    return -1;
  }
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    attn_forward(g_ctx, bk, a);
    t[r] = now_s() - t0;
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp_double);
  *best = t[0];
  return t[reps / 2];
}

static void bench_shape(const shape *sh, attn_dtype dt, int reps, const attn_backend_info *bks,
                        size_t n_bk) {
  size_t elems = (size_t)(sh->b * sh->h * sh->s * sh->d);
  void *q = alloc_filled(elems, dt), *k = alloc_filled(elems, dt), *v = alloc_filled(elems, dt);
  void *o = malloc(elems * attn_dtype_size(dt));
  if (!q || !k || !v || !o) {
    fprintf(stderr, "out of memory for shape S=%lld\n", (long long)sh->s);
    exit(1);
  }
  attn_args a =
      attn_args_make(attn_tensor_bhsd(q, dt, ATTN_DEVICE_CPU, sh->b, sh->h, sh->s, sh->d),
                     attn_tensor_bhsd(k, dt, ATTN_DEVICE_CPU, sh->b, sh->h, sh->s, sh->d),
                     attn_tensor_bhsd(v, dt, ATTN_DEVICE_CPU, sh->b, sh->h, sh->s, sh->d),
                     attn_tensor_bhsd(o, dt, ATTN_DEVICE_CPU, sh->b, sh->h, sh->s, sh->d));
  for (int causal = 0; causal <= 1; causal++) {
    a.causal = causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
    for (size_t i = 0; i < n_bk; i++) {
      char why[512] = "";
      double best = 0, t = time_backend(bks[i].backend, &a, reps, &best, why, sizeof why);
      printf("| %-14s | %lldx%lldx%lldx%lld | %-4s | %-3s |", bks[i].name, (long long)sh->b,
             (long long)sh->h, (long long)sh->s, (long long)sh->d, attn_dtype_name(dt),
             causal ? "yes" : "no");
      if (t < 0) printf(" refused: %s |\n", why);
      else printf(" %10.2f | %8.2f | %8.1f |\n", t * 1e3, best * 1e3, attn_flops(&a) / t * 1e-9);
      fflush(stdout);
    }
  }
  free(q), free(k), free(v), free(o);
}

/* The machine's load average: timings on a busy machine say little. */
static void print_load(const char *when) {
  char line[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fgets(line, sizeof line, f)) line[strcspn(line, "\n")] = '\0';
  if (f) fclose(f);
  printf("load average %s: %s\n", when, line);
}

int main(int argc, char **argv) {
  int reps = 5, threads = 0;
  attn_dtype dt = ATTN_DTYPE_F32;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--dtype") != 0 || attn_dtype_from_name(argv[i + 1], &dt) != 0) {
      fprintf(stderr, "usage: %s [--reps N] [--dtype f32|f16|bf16] [--threads T]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS) reps = 5;
  attn_ctx_opts o = attn_ctx_opts_default();
  o.cpu_threads = threads > 0 ? threads : 0;
  if (attn_ctx_opts_from_env(&o) || attn_ctx_create(&o, &g_ctx)) {
    fprintf(stderr, "bench_cpu_backends: %s\n", attn_last_error());
    return 2;
  }
  attn_backend_info all[MAX_BACKENDS], cpu[MAX_BACKENDS];
  size_t n = attn_backend_list(all, MAX_BACKENDS), n_cpu = 0;
  for (size_t i = 0; i < n && i < MAX_BACKENDS; i++)
    if (all[i].device_kind == ATTN_DEVICE_CPU) cpu[n_cpu++] = all[i];
  static const shape shapes[] = {{1, 8, 512, 64}, {1, 8, 2048, 64}, {1, 4, 4096, 128}};
  print_load("before");
  printf("median of %d forwards after 1 warm-up; GFLOP/s = attn_flops / time\n\n", reps);
  printf("| backend | B x H x S x D | dtype | causal | ms (median) | ms (best) | GFLOP/s (median) "
         "|\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    bench_shape(&shapes[s], dt, reps, cpu, n_cpu);
  print_load("after");
  attn_ctx_destroy(g_ctx);
  return 0;
}
