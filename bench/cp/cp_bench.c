/* Context parallelism's single-GPU figures, the inputs of the model in
 * docs/context-parallel.md: (1) flash's rate on the block one causal ring
 * step computes (queries of a shard, 2c rows, against one chunk, c rows, no
 * mask; B=1, 32 heads, D=128, bf16) for chunk sizes c; (2) the merge
 * kernel's time for one step of that shard; (3) one-rank attn_cp_forward
 * (ring, all-gather) against flash on the whole causal sequence (what the
 * split into calls, the merge and the finish cost). Medians of CUDA-event
 * timed back-to-back runs. Usage: bench_cp [max_c] (default 32768). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cp/cuda/cp_cuda.h"
#include "attnprof/device.h"

enum { H = 32, D = 128 };

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

typedef attn_status (*run_fn)(void *arg);

/* Median µs of `iters` back-to-back calls after 2 warm-ups. */
static double time_us(run_fn f, void *arg, int iters) {
  attn_cuda_timer *t = NULL;
  double us[64], r = NAN;
  if (iters > 64) iters = 64;
  for (int i = 0; i < 2; i++)
    if (f(arg)) return NAN;
  if (attn_cuda_timer_create(0, iters + 1, &t)) return NAN;
  attn_cuda_timer_mark(t, 0, NULL);
  for (int i = 0; i < iters; i++) {
    if (f(arg)) goto done;
    attn_cuda_timer_mark(t, i + 1, NULL);
  }
  for (int i = 0; i < iters; i++) attn_cuda_timer_us(t, i, i + 1, &us[i]);
  qsort(us, (size_t)iters, sizeof *us, cmp_double);
  r = us[iters / 2];
done:
  attn_cuda_timer_destroy(t);
  return r;
}

typedef struct {
  attn_ctx *ctx;
  attn_args a;
  attn_cp_comm *comm;
  attn_cp_args cp;
  float *acc_o, *acc_lse, *part_lse;
  void *part_o;
  int64_t rows, nq;
} job;

static attn_status run_flash(void *p) {
  job *j = p;
  return attn_forward(j->ctx, ATTN_BACKEND_FLASH, &j->a);
}
static attn_status run_merge(void *p) {
  job *j = p;
  return attn_cp_merge_launch(j->acc_o, j->acc_lse, H, j->rows, D, 0, j->nq, j->part_o,
                              ATTN_DTYPE_BF16, j->part_lse, NULL);
}
static attn_status run_cp(void *p) {
  job *j = p;
  return attn_cp_forward(j->ctx, j->comm, &j->cp);
}

static void *dev_alloc(size_t bytes) {
  void *d = NULL;
  if (attn_cuda_malloc(0, bytes, &d)) return NULL;
  attn_cuda_fill_bytes(0, d, 0x3c, bytes); /* bf16 ~0.0115, f32 ~0.0115: finite values */
  return d;
}

static attn_tensor bhsd(void *p, int64_t s) {
  return attn_tensor_bhsd(p, ATTN_DTYPE_BF16, 0, 1, H, s, D);
}

int main(int argc, char **argv) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) return printf("no GPU: %s\n", why), 77;
  int64_t max_c = argc > 1 ? atoll(argv[1]) : 32768;
  job j = {0};
  attn_ctx_create(NULL, &j.ctx);
  attn_cp_comm_init_file(NULL, 0, 1, 0, &j.comm);
  size_t big = (size_t)2 * max_c * H * D * 2;
  void *q = dev_alloc(big * 2), *k = dev_alloc(big * 2), *v = dev_alloc(big * 2),
       *o = dev_alloc(big * 2);
  j.acc_o = dev_alloc(big * 2);
  j.part_o = dev_alloc(big);
  j.acc_lse = dev_alloc((size_t)4 * max_c * H * 4);
  j.part_lse = dev_alloc((size_t)4 * max_c * H * 4);
  if (!q || !k || !v || !o || !j.acc_o || !j.part_o || !j.acc_lse || !j.part_lse)
    return printf("out of device memory: %s\n", attn_last_error()), 1;
  attn_cp_init_launch(j.acc_o, 2 * max_c * H * D, j.acc_lse, 2 * max_c * H, NULL);
  printf("# ring step block: q 2c rows x k c rows, B=1 H=%d D=%d bf16, no mask\n", H, D);
  printf("%8s  %12s  %10s  %12s  %12s\n", "c", "flash_us", "TFLOP/s", "merge_us", "merge_GB/s");
  for (int64_t c = 1024; c <= max_c; c *= 2) {
    j.a = attn_args_make(bhsd(q, 2 * c), bhsd(k, c), bhsd(v, c), bhsd(o, 2 * c));
    double fu = time_us(run_flash, &j, c >= 16384 ? 5 : 20);
    j.rows = 2 * c, j.nq = 2 * c;
    double mu = time_us(run_merge, &j, 20);
    double flops = 4.0 * H * D * (double)(2 * c) * (double)c;
    double bytes = (double)H * 2 * c * (D * (2 + 4 + 4) + 4 + 4 + 4); /* part, acc r/w, lse */
    printf("%8lld  %12.1f  %10.1f  %12.1f  %12.1f\n", (long long)c, fu, flops / fu / 1e6, mu,
           bytes / mu / 1e3);
    fflush(stdout);
  }
  printf("# one rank, causal, B=1 H=%d D=%d bf16: cp forward against flash on the whole\n", H, D);
  printf("%8s  %12s  %12s  %12s  %10s\n", "S", "flash_us", "ring_us", "allgather_us", "flash_TF/s");
  for (int64_t s = 8192; s <= 2 * max_c && s <= 65536; s *= 2) {
    j.a = attn_args_make(bhsd(q, s), bhsd(k, s), bhsd(v, s), bhsd(o, s));
    j.a.causal = ATTN_CAUSAL_TOP_LEFT;
    double fu = time_us(run_flash, &j, 10);
    j.cp = (attn_cp_args){.shard = j.a, .seq_len = s, .variant = ATTN_CP_RING};
    double ru = time_us(run_cp, &j, 10);
    j.cp.variant = ATTN_CP_ALLGATHER;
    double au = time_us(run_cp, &j, 10);
    printf("%8lld  %12.1f  %12.1f  %12.1f  %10.1f\n", (long long)s, fu, ru, au,
           attn_flops(&j.a) / fu / 1e6);
    fflush(stdout);
  }
  return 0;
}
