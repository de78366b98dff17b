/* One checked run of a backend on a harness case: poison, run, copy back,
 * then "fully written, gaps untouched" and the comparison with the fp64
 * reference (fully masked rows by the backend's convention). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/testing.h"
#include "attn_gpu/gpu_harness.h"

/* The 0xFF poison: a NaN no arithmetic produces (CUDA's NaNs are 0x7fff...). */
static int is_poison(const void *buf, attn_dtype dt, int64_t off) {
  if (dt == ATTN_DTYPE_F32) {
    uint32_t u;
    memcpy(&u, (const char *)buf + off * 4, 4);
    return u == 0xffffffffu;
  }
  uint16_t u;
  memcpy(&u, (const char *)buf + off * 2, 2);
  return u == 0xffffu;
}

static int fail(gpu_outcome *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(gpu_outcome *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->failure, sizeof o->failure, fmt, ap);
  va_end(ap);
  return GPU_RUN_FAILED;
}

/* Every logical element of out written, every other element of its span
 * (the gaps of a padded or strided layout) still poison. */
static int check_written(const gpu_case *c, gpu_outcome *o) {
  const attn_tensor *t = &c->host.out;
  int64_t span = attn_tensor_span(t);
  unsigned char *logical = calloc((size_t)span, 1);
  int rc = GPU_RUN_PASSED;
  if (!logical) return fail(o, "no host memory for the written-check map");
  for (int64_t b = 0; b < t->shape[0] && !rc; b++)
    for (int64_t h = 0; h < t->shape[1] && !rc; h++)
      for (int64_t s = 0; s < t->shape[2] && !rc; s++)
        for (int64_t d = 0; d < t->shape[3] && !rc; d++) {
          int64_t off =
              b * t->strides[0] + h * t->strides[1] + s * t->strides[2] + d * t->strides[3];
          logical[off] = 1;
          if (is_poison(t->data, t->dtype, off))
            rc = fail(o, "out[%lld, %lld, %lld, %lld] was never written (still the 0xFF poison)",
                      (long long)b, (long long)h, (long long)s, (long long)d);
        }
  for (int64_t off = 0; off < span && !rc; off++)
    if (!logical[off] && !is_poison(t->data, t->dtype, off))
      rc = fail(o, "out element %lld of the span lies outside the tensor's view but was written",
                (long long)off);
  free(logical);
  return rc;
}

/* A fully masked row must be all NaN (nan_rows) or all 0. */
static int check_masked_row(const gpu_case *c, int64_t b, int64_t h, int64_t i, int nan_rows,
                            gpu_outcome *o) {
  for (int64_t d = 0; d < c->p.d; d++) {
    double got = attn_tensor_get(&c->host.out, b, h, i, d);
    if (nan_rows ? !isnan(got) : got != 0)
      return fail(o, "fully masked row [%lld, %lld, %lld] gave %g at d=%lld; expected %s",
                  (long long)b, (long long)h, (long long)i, got, (long long)d,
                  nan_rows ? "NaN (plain softmax)" : "0 (safe softmax)");
  }
  const float *lse = c->host.lse;
  int64_t row = (b * c->p.hq + h) * c->p.sq + i;
  if (lse && (nan_rows ? !isnan(lse[row]) : lse[row] != -INFINITY))
    return fail(o, "fully masked row [%lld, %lld, %lld] gave lse %g; expected %s", (long long)b,
                (long long)h, (long long)i, (double)lse[row], nan_rows ? "NaN" : "-inf");
  return GPU_RUN_PASSED;
}

