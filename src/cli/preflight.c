/* Checks before allocation (see preflight.h). Estimates come from
 * measurement, not constants: the backend and the fp64 reference each run
 * once on a small problem of the same head dim, dtype and mask, and their
 * rates scale to the asked problem by FLOP count. */
#include "cli/preflight.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cli/cli_cuda.h"

/* A non-NULL, 4 KiB-aligned address: why-not reads shapes, strides, dtypes
 * and alignment, never the data. */
#define PLACEHOLDER ((void *)(uintptr_t)4096)

static attn_tensor shaped(const cli_problem *p, int64_t h, int64_t s) {
  attn_tensor t = attn_tensor_bhsd(PLACEHOLDER, p->dtype, p->device, p->b, h, s, p->d);
  if (p->bshd) t.strides[0] = s * h * p->d, t.strides[1] = p->d, t.strides[2] = h * p->d;
  return t;
}

static attn_args shape_args(const cli_problem *p) {
  attn_args a = attn_args_make(shaped(p, p->hq, p->sq), shaped(p, p->hkv, p->sk),
                               shaped(p, p->hkv, p->sk), shaped(p, p->hq, p->sq));
  a.causal = p->causal, a.scale = p->scale;
  if (p->mask != ATTN_MASK_NONE) {
    attn_dtype dt = p->mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : p->dtype;
    a.mask = attn_tensor_bhsd(PLACEHOLDER, dt, p->device, p->b, 1, p->sq, p->sk);
    a.mask.shape[1] = p->hq, a.mask.strides[1] = 0;
    a.mask_kind = p->mask;
  }
  if (p->want_lse) a.lse = PLACEHOLDER;
  return a;
}

/* Host bytes of the inputs (q, k, v, out, mask, lse). */
static double input_bytes(const cli_problem *p) {
  double e = attn_dtype_size(p->dtype);
  double qo = 2.0 * p->b * p->hq * p->sq * p->d * e, kv = 2.0 * p->b * p->hkv * p->sk * p->d * e;
  double mask = p->mask == ATTN_MASK_NONE
                    ? 0
                    : (double)p->b * p->sq * p->sk * (p->mask == ATTN_MASK_BOOL ? 1 : e);
  return qo + kv + mask + (p->want_lse ? 4.0 * p->b * p->hq * p->sq : 0);
}

/* The same problem shrunk to one batch, at most `heads` heads (so threads
 * have work to share) and at most `rows` rows: large enough that start-up
 * costs do not pass for the rate, small enough to take milliseconds. */
static cli_problem small_of(const cli_problem *p, int64_t heads, int64_t rows) {
  cli_problem s = *p;
  if (p->b * p->hq < heads) heads = p->b * p->hq;
  s.b = 1, s.hq = s.hkv = heads, s.device = ATTN_DEVICE_CPU;
  s.sq = p->sq < rows ? p->sq : rows;
  s.sk = p->sk < rows ? p->sk : rows;
  return s;
}

/* Seconds per FLOP of `b` (or of the fp64 reference when ref) on the small
 * problem; NAN when it could not be measured. */
static double seconds_per_flop(const cli_problem *p, attn_backend b, int ref) {
  cli_problem s = ref ? small_of(p, 1, 256) : small_of(p, 8, 1024);
  cli_inputs in;
  double spf = NAN;
  if (cli_inputs_create(&s, &in) == ATTN_STATUS_OK) {
    size_t n = (size_t)(s.b * s.hq * s.sq * s.d);
    double *out = ref ? malloc(n * sizeof *out) : NULL;
    attn_status st = ref ? (out ? ATTN_STATUS_OK : ATTN_STATUS_OUT_OF_MEMORY)
                         : attn_forward(cli_engine(NULL), b, &in.args); /* warm-up */
    /* Repeated up to 50 ms, so start-up costs do not pass for the rate. */
    int64_t t0 = attn_clock_ns(), t1 = t0;
    int reps = 0;
    while (!st && reps < 20 && t1 - t0 < 50000000) {
      st = ref ? attn_reference_f64(&in.host, out, NULL)
               : attn_forward(cli_engine(NULL), b, &in.args);
      reps++, t1 = attn_clock_ns();
    }
    if (!st) spf = (double)(t1 - t0) / 1e9 / reps / attn_flops(&in.args);
    free(out);
  }
  cli_inputs_destroy(&in);
  return spf;
}

