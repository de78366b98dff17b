/* Measuring one backend on one problem: warm-up, timed forwards (median),
 * profiled forwards inside "attn_fwd" ranges (every count comes from that
 * trace), and the accuracy check against the fp64 reference on a poisoned
 * output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/testing.h"
#include "core/error.h"
#include "cli/cli.h"
#include "cli/cli_cuda.h"
#include "cli/roofline.h"

double *cli_reference(const cli_inputs *in) {
  const attn_tensor *q = &in->host.q;
  size_t n = (size_t)(q->shape[0] * q->shape[1] * q->shape[2] * q->shape[3]);
  double *ref = malloc(n * sizeof *ref);
  if (ref && attn_reference_f64(&in->host, ref, NULL) != ATTN_STATUS_OK) {
    free(ref);
    return NULL;
  }
  return ref;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile(const double *sorted, int n, double p) {
  double x = p * (n - 1);
  int i = (int)x;
  return i + 1 < n ? sorted[i] + (x - i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

void cli_quartiles(double *v, int n, double *q1, double *median, double *q3) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  *q1 = quantile(v, n, 0.25), *median = quantile(v, n, 0.5), *q3 = quantile(v, n, 0.75);
}

static int fail(cli_result *r, attn_status st) {
  r->status = st;
  snprintf(r->why, sizeof r->why, "%s", attn_last_error());
  return -1;
}

/* Timed forwards: wall time of each call (on the CPU the host does the work,
 * so the call's return is the end of the forward). */