static int check_values(const gpu_case *c, double tol, int nan_rows, gpu_outcome *o) {
  const gpu_problem *p = &c->p;
  double diff2 = 0, ref2 = 0;
  for (int64_t row = 0; row < p->b * p->hq * p->sq; row++) {
    int64_t i = row % p->sq, h = row / p->sq % p->hq, b = row / (p->sq * p->hq);
    if (c->ref_lse[row] == -INFINITY) {
      o->masked_rows++;
      if (check_masked_row(c, b, h, i, nan_rows, o)) return GPU_RUN_FAILED;
      continue;
    }
    for (int64_t d = 0; d < p->d; d++) {
      double got = attn_tensor_get(&c->host.out, b, h, i, d), want = c->ref_out[row * p->d + d];
      if (!isfinite(got))
        return fail(o, "out[%lld, %lld, %lld, %lld] = %g, reference %g", (long long)b, (long long)h,
                    (long long)i, (long long)d, got, want);
      diff2 += (got - want) * (got - want), ref2 += want * want;
    }
    if (c->host.lse) {
      double got = c->host.lse[row], want = c->ref_lse[row];
      double e = fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);
      o->lse_err = isnan(e) ? INFINITY : e > o->lse_err ? e : o->lse_err;
    }
  }
  o->err = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
  if (!(o->err <= tol)) return fail(o, "relative error %.3e exceeds %.3e", o->err, tol);
  /* lse is fp32 whatever the dtype, from a row max summed over up to 256
   * products: at least 256 fp32 u (47u seen on the CPU, test_backends_cpu). */
  double lse_tol = tol > 256 * 0x1p-24 ? tol : 256 * 0x1p-24;
  if (!(o->lse_err <= lse_tol)) return fail(o, "lse error %.3e exceeds %.3e", o->lse_err, lse_tol);
  return GPU_RUN_PASSED;
}

int gpu_case_run_once(attn_ctx *ctx, gpu_case *c, attn_backend b, double tol, int nan_rows,
                      gpu_outcome *o) {
  int dev = c->device;
  if (attn_cuda_fill_bytes(dev, c->dbuf[3], 0xff, c->bytes[3]) ||
      (c->dbuf[5] && attn_cuda_fill_bytes(dev, c->dbuf[5], 0xff, c->bytes[5])))
    return fail(o, "poisoning the output: %s", attn_last_error());
  memset(o, 0, sizeof *o);
  attn_status st = attn_forward(ctx, b, &c->dev);
  if (st) return fail(o, "attn_forward: %s: %s", attn_status_string(st), attn_last_error());
  if (attn_cuda_synchronize(dev)) return fail(o, "after the forward: %s", attn_last_error());
  if (attn_cuda_to_host(dev, c->hbuf[3], c->dbuf[3], c->bytes[3]) ||
      (c->dbuf[5] && attn_cuda_to_host(dev, c->hbuf[5], c->dbuf[5], c->bytes[5])))
    return fail(o, "copying the output back: %s", attn_last_error());
  if (check_written(c, o)) return GPU_RUN_FAILED;
  if (c->host.lse)
    for (int64_t r = 0; r < c->p.b * c->p.hq * c->p.sq; r++)
      if (is_poison(c->host.lse, ATTN_DTYPE_F32, r))
        return fail(o, "lse row %lld was never written", (long long)r);
  return check_values(c, tol, nan_rows, o);
}

int gpu_case_run(attn_ctx *ctx, gpu_case *c, attn_backend b, double tol, int nan_rows,
                 gpu_outcome *o) {
  char why[512];
  memset(o, 0, sizeof *o);
  if (attn_why_not(ctx, b, &c->dev, why, sizeof why)) {
    snprintf(o->failure, sizeof o->failure, "%s", why);
    return GPU_RUN_REFUSED;
  }
  /* Three identical calls: on a handle with opts.cuda_graphs = 1 the
   * baselines run the first eagerly, capture the second into a CUDA graph
   * and replay it for the third (graph_cache.h); otherwise all three launch
   * eagerly. Each output is poisoned and checked on its own. */
  double worst = 0, worst_lse = 0;
  for (int run = 0; run < 3; run++) {
    gpu_outcome one;
    memset(&one, 0, sizeof one);
    if (gpu_case_run_once(ctx, c, b, tol, nan_rows, &one)) {
      snprintf(o->failure, sizeof o->failure, "call %d of 3: %.600s", run + 1, one.failure);
      return GPU_RUN_FAILED;
    }
    worst = one.err > worst ? one.err : worst;
    worst_lse = one.lse_err > worst_lse ? one.lse_err : worst_lse;
    o->masked_rows = one.masked_rows;
  }
  o->err = worst, o->lse_err = worst_lse;
  return GPU_RUN_PASSED;
}
