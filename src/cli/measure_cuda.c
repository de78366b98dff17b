/* Measuring a backend on a GPU: device time per forward from CUDA events
 * around back-to-back forwards, host time per call with the device drained
 * first, and the accuracy check on the device output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cli/cli_cuda.h"
#ifdef ATTNPROF_HAVE_CUDA
#include "attnprof/testing.h"
#endif

int cli_timed_iters(const cli_measure_opts *m, int device) {
  return device >= 0 && m->iters < CLI_GPU_MIN_ITERS ? CLI_GPU_MIN_ITERS : m->iters;
}

static int fail(cli_result *r, attn_status st) {
  r->status = st;
  snprintf(r->why, sizeof r->why, "%s", attn_last_error());
  return -1;
}

#ifdef ATTNPROF_HAVE_CUDA

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

attn_status cli_cuda_sync(int device) { return attn_cuda_synchronize(device); }

/* Forwards to time: max(iters, 50), cut down to what max_ms allows (at
 * least 10) going by one forward timed after the warm-up. */
static attn_status count_forwards(cli_result *r, const attn_args *a, const cli_measure_opts *m,
                                  attn_cuda_timer *one, int *n) {
  double us = 0;
  attn_status st;
  *n = cli_timed_iters(m, a->q.device);
  if (!m->max_ms && !(m->skip_ms > 0)) return ATTN_STATUS_OK;
  if ((st = attn_cuda_timer_mark(one, 0, a->stream)) ||
      (st = attn_forward(cli_engine(NULL), r->backend, a)) ||
      (st = attn_cuda_timer_mark(one, 1, a->stream)) || (st = attn_cuda_timer_us(one, 0, 1, &us)))
    return st;
  if (cli_skip_slow(r, us, m)) return ATTN_STATUS_OK;
  if (!m->max_ms) return ATTN_STATUS_OK;
  int fit = us > 0 ? (int)(m->max_ms * 1e3 / us) : *n;
  *n = fit < 10 ? 10 : fit < *n ? fit : *n;
  return ATTN_STATUS_OK;
}

/* Events 2i and 2i+1 around forward i, all enqueued before any is read. */
static attn_status device_times(attn_backend b, const attn_args *a, attn_cuda_timer *t, int n,
                                double *us) {
  attn_status st;
  for (int i = 0; i < n; i++)
    if ((st = attn_cuda_timer_mark(t, 2 * i, a->stream)) ||
        (st = attn_forward(cli_engine(NULL), b, a)) ||
        (st = attn_cuda_timer_mark(t, 2 * i + 1, a->stream)))
      return st;
  for (int i = 0; i < n; i++)
    if ((st = attn_cuda_timer_us(t, 2 * i, 2 * i + 1, &us[i]))) return st;
  return ATTN_STATUS_OK;
}

static attn_status host_times(attn_backend b, const attn_args *a, int n, double *us) {
  attn_status st;
  for (int i = 0; i < n; i++) {
    if ((st = attn_cuda_synchronize(a->q.device))) return st;
    int64_t t0 = attn_clock_ns();
    if ((st = attn_forward(cli_engine(NULL), b, a))) return st;
    us[i] = (double)(attn_clock_ns() - t0) / 1e3;
  }
  return attn_cuda_synchronize(a->q.device);
}

static attn_status time_all(cli_result *r, const attn_args *a, const cli_measure_opts *m,
                            attn_cuda_timer **t, double **us) {
  attn_status st;
  int n = 0;
  for (int i = 0; i < (m->warmup > 2 ? m->warmup : 2); i++)
    if ((st = attn_forward(cli_engine(NULL), r->backend, a))) return st;
  if ((st = attn_cuda_timer_create(a->q.device, 2, t)) || (st = count_forwards(r, a, m, *t, &n)))
    return st;
  attn_cuda_timer_destroy(*t);
  *t = NULL;
  if (r->skipped) return ATTN_STATUS_OK;
  if (!(*us = malloc(sizeof **us * (size_t)n)))
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for %d timings", n);
  if ((st = attn_cuda_timer_create(a->q.device, 2 * n, t)) ||
      (st = device_times(r->backend, a, *t, n, *us)))
    return st;
  cli_quartiles(*us, n, &r->time_us_q1, &r->time_us_median, &r->time_us_q3);
  if (m->device_only) {
    r->host_us_median = NAN;
    return ATTN_STATUS_OK;
  }
  if ((st = host_times(r->backend, a, n, *us))) return st;
  r->host_us_median = median_of(*us, n);
  return ATTN_STATUS_OK;
}

int cli_cuda_time_forwards(cli_result *r, const attn_args *a, const cli_measure_opts *m) {
  attn_cuda_timer *t = NULL;
  double *us = NULL;
  attn_status st = time_all(r, a, m, &t, &us);
  attn_cuda_timer_destroy(t);
  free(us);
  return st ? fail(r, st) : r->skipped ? -1 : 0;
}

int cli_cuda_check_accuracy(cli_result *r, cli_inputs *in, const double *ref) {
  attn_args *a = &in->args;
  int dev = a->q.device;
  size_t bytes = (size_t)attn_tensor_span(&a->out) * attn_dtype_size(a->out.dtype);
  attn_status st;
  if ((st = attn_cuda_fill_bytes(dev, a->out.data, 0xff, bytes)) ||
      (st = attn_forward(cli_engine(NULL), r->backend, a)) || (st = attn_cuda_synchronize(dev)) ||
      (st = attn_cuda_to_host(dev, in->host.out.data, a->out.data, bytes)))
    return fail(r, st);
  r->rel_err = attn_rel_error(&in->host.out, ref);
  return 0;
}

#else

attn_status cli_cuda_sync(int device) {
  return attn_fail(ATTN_STATUS_NO_DEVICE, "cuda:%d: this build has no CUDA backends", device);
}

int cli_cuda_time_forwards(cli_result *r, const attn_args *a, const cli_measure_opts *m) {
  (void)m;
  return fail(r, cli_cuda_sync(a->q.device));
}

int cli_cuda_check_accuracy(cli_result *r, cli_inputs *in, const double *ref) {
  (void)ref;
  return fail(r, cli_cuda_sync(in->args.q.device));
}

#endif