static int time_forwards(cli_result *r, const attn_args *a, const cli_measure_opts *m) {
  attn_status st;
  if (a->q.device >= 0) return cli_cuda_time_forwards(r, a, m);
  for (int i = 0; i < m->warmup; i++)
    if ((st = attn_forward(cli_engine(NULL), r->backend, a))) return fail(r, st);
  if (m->skip_ms > 0) { /* one forward decides whether the rest are timed */
    int64_t t0 = attn_clock_ns();
    if ((st = attn_forward(cli_engine(NULL), r->backend, a))) return fail(r, st);
    if (cli_skip_slow(r, (double)(attn_clock_ns() - t0) / 1e3, m)) return -1;
  }
  double *t = malloc(sizeof *t * (size_t)m->iters);
  if (!t) return fail(r, attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for timings"));
  for (int i = 0; i < m->iters; i++) {
    int64_t t0 = attn_clock_ns();
    if ((st = attn_forward(cli_engine(NULL), r->backend, a))) {
      free(t);
      return fail(r, st);
    }
    t[i] = (double)(attn_clock_ns() - t0) / 1e3;
  }
  cli_quartiles(t, m->iters, &r->time_us_q1, &r->time_us_median, &r->time_us_q3);
  r->host_us_median = r->time_us_median;
  free(t);
  return 0;
}

int cli_skip_slow(cli_result *r, double us, const cli_measure_opts *m) {
  if (!(m->skip_ms > 0) || us <= m->skip_ms * 1e3) return 0;
  r->skipped = 1, r->status = ATTN_STATUS_UNSUPPORTED, r->time_us_median = us; /* its one forward */
  snprintf(r->why, sizeof r->why,
           "one forward took %.1f ms, over --max-forward-ms %g: not timed "
           "further (attnprof run times it alone)",
           us / 1e3, m->skip_ms);
  return 1;
}

static int profile_forwards(cli_result *r, const attn_args *a, const cli_measure_opts *m) {
  attn_status st;
  if (m->profiled == 0) return 0; /* compare --serving: no trace, device time only */
  if ((st = prof_trace_create(&r->trace))) return fail(r, st);
  unsigned collect = PROF_COLLECT_CPU | (a->q.device >= 0 ? PROF_COLLECT_GPU : 0);
  if ((st = prof_start(r->trace, collect, NULL))) return fail(r, st);
  for (int i = 0; i < m->profiled && !st; i++) {
    prof_range_push(CLI_RANGE);
    st = attn_forward(cli_engine(NULL), r->backend, a);
    prof_range_pop();
  }
  /* GPU work done before the collectors flush. */
  if (!st && a->q.device >= 0) st = cli_cuda_sync(a->q.device);
  prof_stop();
  if (st) return fail(r, st);
  prof_range_summary *rows = NULL;
  int64_t n;
  if (prof_summarize_ranges(r->trace, &rows, &n)) n = -1;
  for (int64_t i = 0; i < n; i++)
    if (!strcmp(rows[i].name, CLI_RANGE)) r->per_fwd = rows[i];
  free(rows);
  if (r->per_fwd.calls != m->profiled)
    return fail(
        r, attn_fail(ATTN_STATUS_BACKEND_ERROR, "the trace holds %lld '%s' ranges, expected %d",
                     (long long)r->per_fwd.calls, CLI_RANGE, m->profiled));
  return 0;
}

/* Poison (all bits set is NaN in f32, f16 and bf16), run once, compare. */
static int check_accuracy(cli_result *r, cli_inputs *in, const double *ref) {
  attn_args *a = &in->args;
  if (a->q.device >= 0) return cli_cuda_check_accuracy(r, in, ref);
  memset(a->out.data, 0xff, (size_t)attn_tensor_span(&a->out) * attn_dtype_size(a->out.dtype));
  attn_status st = attn_forward(cli_engine(NULL), r->backend, a);
  if (st) return fail(r, st);
  r->rel_err = attn_rel_error(&a->out, ref);
  return 0;
}

static attn_ctx *engine;

static void engine_close(void) { attn_ctx_destroy(engine); }

attn_ctx *cli_engine(const cli_measure_opts *m) {
  if (engine) return engine;
  attn_ctx_opts o = attn_ctx_opts_default();
  if (attn_ctx_opts_from_env(&o)) {
    cli_usage_error("%s", attn_last_error());
    return NULL;
  }
  if (m && m->threads) o.cpu_threads = m->threads;
  if (m && m->cuda_graphs) o.cuda_graphs = 1;
  if (m && m->flash_kernel >= 0) o.flash_kernel = (attn_flash_kernel)m->flash_kernel;
  if (attn_ctx_create(&o, &engine)) {
    cli_failure("%s", attn_last_error());
    return NULL;
  }
  atexit(engine_close);
  return engine;
}

/* CUPTI's first start in a process slows the next run of a kernel run before
 * it (prof_prepare): started once before the first warm-up, a warm-up forward
 * pays that run, not the first profiled one. A failure here is the one
 * prof_start reports later. */
static void prepare_profiler(const attn_args *a, const cli_measure_opts *m) {
  static int prepared;
  if (prepared || !m->profiled || a->q.device < 0) return;
  prepared = 1;
  (void)prof_prepare(PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL);
}

void cli_measure(attn_backend b, cli_inputs *in, const double *ref, const cli_measure_opts *m,
                 cli_result *r) {
  memset(r, 0, sizeof *r);
  r->backend = b;
  r->device = in->args.q.device;
  r->rel_err = NAN;
  if ((r->status = attn_why_not(cli_engine(m), b, &in->args, r->why, sizeof r->why))) {
    r->refused = 1;
    return;
  }
  prepare_profiler(&in->args, m);
  if (time_forwards(r, &in->args, m) || profile_forwards(r, &in->args, m)) return;
  if (ref && check_accuracy(r, in, ref)) return;
  r->gflops = attn_flops(&in->args) / (r->time_us_median * 1e3);
  r->bytes = attn_bytes(&in->args);
  r->gbps = r->bytes / (r->time_us_median * 1e3);
  cli_roof_apply(r, attn_flops(&in->args), cli_roof_for(r->device, in->args.q.dtype, m));
}

void cli_result_free(cli_result *r) {
  prof_trace_destroy(r->trace);
  r->trace = NULL;
}