static void human_time(double s, char *buf, size_t len) {
  if (s < 120) snprintf(buf, len, "%.0f s", s);
  else if (s < 7200) snprintf(buf, len, "%.0f min", s / 60);
  else if (s < 172800) snprintf(buf, len, "%.1f h", s / 3600);
  else snprintf(buf, len, "%.1f days", s / 86400);
}

void cli_preflight_reference(const cli_problem *p, cli_measure_opts *m) {
  if (!m->check) return;
  attn_args a = shape_args(p);
  double avail = (double)attn_host_memory_available();
  double bytes = 8.0 * p->b * p->hq * p->sq * p->d;
  char t[32];
  if (avail > 0 && bytes + input_bytes(p) > avail / 2) {
    fprintf(stderr,
            "attnprof: fp64 check skipped: the reference would need %.1f GiB beside "
            "%.1f GiB of inputs, with %.1f GiB available\n",
            bytes / 1073741824.0, input_bytes(p) / 1073741824.0, avail / 1073741824.0);
    m->check = 0;
    return;
  }
  double secs = seconds_per_flop(p, ATTN_BACKEND_AUTO, 1) * attn_flops(&a);
  if (secs > CLI_REF_LIMIT_S) {
    human_time(secs, t, sizeof t);
    fprintf(stderr,
            "attnprof: fp64 check skipped: the reference would take about %s "
            "(limit %.0f s; measured on a smaller problem)\n",
            t, CLI_REF_LIMIT_S);
    m->check = 0;
  }
}

/* Memory and time of the run itself: CLI_OK, or a refusal with figures. */
static int estimate_run(const cli_problem *p, const cli_measure_opts *m, attn_backend b) {
  double avail = (double)attn_host_memory_available(), need = input_bytes(p);
  if (avail > 0 && need > avail && !m->force)
    return cli_usage_error("the inputs need %.1f GiB of memory but %.1f GiB are available: "
                           "choose a smaller --shape",
                           need / 1073741824.0, avail / 1073741824.0);
  if (p->device != ATTN_DEVICE_CPU) return CLI_OK; /* GPU times are not estimated here */
  attn_args a = shape_args(p);
  int forwards = m->warmup + m->iters + m->profiled + (m->check ? 1 : 0);
  double secs = seconds_per_flop(p, b, 0) * attn_flops(&a) * forwards;
  if (!(secs > CLI_TIME_LIMIT_S)) return CLI_OK;
  char t[32];
  human_time(secs, t, sizeof t);
  if (m->force) {
    fprintf(stderr, "attnprof: warning: this run will take about %s (--force given)\n", t);
    return CLI_OK;
  }
  return cli_usage_error("%s would take about %s for %d forwards of %.2g FLOP (rate measured on "
                         "a smaller problem); past %.0f s a run needs --force, or choose a smaller "
                         "--shape or fewer --iters",
                         attn_backend_name(b), t, forwards, attn_flops(&a), CLI_TIME_LIMIT_S);
}

int cli_preflight(const cli_problem *p, cli_measure_opts *m, attn_backend *b, char *log,
                  size_t len) {
  attn_args a = shape_args(p);
  char why[512];
  attn_status st;
  if (p->device != ATTN_DEVICE_CPU) { /* the device's own reason first (no driver, no GPU) */
    cli_inputs none;
    memset(&none, 0, sizeof none);
    st = cli_inputs_to_device(p, &none); /* no buffers: only the device probe */
    cli_inputs_free_device(&none);
    if (st) return cli_status_exit(st, attn_last_error());
  }
  if (*b == ATTN_BACKEND_AUTO) {
    if ((st = attn_select(cli_engine(m), &a, b, log, len)))
      return cli_status_exit(st, attn_last_error());
  } else if ((st = attn_why_not(cli_engine(m), *b, &a, why, sizeof why))) {
    return cli_usage_error("%s", why);
  }
  cli_preflight_reference(p, m);
  return estimate_run(p, m, *b);
}
