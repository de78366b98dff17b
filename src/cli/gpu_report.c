/* The top kernel of each backend on a GPU (see gpu_report.h). Every figure
 * comes from the trace: the kernel records' durations and footprints, and
 * the device limits the GPU collector stored with them. */
#include <stdio.h>
#include <string.h>

#include "cli/gpu_report.h"

enum { MAX_NAMES = 256 };

/* Device time per kernel name; interned names compare by pointer. */
static const prof_event *top_event(const prof_trace *t, double *total, int64_t *calls) {
  const char *names[MAX_NAMES];
  const prof_event *first[MAX_NAMES];
  double us[MAX_NAMES];
  int64_t n_calls[MAX_NAMES];
  int n = 0, best = -1;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_KERNEL) continue;
    int k = 0;
    while (k < n && names[k] != e->name) k++;
    if (k == n) {
      if (n == MAX_NAMES) continue;
      names[n] = e->name, first[n] = e, us[n] = 0, n_calls[n] = 0, n++;
    }
    us[k] += (double)e->dur_ns / 1e3, n_calls[k]++;
    if (best < 0 || us[k] > us[best]) best = k;
  }
  if (best < 0) return NULL;
  *total = us[best], *calls = n_calls[best];
  return first[best];
}

static const prof_device *device_of(const prof_trace *t, int id) {
  for (size_t i = 0; i < prof_trace_device_count(t); i++)
    if (prof_trace_device(t, i)->id == id) return prof_trace_device(t, i);
  return NULL;
}

void cli_top_kernel_find(const prof_trace *t, int64_t forwards, cli_top_kernel *out) {
  double us = 0;
  int64_t calls = 0;
  memset(out, 0, sizeof *out);
  const prof_event *e = t && forwards > 0 ? top_event(t, &us, &calls) : NULL;
  if (!e) return;
  const prof_device *dev = device_of(t, e->device);
  out->name = e->name;
  out->calls = (double)calls / (double)forwards;
  out->device_us = us / (double)forwards;
  out->fp = e->fp;
  out->have_occ = dev && prof_occupancy_compute(&e->fp, dev, &out->occ) == 0;
}

static json_t *dim3_json(const int32_t v[3]) { return json_pack("[iii]", v[0], v[1], v[2]); }

json_t *cli_top_kernel_json(const prof_trace *t, int64_t forwards) {
  cli_top_kernel k;
  cli_top_kernel_find(t, forwards, &k);
  if (!k.name) return json_null();
  json_t *o = json_pack("{ss sf sf so so si si}", "name", k.name, "calls_per_forward", k.calls,
                        "device_us_per_forward", k.device_us, "grid", dim3_json(k.fp.grid), "block",
                        dim3_json(k.fp.block), "registers_per_thread", k.fp.registers_per_thread,
                        "shared_memory", k.fp.static_shared_memory + k.fp.dynamic_shared_memory);
  char lim[64] = "";
  if (k.have_occ) prof_occupancy_limit_names(k.occ.limiting, lim, sizeof lim);
  json_object_set_new(o, "occupancy_pct",
                      k.have_occ ? json_real(k.occ.theoretical_pct) : json_null());
  json_object_set_new(o, "occupancy_est_achieved_pct",
                      k.have_occ ? json_real(k.occ.achieved_est_pct) : json_null());
  json_object_set_new(o, "limited_by", k.have_occ ? json_string(lim) : json_null());
  return o;
}

/* "cudaLaunchKernel 4, cudaMemcpyAsync 1" per forward, from the trace. */
static void launch_apis(const prof_range_summary *s, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < s->n_launch_apis && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%s %.4g", i ? ", " : "", s->launch_api[i],
                             s->launch_api_per_call[i]);
  if (!s->n_launch_apis) snprintf(buf, len, "(none in the trace)");
}

static void print_launch_apis(FILE *f, const cli_result *rs, int n) {
  fprintf(f, "\nlaunch APIs per forward (from the trace):\n");
  for (int i = 0; i < n; i++) {
    char apis[512];
    if (rs[i].status) continue;
    launch_apis(&rs[i].per_fwd, apis, sizeof apis);
    fprintf(f, "%-14s %s\n", attn_backend_name(rs[i].backend), apis);
  }
}

void cli_print_top_kernels(FILE *f, const cli_result *rs, int n) {
  fprintf(f,
          "\ntop kernel per backend (most device time per forward; footprint and occupancy "
          "from the trace):\n%-14s %-44s %8s %5s %7s %14s %10s\n",
          "backend", "kernel", "us/fwd", "regs", "smem_B", "occ% theor/est", "limited by");
  for (int i = 0; i < n; i++) {
    cli_top_kernel k;
    if (rs[i].status) continue;
    cli_top_kernel_find(rs[i].trace, rs[i].per_fwd.calls, &k);
    if (!k.name) {
      fprintf(f, "%-14s (no kernel records: GPU collection was not available)\n",
              attn_backend_name(rs[i].backend));
      continue;
    }
    char occ[32] = "n/a", lim[64] = "";
    if (k.have_occ) {
      snprintf(occ, sizeof occ, "%.1f/%.1f", k.occ.theoretical_pct, k.occ.achieved_est_pct);
      prof_occupancy_limit_names(k.occ.limiting, lim, sizeof lim);
    }
    fprintf(f, "%-14s %-44.44s %8.1f %5d %7d %14s %10s\n", attn_backend_name(rs[i].backend), k.name,
            k.device_us, k.fp.registers_per_thread,
            k.fp.static_shared_memory + k.fp.dynamic_shared_memory, occ, lim);
  }
  print_launch_apis(f, rs, n);
}
