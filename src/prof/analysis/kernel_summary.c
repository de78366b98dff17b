/* The kernel table of a trace (prof_summarize_kernels): one row per kernel
 * name and footprint, with calls, device time, the launch API, and the
 * occupancy our calculator gives beside the figure the file carried. The
 * point of the second column: torch.profiler writes 0% for every kernel with
 * more than 48 KiB of shared memory; recomputed here with the opt-in limit,
 * the same kernels show what they really hold. */
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof/ranks.h"
#include "core/error.h"
#include "prof/model/map.h"
#include "prof/analysis/nest.h"
#include "prof/analysis/occupancy.h"
#include "prof/analysis/status.h"

typedef struct {
  prof_kernel_summary *rows;
  size_t n, cap;
  prof_map index; /* (name, footprint hash) -> row */
} kernel_rows;

static uint64_t footprint_hash(const prof_footprint *fp) {
  const int32_t v[] = {fp->grid[0],
                       fp->grid[1],
                       fp->grid[2],
                       fp->block[0],
                       fp->block[1],
                       fp->block[2],
                       fp->cluster[0],
                       fp->cluster[1],
                       fp->cluster[2],
                       fp->registers_per_thread,
                       fp->static_shared_memory,
                       fp->dynamic_shared_memory};
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) h = (h ^ (uint32_t)v[i]) * 1099511628211ull;
  return h;
}

/* Whether one of the ranges open at event i's launch (innermost outwards) is
 * named `range`; "ProfilerStep#N" names every profiler step, as the summary's
 * merged row does. */
static int in_range(const prof_trace *t, const prof_nest *nest, size_t i, const char *range) {
  int steps = !strcmp(range, "ProfilerStep#N");
  int64_t ts = prof_nest_ref_ns(t, nest, i);
  for (int64_t r = nest->range[i]; r >= 0; r = prof_nest_outer(t, nest, r, ts)) {
    const char *name = prof_trace_at(t, (size_t)r)->name;
    if (name && (steps ? prof_is_step_name(name) : !strcmp(name, range))) return 1;
  }
  return 0;
}

static prof_kernel_summary *row_for(kernel_rows *k, const prof_event *e) {
  int64_t r = prof_map_put(&k->index, prof_map_ptr(e->name), footprint_hash(&e->fp), (int64_t)k->n);
  if (r < 0) return NULL;
  if ((size_t)r == k->n) {
    if (k->n == k->cap) {
      size_t cap = k->cap ? 2 * k->cap : 32;
      prof_kernel_summary *grown = realloc(k->rows, cap * sizeof *grown);
      if (!grown) return NULL;
      k->rows = grown, k->cap = cap;
    }
    memset(&k->rows[k->n], 0, sizeof k->rows[0]);
    k->rows[k->n].name = e->name;
    k->rows[k->n].fp = e->fp;
    k->rows[k->n].device = e->device >= 0 ? e->device : -1;
    k->n++;
  }
  return &k->rows[r];
}

static const prof_device *device_of(const prof_trace *t, int id) {
  for (size_t i = 0; i < prof_trace_device_count(t); i++)
    if (prof_trace_device(t, i)->id == id) return prof_trace_device(t, i);
  return NULL;
}

/* Ours: -1 when the device's facts are not in the trace or not in the table;
 * 0 when no block fits (the calculator says why). */
static void occupancy(const prof_trace *t, prof_kernel_summary *r) {
  r->occupancy_pct = r->occupancy_theoretical_pct = -1;
  const prof_device *d = device_of(t, r->device);
  if (!d || !prof_arch_find(d->compute_major, d->compute_minor)) return;
  prof_occupancy o;
  prof_occupancy_compute(&r->fp, d, &o);
  r->occupancy_pct = o.achieved_est_pct;
  r->occupancy_theoretical_pct = o.theoretical_pct;
  r->occupancy_limiting = o.limiting;
}

static int cmp_rows(const void *pa, const void *pb) {
  const prof_kernel_summary *a = pa, *b = pb;
  if (a->device_us_total != b->device_us_total)
    return a->device_us_total > b->device_us_total ? -1 : 1;
  if (a->calls != b->calls) return a->calls > b->calls ? -1 : 1;
  return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* pid >= 0: only the kernels that process's launch calls started. */
static int collect(const prof_trace *t, const prof_nest *nest, const char *range, int64_t pid,
                   kernel_rows *k) {
  for (size_t i = 0; i < nest->n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_KERNEL || (range && !in_range(t, nest, i, range))) continue;
    if (pid >= 0 && prof_nest_process(t, nest, i) != pid) continue;
    prof_kernel_summary *r = row_for(k, e);
    if (!r) return -1;
    if (!r->calls && nest->launch[i] >= 0)
      r->launch_api = prof_trace_at(t, (size_t)nest->launch[i])->name;
    r->calls++;
    r->graph_calls += prof_nest_from_graph(t, nest, i);
    r->device_us_total += (double)e->dur_ns / 1e3;
  }
  return 0;
}

static int64_t summarize_kernels(const prof_trace *t, const char *range, int64_t pid,
                                 prof_kernel_summary **out);

attn_status prof_summarize_kernels(const prof_trace *t, const char *range,
                                   prof_kernel_summary **out, int64_t *n) {
  return prof_summarize_kernels_pid(t, range, -1, out, n);
}

attn_status prof_summarize_kernels_pid(const prof_trace *t, const char *range, int64_t pid,
                                       prof_kernel_summary **out, int64_t *n) {
  return prof_count_status(summarize_kernels(t, range, pid, out), n, "kernel table");
}

static int64_t summarize_kernels(const prof_trace *t, const char *range, int64_t pid,
                                 prof_kernel_summary **out) {
  *out = NULL;
  const prof_nest *nest = prof_nest_acquire(t);
  if (!nest) return -1;
  kernel_rows k = {0};
  prof_map_init(&k.index);
  int rc = collect(t, nest, range, pid, &k);
  prof_map_free(&k.index);
  prof_nest_release(nest);
  if (rc) {
    free(k.rows);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for the kernel table"), -1;
  }
  for (size_t i = 0; i < k.n; i++) {
    k.rows[i].device_us_avg = k.rows[i].device_us_total / (double)k.rows[i].calls;
    occupancy(t, &k.rows[i]);
  }
  if (k.n) qsort(k.rows, k.n, sizeof *k.rows, cmp_rows); /* qsort(NULL, 0) is undefined */
  *out = k.rows ? k.rows : calloc(1, sizeof **out);
  return (int64_t)k.n;
}
