/* The trace's description of itself: deviceProperties (one entry per device
 * the trace knows) and the "M" rows that name and order the lanes in a viewer
 * (process_name/labels/sort_index per process, thread_name/sort_index per
 * thread), laid out as Kineto does: CPU processes by pid, GPU devices as
 * processes labelled "GPU n" sorted after them, streams as their threads. */
#include <stdlib.h>

#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/model/map.h"
#include "prof/analysis/nest.h"

static void dev_int(json_out *o, const char *key, int64_t v) {
  json_raw(o, ", ");
  json_key(o, key);
  json_int(o, v);
}

static void write_device(json_out *o, const prof_device *d) {
  json_raw(o, "\n    {");
  json_key(o, KINETO_DEV_ID);
  json_int(o, d->id);
  json_raw(o, ", ");
  json_key(o, KINETO_DEV_NAME);
  json_str(o, d->name);
  dev_int(o, KINETO_DEV_TOTAL_GLOBAL_MEM, d->total_global_mem);
  dev_int(o, KINETO_DEV_COMPUTE_MAJOR, d->compute_major);
  dev_int(o, KINETO_DEV_COMPUTE_MINOR, d->compute_minor);
  dev_int(o, KINETO_DEV_MAX_THREADS_PER_BLOCK, d->max_threads_per_block);
  dev_int(o, KINETO_DEV_MAX_THREADS_PER_SM, d->max_threads_per_sm);
  dev_int(o, KINETO_DEV_REGS_PER_BLOCK, d->regs_per_block);
  dev_int(o, KINETO_DEV_WARP_SIZE, d->warp_size);
  dev_int(o, KINETO_DEV_SHARED_MEM_PER_BLOCK, d->shared_memory_per_block);
  dev_int(o, KINETO_DEV_NUM_SMS, d->num_sms);
  dev_int(o, KINETO_DEV_REGS_PER_SM, d->regs_per_sm);
  dev_int(o, KINETO_DEV_SHARED_MEM_PER_BLOCK_OPTIN, d->shared_memory_per_block_optin);
  dev_int(o, KINETO_DEV_SHARED_MEM_PER_SM, d->shared_memory_per_sm);
  dev_int(o, ATTNPROF_DEV_MAX_BLOCKS_PER_SM, d->max_blocks_per_sm);
  dev_int(o, ATTNPROF_DEV_RESERVED_SHARED_MEM, d->reserved_shared_memory_per_block);
  json_raw(o, "}");
}

void chrome_write_devices(chrome_ctx *c) {
  size_t n = prof_trace_device_count(c->t);
  json_raw(&c->o, "\"" KINETO_DEVICE_PROPERTIES "\": [");
  for (size_t i = 0; i < n; i++) {
    if (i) json_raw(&c->o, ",");
    write_device(&c->o, prof_trace_device(c->t, i));
  }
  json_raw(&c->o, n ? "\n  ],\n" : "],\n");
}

/* ---- lanes ---------------------------------------------------------------- */

typedef struct {
  int64_t pid, tid;
} lane;

typedef struct {
  lane *v;
  size_t n, cap;
  prof_map seen;
} lane_set;

static int lane_add(lane_set *s, int64_t pid, int64_t tid) {
  int64_t r = prof_map_put(&s->seen, (uint64_t)pid, (uint64_t)tid, (int64_t)s->n);
  if (r < 0) return -1;
  if ((size_t)r < s->n) return 0;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    lane *v = realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v, s->cap = cap;
  }
  s->v[s->n++] = (lane){pid, tid};
  return 0;
}

static int cmp_lane(const void *pa, const void *pb) {
  const lane *a = pa, *b = pb;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  return (a->tid > b->tid) - (a->tid < b->tid);
}

/* One "M" row: {"name": row, "ph": "M", "ts": 0, "pid", "tid", "args": {key: value}}. */
static void meta_row(chrome_ctx *c, const char *row, const lane *l, const char *key,
                     const char *str, int64_t num) {
  json_out *o = &c->o;
  chrome_next(c);
  json_raw(o, "{");
  json_key(o, KINETO_NAME);
  json_str(o, row);
  json_fmt(o,
           ", \"" KINETO_PH "\": \"" KINETO_PH_METADATA "\", \"" KINETO_TS
           "\": 0.000, \"" KINETO_PID "\": %lld, \"" KINETO_TID "\": %lld, \"" KINETO_ARGS "\": {",
           (long long)l->pid, (long long)l->tid);
  json_key(o, key);
  if (str) json_str(o, str);
  else json_int(o, num);
  json_raw(o, "}}");
}

