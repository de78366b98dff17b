/* One rank of attnprof cp: its zigzag shard of a seeded problem (values are
 * a hash of the global position, so every rank makes its rows alone), the
 * timed attn_cp_forward, the optional checks of its rows against single-GPU
 * flash and the fp64 reference, its trace, and its result line for the
 * launcher. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/testing.h"
#include "cli/cp_launch.h"
#include "core/error.h"

#ifdef ATTNPROF_HAVE_CUDA

/* Largest B*Hq*S*S the checks take (the fp64 reference is O(S^2)). */
#define CP_CHECK_MAX ((int64_t)1 << 30)

static double value_at(uint64_t seed, int tensor, uint64_t index) {
  uint64_t z = seed ^ ((uint64_t)tensor << 58) ^ (index * 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

/* Host tensor [B, H, rows, D] holding global rows row_of(r) of tensor `id`;
 * rank < 0: the whole sequence. */
static attn_tensor make_host(const cli_problem *p, int id, int64_t h, int n, int rank, void **mem) {
  int64_t s = p->sq, rows = rank < 0 ? s : attn_cp_shard_len(s, n, rank);
  size_t bytes = (size_t)(p->b * h * rows * p->d) * attn_dtype_size(p->dtype);
  *mem = malloc(bytes ? bytes : 1);
  attn_tensor t = attn_tensor_bhsd(*mem, p->dtype, ATTN_DEVICE_CPU, p->b, h, rows, p->d);
  if (!*mem) return t;
  int64_t la = rank < 0 ? s : attn_cp_chunk_len(s, n, rank);
  int64_t a0 = rank < 0 ? 0 : attn_cp_chunk_start(s, n, rank);
  int64_t b0 = rank < 0 ? 0 : attn_cp_chunk_start(s, n, 2 * n - 1 - rank);
  for (int64_t b = 0; b < p->b; b++)
    for (int64_t hh = 0; hh < h; hh++)
      for (int64_t r = 0; r < rows; r++) {
        int64_t g = r < la ? a0 + r : b0 + (r - la);
        uint64_t base = (uint64_t)(((b * h + hh) * s + g) * p->d);
        for (int64_t d = 0; d < p->d; d++)
          attn_tensor_set(&t, b, hh, r, d, value_at(p->seed, id, base + (uint64_t)d));
      }
  return t;
}

static attn_status to_device(int dev, attn_tensor *t, void **dmem) {
  size_t bytes = (size_t)attn_tensor_span(t) * attn_dtype_size(t->dtype);
  attn_status st = attn_cuda_malloc(dev, bytes, dmem);
  if (st == ATTN_STATUS_OK) st = attn_cuda_to_device(dev, *dmem, t->data, bytes);
  return st;
}

/* ||out - ref|| / ||ref|| over this rank's rows; ref over the whole sequence
 * (host [B, Hq, S, D] as double via get). */
static double rows_error(const attn_tensor *out, const cli_problem *p, int n, int rank,
                         const attn_tensor *ref_t, const double *ref) {
  double num = 0, den = 0;
  int64_t s = p->sq, la = attn_cp_chunk_len(s, n, rank);
  int64_t a0 = attn_cp_chunk_start(s, n, rank), b0 = attn_cp_chunk_start(s, n, 2 * n - 1 - rank);
  for (int64_t b = 0; b < p->b; b++)
    for (int64_t h = 0; h < p->hq; h++)
      for (int64_t r = 0; r < out->shape[2]; r++) {
        int64_t g = r < la ? a0 + r : b0 + (r - la);
        for (int64_t d = 0; d < p->d; d++) {
          double x = attn_tensor_get(out, b, h, r, d);
          double y =
              ref ? ref[((b * p->hq + h) * s + g) * p->d + d] : attn_tensor_get(ref_t, b, h, g, d);
          num += (x - y) * (x - y), den += y * y;
        }
      }
  return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

/* Both checks: fp64 reference and single-GPU flash on the whole sequence. */
static attn_status check_rows(attn_ctx *ctx, const cli_problem *p, int n, int rank,
                              const attn_tensor *out_h, double *err_ref, double *err_flash) {
  void *mem[4] = {0}, *dmem[4] = {0};
  attn_tensor q = make_host(p, 0, p->hq, n, -1, &mem[0]);
  attn_tensor k = make_host(p, 1, p->hkv, n, -1, &mem[1]);
  attn_tensor v = make_host(p, 2, p->hkv, n, -1, &mem[2]);
  attn_tensor o = make_host(p, 3, p->hq, n, -1, &mem[3]);
  double *ref = malloc((size_t)(p->b * p->hq * p->sq * p->d) * sizeof *ref);
  attn_status st = mem[0] && mem[1] && mem[2] && mem[3] && ref
                       ? ATTN_STATUS_OK
                       : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp check: no host memory");
  attn_args full = attn_args_make(q, k, v, o);
  full.causal = p->causal;
  full.scale = p->scale;
  if (st == ATTN_STATUS_OK) st = attn_reference_f64(&full, ref, NULL);
  if (st == ATTN_STATUS_OK) *err_ref = rows_error(out_h, p, n, rank, NULL, ref);
  attn_tensor *ts[4] = {&q, &k, &v, &o};
  attn_args dev = full;
  attn_tensor *dts[4] = {&dev.q, &dev.k, &dev.v, &dev.out};
  for (int i = 0; st == ATTN_STATUS_OK && i < 4; i++) {
    st = to_device(rank, ts[i], &dmem[i]);
    dts[i]->data = dmem[i];
    dts[i]->device = rank;
  }
  if (st == ATTN_STATUS_OK) st = attn_forward(ctx, ATTN_BACKEND_FLASH, &dev);
  if (st == ATTN_STATUS_OK)
    st = attn_cuda_to_host(rank, o.data, dmem[3],
                           (size_t)attn_tensor_span(&o) * attn_dtype_size(o.dtype));
  if (st == ATTN_STATUS_OK) *err_flash = rows_error(out_h, p, n, rank, &o, NULL);
  for (int i = 0; i < 4; i++) attn_cuda_free(rank, dmem[i]), free(mem[i]);
  free(ref);
  return st;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* warmup + iters forwards, CUDA events around each; the median in ms. */
static attn_status time_forwards(attn_ctx *ctx, attn_cp_comm *c, const attn_cp_args *a, int dev,
                                 int iters, int warmup, double *ms) {
  attn_status st = ATTN_STATUS_OK;
  for (int i = 0; st == ATTN_STATUS_OK && i < warmup; i++) st = attn_cp_forward(ctx, c, a);
  attn_cuda_timer *t = NULL;
  if (st == ATTN_STATUS_OK) st = attn_cuda_timer_create(dev, iters + 1, &t);
  if (st == ATTN_STATUS_OK) st = attn_cuda_timer_mark(t, 0, a->shard.stream);
  for (int i = 0; st == ATTN_STATUS_OK && i < iters; i++) {
    st = attn_cp_forward(ctx, c, a);
    if (st == ATTN_STATUS_OK) st = attn_cuda_timer_mark(t, i + 1, a->shard.stream);
  }
  double *us = malloc((size_t)iters * sizeof *us);
  for (int i = 0; st == ATTN_STATUS_OK && us && i < iters; i++)
    st = attn_cuda_timer_us(t, i, i + 1, &us[i]);
  if (st == ATTN_STATUS_OK && us) {
    qsort(us, (size_t)iters, sizeof *us, cmp_double);
    *ms = us[iters / 2] / 1e3;
  }
  free(us);
  attn_cuda_timer_destroy(t);
  return st;
}

static attn_status write_trace(attn_ctx *ctx, attn_cp_comm *c, const attn_cp_args *a, int rank,
                               const char *dir) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  if (!t) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no memory for the trace");
  char name[64], path[700];
  snprintf(name, sizeof name, "attnprof cp rank %d", rank);
  attn_status st = prof_start(t, PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL);
  for (int i = 0; st == ATTN_STATUS_OK && i < 3; i++) st = attn_cp_forward(ctx, c, a);
  if (st == ATTN_STATUS_OK) st = attn_cuda_synchronize(rank);
  prof_stop();
  snprintf(path, sizeof path, "%s/rank%d.json", dir, rank);
  if (st == ATTN_STATUS_OK) st = prof_write_chrome_trace(t, path);
  prof_trace_destroy(t);
  return st;
}

int cli_cp_rank(const cli_problem *p, int n, int rank, attn_cp_variant variant, int iters,
                int warmup, int check, const char *trace_dir) {
  const char *dir = getenv("ATTNPROF_CP_DIR");
  char path[600];
  snprintf(path, sizeof path, "%s/nccl-id", dir ? dir : "/tmp");
  attn_cp_comm *comm = NULL;
  attn_ctx *ctx = NULL;
  attn_ctx_opts opts = attn_ctx_opts_default();
  attn_status st = attn_ctx_opts_from_env(&opts);
  if (st == ATTN_STATUS_OK) st = attn_ctx_create(&opts, &ctx);
  if (st == ATTN_STATUS_OK) st = attn_cp_comm_init_file(path, rank, n, rank, &comm);
  void *mem[4] = {0}, *dmem[4] = {0};
  attn_tensor t[4] = {
      make_host(p, 0, p->hq, n, rank, &mem[0]), make_host(p, 1, p->hkv, n, rank, &mem[1]),
      make_host(p, 2, p->hkv, n, rank, &mem[2]), make_host(p, 3, p->hq, n, rank, &mem[3])};
  for (int i = 0; st == ATTN_STATUS_OK && i < 4; i++) {
    st = mem[i] ? to_device(rank, &t[i], &dmem[i])
                : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory for the shard");
  }
  attn_cp_args a = {.seq_len = p->sq, .variant = variant};
  attn_tensor dt[4];
  for (int i = 0; i < 4; i++) dt[i] = t[i], dt[i].data = dmem[i], dt[i].device = rank;
  a.shard = attn_args_make(dt[0], dt[1], dt[2], dt[3]);
  a.shard.causal = p->causal;
  a.shard.scale = p->scale;
  double ms = NAN, err_ref = NAN, err_flash = NAN;
  /* Before the warm-up, as cli_measure does (prof_prepare says why). */
  if (st == ATTN_STATUS_OK && trace_dir)
    (void)prof_prepare(PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL);
  if (st == ATTN_STATUS_OK) st = time_forwards(ctx, comm, &a, rank, iters, warmup, &ms);
  if (st == ATTN_STATUS_OK && trace_dir) st = write_trace(ctx, comm, &a, rank, trace_dir);
  if (st == ATTN_STATUS_OK && check) {
    st = attn_cuda_to_host(rank, t[3].data, dmem[3],
                           (size_t)attn_tensor_span(&t[3]) * attn_dtype_size(t[3].dtype));
    if (st == ATTN_STATUS_OK && p->b * p->hq * p->sq * p->sq <= CP_CHECK_MAX)
      st = check_rows(ctx, p, n, rank, &t[3], &err_ref, &err_flash);
  }
  attn_args full = a.shard;
  full.q.shape[2] = full.k.shape[2] = full.v.shape[2] = full.out.shape[2] = p->sq;
  double tflops = attn_flops(&full) / n / (ms * 1e-3) / 1e12;
  char why[200];
  attn_cp_pick(comm, &a, why, sizeof why);
  if (st == ATTN_STATUS_OK) {
    printf("rank %d (cuda:%d %s): %s (%s), %lld rows, %.3f ms, %.1f TFLOP/s/GPU\n", rank, rank,
           attn_cuda_device_name(rank), attn_cp_variant_name(attn_cp_comm_last_variant(comm)), why,
           (long long)a.shard.q.shape[2], ms, tflops);
    fflush(stdout);
    snprintf(path, sizeof path, "%s/rank%d.result", dir ? dir : "/tmp", rank);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "%s %lld %.6f %.3f %.6g %.6g\n",
              attn_cp_variant_name(attn_cp_comm_last_variant(comm)), (long long)p->sq, ms, tflops,
              err_ref, err_flash);
      fclose(f);
    }
  }
  int rc = st == ATTN_STATUS_OK ? CLI_OK : cli_status_exit(st, attn_last_error());
  /* bf16/f16 storage: the tolerance of the single-GPU checks */
  if (rc == CLI_OK && check && !(err_ref <= 2e-2 && err_flash <= 1e-2) &&
      p->b * p->hq * p->sq * p->sq <= CP_CHECK_MAX) {
    fprintf(stderr,
            "attnprof: rank %d: rows differ: %.3g from the fp64 reference (at most 2e-2), "
            "%.3g from single-GPU flash (at most 1e-2)\n",
            rank, err_ref, err_flash);
    rc = CLI_EXPECT_BROKEN;
  }
  for (int i = 0; i < 4; i++) attn_cuda_free(rank, dmem[i]), free(mem[i]);
  attn_cp_comm_destroy(comm);
  attn_ctx_destroy(ctx);
  return rc;
}
#else
int cli_cp_rank(const cli_problem *p, int nranks, int rank, attn_cp_variant variant, int iters,
                int warmup, int check, const char *trace_dir) {
  return cli_failure("cp: this build has no CUDA half");
}
#endif
