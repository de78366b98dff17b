/* How a measured backend is shown: a text row and the JSON object of the
 * compare/run contract (docs/output-contract.md). */
#include <math.h>
#include <string.h>

#include "cli/gpu_report.h"
#include "cli/report.h"
#include "cli/roofline.h"

json_t *cli_problem_json(const cli_problem *p) {
  static const char *const causal[] = {"none", "top-left", "bottom-right"};
  static const char *const mask[] = {"none", "bool", "additive"};
  json_t *o =
      json_pack("{sI sI sI sI sI sI ss ss ss ss sb}", "B", (json_int_t)p->b, "H", (json_int_t)p->hq,
                "H_kv", (json_int_t)p->hkv, "S_q", (json_int_t)p->sq, "S_k", (json_int_t)p->sk, "D",
                (json_int_t)p->d, "dtype", attn_dtype_name(p->dtype), "causal", causal[p->causal],
                "mask", mask[p->mask], "layout", p->bshd ? "bshd" : "bhsd", "lse", p->want_lse);
  if (p->page_size > 0) json_object_set_new(o, "page_size", json_integer(p->page_size));
  return o;
}

/* JSON has no NaN: an unchecked or non-finite figure is null. */
static json_t *real_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

json_t *cli_result_json(const cli_result *r) {
  const char *status = r->refused   ? "refused"
                       : r->skipped ? "skipped"
                       : r->status  ? "failed"
                                    : "ok";
  json_t *o = json_pack("{ss ss}", "name", attn_backend_name(r->backend), "status", status);
  if (r->status) {
    json_object_set_new(o, "why", json_string(r->why));
    return o;
  }
  json_t *per = json_object();
  json_object_set_new(per, "total", json_real(r->per_fwd.per_call_total));
  for (int k = 0; k < PROF_KIND_COUNT; k++)
    json_object_set_new(per, prof_kind_name((prof_kind)k), json_real(r->per_fwd.per_call_kind[k]));
  json_object_set_new(o, "per_forward", per);
  json_t *apis = json_object();
  for (int i = 0; i < r->per_fwd.n_launch_apis; i++)
    json_object_set_new(apis, r->per_fwd.launch_api[i],
                        json_real(r->per_fwd.launch_api_per_call[i]));
  json_object_set_new(o, "launch_api", apis);
  if (r->device >= 0) { /* GPU: CUDA-event time beside the trace's sum, the top kernel */
    json_object_set_new(o, "device_us_events", json_real(r->time_us_median));
    json_object_set_new(o, "top_kernel", cli_top_kernel_json(r->trace, r->per_fwd.calls));
  }
  json_object_set_new(o, "device_us", json_real(r->per_fwd.device_us_per_call));
  json_object_set_new(o, "host_us", real_or_null(r->host_us_median));
  json_object_set_new(o, "time_us", json_real(r->time_us_median));
  json_object_set_new(o, "time_us_q1", json_real(r->time_us_q1));
  json_object_set_new(o, "time_us_q3", json_real(r->time_us_q3));
  json_object_set_new(o, "gflops", json_real(r->gflops));
  json_object_set_new(o, "tflops", json_real(r->gflops / 1e3));
  json_object_set_new(o, "bytes", json_real(r->bytes));
  json_object_set_new(o, "gbps", json_real(r->gbps));
  json_object_set_new(o, "flops", json_real(r->flops));
  json_object_set_new(o, "copy_gbps", r->copy_gbps > 0 ? json_real(r->copy_gbps) : json_null());
  json_object_set_new(o, "copy_frac", real_or_null(r->copy_frac));
  json_object_set_new(o, "peak_tflops",
                      r->peak_tflops > 0 ? json_real(r->peak_tflops) : json_null());
  json_object_set_new(o, "peak_frac", real_or_null(r->peak_frac));
  json_object_set_new(o, "roof", json_string(r->roof ? r->roof : "unknown"));
  json_object_set_new(o, "rel_err", real_or_null(r->rel_err));
  return o;
}

/* Kind columns shown: those with a nonzero count in any row. */
static void kinds_used(const cli_result *rs, int n, int used[PROF_KIND_COUNT]) {
  memset(used, 0, sizeof(int) * PROF_KIND_COUNT);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < PROF_KIND_COUNT; k++)
      if (!rs[i].status && rs[i].per_fwd.per_call_kind[k] > 0) used[k] = 1;
}

void cli_print_results(FILE *f, const cli_result *rs, int n) {
  int used[PROF_KIND_COUNT];
  kinds_used(rs, n, used);
  fprintf(f, "%-14s %7s", "backend", "ops/fwd");
  for (int k = 0; k < PROF_KIND_COUNT; k++)
    if (used[k]) fprintf(f, " %11s", prof_kind_name((prof_kind)k));
  /* On the CPU the trace's sum over ops is not device time: named for what it is. */
  int cpu = n > 0 && rs[0].device < 0;
  fprintf(f, " %12s %12s %17s %12s %9s %9s %6s %8s %6s %7s %9s\n", cpu ? "traced_us" : "device_us",
          "time_us", "[q1 - q3]", "host_us", "GFLOP/s", "GB/s", "%copy", "TFLOP/s", "%peak", "roof",
          "rel_err");
  for (int i = 0; i < n; i++) {
    const cli_result *r = &rs[i];
    fprintf(f, "%-14s ", attn_backend_name(r->backend));
    if (r->status) {
      fprintf(f, "%s: %s\n", r->refused ? "refused" : r->skipped ? "skipped" : "failed", r->why);
      continue;
    }
    fprintf(f, "%7.4g", r->per_fwd.per_call_total);
    for (int k = 0; k < PROF_KIND_COUNT; k++)
      if (used[k]) fprintf(f, " %11.4g", r->per_fwd.per_call_kind[k]);
    char spread[48];
    snprintf(spread, sizeof spread, "[%.1f - %.1f]", r->time_us_q1, r->time_us_q3);
    fprintf(f, " %12.1f %12.1f %17s %12.1f %9.2f %9.2f ", r->per_fwd.device_us_per_call,
            r->time_us_median, spread, r->host_us_median, r->gflops, r->gbps);
    cli_print_roof_cols(f, r);
    fprintf(f, " %9.2e\n", r->rel_err);
  }
  if (cpu)
    fprintf(f, "traced_us: the ops the trace recorded in the profiled forwards, per forward "
               "(JSON device_us); time_us: median of the timed forwards, a different set, "
               "with its quartiles\n");
}