static const char *process_name(const chrome_ctx *c) {
  const char *name = prof_trace_process_name(c->t);
  return name ? name : "attnprof";
}

static void host_rows(chrome_ctx *c, const lane_set *s) {
  char pname[256], buf[300];
  for (size_t i = 0; i < s->n; i++) {
    const lane *l = &s->v[i];
    if (!i || l->pid != s->v[i - 1].pid) {
      lane p = {l->pid, 0};
      if (l->pid == prof_trace_process_id(c->t))
        snprintf(pname, sizeof pname, "%s", process_name(c));
      else snprintf(pname, sizeof pname, "process %lld", (long long)l->pid);
      meta_row(c, KINETO_META_PROCESS_NAME, &p, KINETO_META_ARG_NAME, pname, 0);
      meta_row(c, KINETO_META_PROCESS_LABELS, &p, KINETO_META_ARG_LABELS, KINETO_LABEL_CPU, 0);
      meta_row(c, KINETO_META_PROCESS_SORT_INDEX, &p, KINETO_META_ARG_SORT_INDEX, NULL, l->pid);
    }
    if (l->tid < 0) continue; /* a process with no thread of its own here */
    snprintf(buf, sizeof buf, KINETO_THREAD_NAME_CPU, (long long)l->tid, pname);
    meta_row(c, KINETO_META_THREAD_NAME, l, KINETO_META_ARG_NAME, buf, 0);
    meta_row(c, KINETO_META_THREAD_SORT_INDEX, l, KINETO_META_ARG_SORT_INDEX, NULL, l->tid);
  }
}

static void gpu_rows(chrome_ctx *c, const lane_set *s) {
  char buf[64];
  for (size_t i = 0; i < s->n; i++) {
    const lane *l = &s->v[i];
    if (!i || l->pid != s->v[i - 1].pid) {
      lane p = {l->pid, 0};
      snprintf(buf, sizeof buf, KINETO_LABEL_GPU, (int)l->pid);
      meta_row(c, KINETO_META_PROCESS_NAME, &p, KINETO_META_ARG_NAME, process_name(c), 0);
      meta_row(c, KINETO_META_PROCESS_LABELS, &p, KINETO_META_ARG_LABELS, buf, 0);
      meta_row(c, KINETO_META_PROCESS_SORT_INDEX, &p, KINETO_META_ARG_SORT_INDEX, NULL,
               KINETO_GPU_SORT_INDEX_BASE + l->pid);
    }
    if (l->tid < 0) continue;
    snprintf(buf, sizeof buf, KINETO_THREAD_NAME_GPU, (long long)l->tid);
    meta_row(c, KINETO_META_THREAD_NAME, l, KINETO_META_ARG_NAME, buf, 0);
    meta_row(c, KINETO_META_THREAD_SORT_INDEX, l, KINETO_META_ARG_SORT_INDEX, NULL, l->tid);
  }
}

/* Every lane that has events, plus the trace's own process and its devices
 * (tid -1: a process row without thread rows). */
static int collect_lanes(const chrome_ctx *c, lane_set *host, lane_set *gpu) {
  int err = 0;
  if (prof_trace_process_id(c->t)) err |= lane_add(host, prof_trace_process_id(c->t), -1);
  for (size_t i = 0; i < prof_trace_device_count(c->t); i++)
    err |= lane_add(gpu, prof_trace_device(c->t, i)->id, -1);
  for (size_t i = 0; i < c->n && !err; i++) {
    const prof_event *e = prof_trace_at(c->t, i);
    err |= lane_add(prof_cat_is_host(e->cat) ? host : gpu, e->pid, e->tid);
  }
  if (host->n > 1) qsort(host->v, host->n, sizeof *host->v, cmp_lane);
  if (gpu->n > 1) qsort(gpu->v, gpu->n, sizeof *gpu->v, cmp_lane);
  return err ? -1 : 0;
}

int chrome_write_metadata(chrome_ctx *c) {
  lane_set host = {0}, gpu = {0};
  prof_map_init(&host.seen);
  prof_map_init(&gpu.seen);
  int rc = collect_lanes(c, &host, &gpu);
  if (!rc) {
    host_rows(c, &host);
    gpu_rows(c, &gpu);
  }
  free(host.v);
  free(gpu.v);
  prof_map_free(&host.seen);
  prof_map_free(&gpu.seen);
  return rc;
}
