/* bench_fused: the fused CUDA backends (flash with each of its kernels,
 * efficient, efficient with an additive mask) over compare --sweep's grid
 * (docs/cli.md) and the blog shape, in TFLOP/s.
 *
 * Per cell: B*S = 16384, H*D = 2048, bf16, BHSD, causal off and on; FLOPs
 * 4 B H S^2 D (halved when causal). Before timing, each backend's output is
 * checked on sampled rows against an fp64 row computed here from the same
 * inputs (relative error printed; above 4u = 4 * 2^-8, P and out rounded
 * to bf16 with margin, marks the row FAIL and the cell is not timed).
 * Timing: CUDA events around each call, 3 warm-up calls, the median of
 * --reps calls. Inputs are random (never zeros), generated once
 * (every cell has the same element count).
 *
 * The two numbers of each cell (docs/design/flash-mma.md): FLOPs over the measured
 * bf16 matrix rate (765 TFLOP/s) and the fewest bytes (Q, K, V
 * read once, O written once; the mask once when used) over the measured copy
 * bandwidth (4.3 TB/s); the larger is the floor.
 *
 *   bench_fused [--reps N] [--versions|--kernels] [--quick] [--no-mask] [--d D] [--flash-only]
 *
 * --versions (or --kernels) also times flash with each kernel forced through
 * an engine handle's opts.flash_kernel (mma_sync, wgmma, ws; one a device or
 * build lacks is refused and its rows left out); --quick: S <= 4096;
 * --d D: only the cells of head dim D; --flash-only: no efficient rows. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/attn.h"
#include "attnprof/testing.h"

#define MATMUL_RATE 765e12 /* bf16 8192^3 product on the H200 */
#define COPY_RATE 4.3e12   /* device copy, bytes read + written, H200 */
#define ELEMS ((int64_t)16384 * 2048)
#define MAX_MASK_S 4096
#define BOUND (4 * 0x1p-8) /* 4u of bf16: P and out rounded, with margin */

typedef struct {
  int64_t b, h, s, d;
  int causal;
} cell;

typedef struct {
  const char *name;
  attn_backend backend;
  attn_ctx *ctx; /* its opts.flash_kernel picks flash's kernel */
  int mask;      /* an additive mask (efficient) */
  int forced;    /* a kernel asked for: a refusal leaves the row out */
} variant;

static uint64_t rng_state = 0x243f6a8885a308d3ull;
static double uniform(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * 0x1.0p-53;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Host copies (bf16 bits) of Q, K, V and the mask, and their device copies. */
static uint16_t *hq, *hk, *hv, *hmask;
static void *dq, *dk, *dv, *dout, *dmask;

static double bf(uint16_t v) { return attn_bf16_to_f32(v); }

/* fp64 output row (b, h, i) of the cell into ref[D]. */
static void ref_row(const cell *c, int with_mask, int64_t b, int64_t h, int64_t i, double *ref,
                    double *scores) {
  const int64_t s = c->s, d = c->d;
  const uint16_t *q = hq + ((b * c->h + h) * s + i) * d;
  const uint16_t *k = hk + (b * c->h + h) * s * d, *v = hv + (b * c->h + h) * s * d;
  const double scale = 1.0 / sqrt((double)d);
  int64_t last = c->causal ? i : s - 1;
  double m = -INFINITY, l = 0;
  for (int64_t j = 0; j <= last; j++) {
    double dot = 0;
    for (int64_t e = 0; e < d; e++) dot += bf(q[e]) * bf(k[j * d + e]);
    scores[j] = scale * dot + (with_mask ? bf(hmask[i * s + j]) : 0);
    if (scores[j] > m) m = scores[j];
  }
  for (int64_t e = 0; e < d; e++) ref[e] = 0;
  for (int64_t j = 0; j <= last; j++) {
    double p = exp(scores[j] - m);
    l += p;
    for (int64_t e = 0; e < d; e++) ref[e] += p * bf(v[j * d + e]);
  }
  for (int64_t e = 0; e < d; e++) ref[e] /= l;
}

/* Relative error over sampled rows (4 heads x 8 rows). */
static double check(const cell *c, int with_mask) {
  const int64_t d = c->d;
  uint16_t *row = malloc((size_t)d * 2);
  double *ref = malloc((size_t)d * sizeof *ref), *scores = malloc((size_t)c->s * sizeof *scores);
  double diff2 = 0, ref2 = 0;
  for (int t = 0; t < 32; t++) {
    int64_t b = (t * 7) % c->b, h = (t * 5 + t / 8) % c->h;
    int64_t i = t % 8 == 0 ? 0 : t % 8 == 1 ? c->s - 1 : (int64_t)(uniform() * (double)c->s);
    size_t off = (size_t)(((b * c->h + h) * c->s + i) * d) * 2;
    if (attn_cuda_to_host(0, row, (char *)dout + off, (size_t)d * 2)) return INFINITY;
    ref_row(c, with_mask, b, h, i, ref, scores);
    for (int64_t e = 0; e < d; e++) {
      double got = bf(row[e]);
      if (!isfinite(got)) return INFINITY;
      diff2 += (got - ref[e]) * (got - ref[e]), ref2 += ref[e] * ref[e];
    }
  }
  free(row), free(ref), free(scores);
  return sqrt(diff2 / ref2);
}

static attn_status run(const variant *v, const attn_args *a) {
  return attn_forward(v->ctx, v->backend, a);
}

/* A handle running flash with kernel k; NULL (and a message) if refused. */
static attn_ctx *engine(attn_flash_kernel k) {
  attn_ctx_opts o = attn_ctx_opts_default();
  attn_ctx *ctx = NULL;
  o.flash_kernel = k;
  if (attn_ctx_create(&o, &ctx)) fprintf(stderr, "bench_fused: %s\n", attn_last_error());
  return ctx;
}

/* Median microseconds of reps calls, or a negative number on error. */
static double time_us(const variant *v, const attn_args *a, int reps) {
  attn_cuda_timer *t;
  double *us = malloc((size_t)reps * sizeof *us), med = -1;
  if (attn_cuda_timer_create(0, 2 * reps, &t)) return -1;
  for (int i = 0; i < 3; i++)
    if (run(v, a)) goto out;
  for (int i = 0; i < reps; i++)
    if (attn_cuda_timer_mark(t, 2 * i, NULL) || run(v, a) ||
        attn_cuda_timer_mark(t, 2 * i + 1, NULL))
      goto out;
  for (int i = 0; i < reps; i++)
    if (attn_cuda_timer_us(t, 2 * i, 2 * i + 1, &us[i])) goto out;
  qsort(us, (size_t)reps, sizeof *us, cmp_double);
  med = us[reps / 2];
out:
  attn_cuda_timer_destroy(t);
  free(us);
  return med;
}

static int alloc_fill(uint16_t **h, void **dptr, int64_t n, double lo, double hi) {
  *h = malloc((size_t)n * 2);
  if (!*h) return -1;
  for (int64_t i = 0; i < n; i++) (*h)[i] = attn_f32_to_bf16((float)(lo + (hi - lo) * uniform()));
  if (attn_cuda_malloc(0, (size_t)n * 2, dptr) || attn_cuda_to_device(0, *dptr, *h, (size_t)n * 2))
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  int reps = 20, versions = 0, quick = 0, masks = 1, only_d = 0, flash_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--versions") || !strcmp(argv[i], "--kernels")) versions = 1;
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--no-mask")) masks = 0;
    else if (!strcmp(argv[i], "--d") && i + 1 < argc) only_d = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--flash-only")) flash_only = 1, masks = 0;
    else {
      fprintf(stderr, "usage: bench_fused [--reps N] [--versions|--kernels] [--quick] "
                      "[--no-mask] [--d D] [--flash-only]\n");
      return 2;
    }
  }
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 0;
  }
  if (reps < 1) reps = 1;
  /* unit-variance uniform inputs; the mask uniform in [-2, 2] */
  if (alloc_fill(&hq, &dq, ELEMS, -1.732, 1.732) || alloc_fill(&hk, &dk, ELEMS, -1.732, 1.732) ||
      alloc_fill(&hv, &dv, ELEMS, -1.732, 1.732) || attn_cuda_malloc(0, (size_t)ELEMS * 2, &dout) ||
      (masks && alloc_fill(&hmask, &dmask, (int64_t)MAX_MASK_S * MAX_MASK_S, -2, 2))) {
    fprintf(stderr, "setup failed: %s\n", attn_last_error());
    return 1;
  }
  const cell grid[] = {
      {8, 16, 1024, 64, 1}, /* blog shape */
      {16, 32, 1024, 64, 0}, {16, 32, 1024, 64, 1}, {1, 32, 16384, 64, 0},  {1, 32, 16384, 64, 1},
      {4, 16, 4096, 128, 0}, {4, 16, 4096, 128, 1}, {1, 16, 16384, 128, 0}, {1, 16, 16384, 128, 1},
      {4, 8, 4096, 256, 0},  {4, 8, 4096, 256, 1},
  };
  static const struct {
    const char *name;
    attn_flash_kernel k;
  } kernels[] = {{"flash mma_sync", ATTN_FLASH_KERNEL_MMA_SYNC},
                 {"flash wgmma", ATTN_FLASH_KERNEL_WGMMA},
                 {"flash ws", ATTN_FLASH_KERNEL_WS}};
  attn_ctx *auto_ctx = engine(ATTN_FLASH_KERNEL_AUTO);
  if (!auto_ctx) return 1;
  variant vars[8];
  int nv = 0;
  vars[nv++] = (variant){"flash", ATTN_BACKEND_FLASH, auto_ctx, 0, 0};
  for (int k = 0; versions && k < 3; k++) {
    attn_ctx *ctx = engine(kernels[k].k);
    if (ctx) vars[nv++] = (variant){kernels[k].name, ATTN_BACKEND_FLASH, ctx, 0, 1};
  }
  if (!flash_only) vars[nv++] = (variant){"efficient", ATTN_BACKEND_EFFICIENT, auto_ctx, 0, 0};
  if (masks) vars[nv++] = (variant){"efficient+mask", ATTN_BACKEND_EFFICIENT, auto_ctx, 1, 0};

  printf("device: %s; bf16, BHSD, median of %d calls; floor = max(FLOPs / %.0f TFLOP/s, "
         "bytes / %.1f TB/s)\n",
         attn_cuda_device_name(0), reps, MATMUL_RATE / 1e12, COPY_RATE / 1e12);
  printf("%-5s %4s %6s %-6s %-9s %-15s %9s %8s %9s %6s %9s\n", "shape", "D", "S", "causal", "B x H",
         "backend", "us", "TFLOP/s", "floor_us", "floor%", "rel_err");
  int bad = 0;
  for (size_t ci = 0; ci < sizeof grid / sizeof grid[0]; ci++) {
    const cell *c = &grid[ci];
    if (quick && c->s > 4096) continue;
    if (only_d && c->d != only_d) continue;
    attn_tensor q = attn_tensor_bhsd(dq, ATTN_DTYPE_BF16, 0, c->b, c->h, c->s, c->d);
    attn_tensor k = attn_tensor_bhsd(dk, ATTN_DTYPE_BF16, 0, c->b, c->h, c->s, c->d);
    attn_tensor vv = attn_tensor_bhsd(dv, ATTN_DTYPE_BF16, 0, c->b, c->h, c->s, c->d);
    attn_tensor o = attn_tensor_bhsd(dout, ATTN_DTYPE_BF16, 0, c->b, c->h, c->s, c->d);
    for (int vi = 0; vi < nv; vi++) {
      const variant *v = &vars[vi];
      const int with_mask = v->mask;
      if (with_mask && c->s > MAX_MASK_S) continue;
      attn_args a = attn_args_make(q, k, vv, o);
      a.causal = c->causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
      if (with_mask) {
        a.mask_kind = ATTN_MASK_ADDITIVE;
        a.mask = (attn_tensor){.data = dmask,
                               .dtype = ATTN_DTYPE_BF16,
                               .device = 0,
                               .shape = {1, 1, c->s, c->s},
                               .strides = {0, 0, c->s, 1}};
      }
      const char *label = v->name;
      if (attn_cuda_fill_bytes(0, dout, 0xff, (size_t)ELEMS * 2)) return 1;
      char refusal[512];
      if (v->forced && attn_why_not(v->ctx, v->backend, &a, refusal, sizeof refusal)) {
        printf("%-15s D=%lld S=%lld: not run: %s\n", label, (long long)c->d, (long long)c->s,
               refusal); /* this kernel not for this D, device or build */
        continue;
      }
      attn_status st = run(v, &a);
      if (st || attn_cuda_synchronize(0)) {
        printf("%-15s D=%lld S=%lld: %s\n", label, (long long)c->d, (long long)c->s,
               attn_last_error());
        bad++;
        continue;
      }
      double err = check(c, with_mask);
      const double flops = attn_flops(&a);
      double bytes = 4.0 * (double)(c->b * c->h * c->s * c->d) * 2;
      if (with_mask) bytes += (double)c->s * (double)c->s * 2;
      const double floor_us = fmax(flops / MATMUL_RATE, bytes / COPY_RATE) * 1e6;
      char sh[8], bh[16];
      snprintf(sh, sizeof sh, "%s", ci == 0 ? "blog" : "sweep");
      snprintf(bh, sizeof bh, "%lldx%lld", (long long)c->b, (long long)c->h);
      if (!(err <= BOUND)) {
        printf("%-5s %4lld %6lld %-6s %-9s %-15s FAIL rel_err %.3e: not timed\n", sh,
               (long long)c->d, (long long)c->s, c->causal ? "yes" : "no", bh, label, err);
        bad++;
        continue;
      }
      double us = time_us(v, &a, reps);
      if (us <= 0) {
        printf("%-15s timing failed: %s\n", label, attn_last_error());
        bad++;
        continue;
      }
      printf("%-5s %4lld %6lld %-6s %-9s %-15s %9.1f %8.1f %9.1f %5.0f%% %9.2e\n", sh,
             (long long)c->d, (long long)c->s, c->causal ? "yes" : "no", bh, label, us,
             flops / us * 1e-6, floor_us, 100 * floor_us / us, err);
      fflush(stdout);
    }
  }
  printf("%s\n", bad ? "SOME CELLS FAILED" : "all cells checked and timed");
  for (int vi = 0; vi < nv; vi++)
    if (vars[vi].ctx != auto_ctx) attn_ctx_destroy(vars[vi].ctx);
  attn_ctx_destroy(auto_ctx);
  return bad ? 1 : 0;
}
