/* The per-range summary (prof_summarize_ranges): for each user-range name,
 * calls, ops per call by kind, device and host time per call, and the launch
 * APIs behind its GPU activities. The counting rules are in prof.h.
 *
 * Every op is added to its innermost range and each enclosing range (the
 * chain through prof_nest.range), so the cost is O(n log n) for the nesting
 * plus O(n * d) for d, the depth of range nesting (a few in practice). GPU and
 * CPU tallies are kept apart and chosen per name at the end. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/model/map.h"
#include "prof/analysis/nest.h"
#include "attnprof/prof/ranks.h"
#include "prof/analysis/status.h"

enum { MAX_DEPTH = 64 }; /* rows told apart per op; deeper chains are rare and just repeat */

typedef struct {
  double kind[PROF_KIND_COUNT];
  double total, graph;
  int64_t device_ns;
} tally;

typedef struct {
  const char *name;
  int64_t calls, host_ns, first_start, first_dur, first_idx;
  tally gpu, cpu;
  int n_launch;
  const char *launch[PROF_MAX_LAUNCH_APIS];
  double launch_count[PROF_MAX_LAUNCH_APIS];
} row_acc;

typedef struct {
  const prof_trace *t;
  unsigned flags; /* PROF_SUMMARY_* */
  int one_pid;    /* only the ranges of process pid (and what they hold) */
  int64_t pid;
  const prof_nest *nest;
  prof_map by_name; /* interned name -> row */
  row_acc *rows;
  size_t n_rows;
} summary_ctx;

static void add_launch(row_acc *r, const char *api) {
  int j = 0;
  while (j < r->n_launch && r->launch[j] != api) j++;
  if (j == r->n_launch) {
    if (r->n_launch < PROF_MAX_LAUNCH_APIS) {
      r->launch[r->n_launch++] = api;
    } else { /* no room: the last slot sums the rest */
      j = PROF_MAX_LAUNCH_APIS - 1;
      r->launch[j] = "other";
    }
  }
  r->launch_count[j] += 1;
}

static const char step_row[] = "ProfilerStep#N";

/* The row a range name is tallied under: its own, or one for all profiler steps. */
static const char *row_key(const summary_ctx *c, const char *name) {
  return !(c->flags & PROF_SUMMARY_PER_STEP) && prof_is_step_name(name) ? step_row : name;
}

static int64_t row_of(const summary_ctx *c, int64_t r) {
  return prof_map_get(&c->by_name, prof_map_ptr(row_key(c, prof_trace_at(c->t, (size_t)r)->name)),
                      0);
}

/* A range inside a range of the same row is part of that call (prof.h). */
static int inner_repeat(const summary_ctx *c, size_t i, const char *key) {
  int64_t ts = prof_trace_at(c->t, i)->start_ns;
  for (int64_t r = c->nest->range[i]; r >= 0; r = prof_nest_outer(c->t, c->nest, r, ts))
    if (row_key(c, prof_trace_at(c->t, (size_t)r)->name) == key) return 1;
  return 0;
}

/* One row per distinct range name, with calls and host time. */
static int collect_ranges(summary_ctx *c) {
  size_t cap = 0;
  for (size_t i = 0; i < c->nest->n; i++) {
    const prof_event *e = prof_trace_at(c->t, i);
    if (e->cat != PROF_CAT_USER_ANNOTATION || (c->one_pid && e->pid != c->pid)) continue;
    const char *key = row_key(c, e->name);
    if (inner_repeat(c, i, key)) continue;
    int64_t r = prof_map_put(&c->by_name, prof_map_ptr(key), 0, (int64_t)c->n_rows);
    if (r < 0) return -1;
    if ((size_t)r == c->n_rows && c->n_rows == cap) { /* a new name: room for its row */
      row_acc *grown = realloc(c->rows, (cap = cap ? 2 * cap : 16) * sizeof *grown);
      if (!grown) return -1;
      c->rows = grown;
    }
    row_acc *row = &c->rows[r];
    if ((size_t)r == c->n_rows) {
      memset(row, 0, sizeof *row);
      c->n_rows++;
      row->name = key;
      row->first_start = e->start_ns;
      row->first_dur = e->dur_ns;
      row->first_idx = (int64_t)i;
    }
    row->calls++;
    row->host_ns += e->dur_ns;
    if (e->start_ns < row->first_start)
      row->first_start = e->start_ns, row->first_dur = e->dur_ns, row->first_idx = (int64_t)i;
  }
  return 0;
}

/* Whether event i is an op a range counts (see prof.h), and on which side. */
static int op_side(const summary_ctx *c, size_t i, const prof_event *e) {
  if (prof_cat_is_gpu_activity(e->cat)) return 1;
  if (e->cat != PROF_CAT_CPU_OP) return 0;
  int64_t p = c->nest->parent[i]; /* an op inside an op is part of it */
  return p < 0 || prof_trace_at(c->t, (size_t)p)->cat != PROF_CAT_CPU_OP ? 2 : 0;
}

static void count_ops(summary_ctx *c) {
  for (size_t i = 0; i < c->nest->n; i++) {
    const prof_event *e = prof_trace_at(c->t, i);
    int64_t r0 = c->nest->range[i];
    int side = r0 < 0 || (c->one_pid && prof_trace_at(c->t, (size_t)r0)->pid != c->pid)
                   ? 0
                   : op_side(c, i, e); /* a range's chain stays on its thread */
    if (!side) continue;
    prof_kind k = side == 1 && e->cat == PROF_CAT_KERNEL && prof_is_comm_kernel(e->name)
                      ? PROF_KIND_COMM
                  : side == 1                           ? prof_gpu_kind(e->cat)
                  : (unsigned)e->kind < PROF_KIND_COUNT ? e->kind
                                                        : PROF_KIND_OTHER;
    int64_t launch = c->nest->launch[i];
    const char *api = launch >= 0 ? prof_trace_at(c->t, (size_t)launch)->name : NULL;
    int graph = side == 1 && prof_nest_from_graph(c->t, c->nest, i);
    int64_t ts = prof_nest_ref_ns(c->t, c->nest, i), seen[MAX_DEPTH];
    int n_seen = 0;
    for (int64_t r = c->nest->range[i]; r >= 0; r = prof_nest_outer(c->t, c->nest, r, ts)) {
      int64_t ri = row_of(c, r);
      int j = 0;
      while (j < n_seen && seen[j] != ri) j++;
      if (j < n_seen) continue; /* once per row: nested ranges of one name */
      if (n_seen < MAX_DEPTH) seen[n_seen++] = ri;
      row_acc *row = &c->rows[ri];
      tally *tl = side == 1 ? &row->gpu : &row->cpu;
      tl->kind[k] += 1;
      tl->total += 1;
      tl->graph += graph;
      tl->device_ns += e->dur_ns;
      if (api) add_launch(row, api);
    }
  }
}

static int cmp_first(const void *pa, const void *pb) {
  const row_acc *a = pa, *b = pb;
  if (a->first_start != b->first_start) return a->first_start < b->first_start ? -1 : 1;
  /* Ranges that open together: the enclosing (longer) one first, whatever
   * order a file format stored them in. */
  if (a->first_dur != b->first_dur) return a->first_dur > b->first_dur ? -1 : 1;
  return (a->first_idx > b->first_idx) - (a->first_idx < b->first_idx);
}

static void finish_row(const row_acc *a, prof_range_summary *s) {
  memset(s, 0, sizeof *s);
  const tally *tl = a->gpu.total > 0 ? &a->gpu : &a->cpu;
  double calls = (double)a->calls;
  s->name = a->name;
  s->calls = a->calls;
  s->gpu = tl == &a->gpu;
  for (int k = 0; k < PROF_KIND_COUNT; k++) s->per_call_kind[k] = tl->kind[k] / calls;
  s->per_call_total = tl->total / calls;
  s->graph_per_call = tl->graph / calls;
  s->device_us_per_call = (double)tl->device_ns / 1e3 / calls;
  s->host_us_per_call = (double)a->host_ns / 1e3 / calls;
  s->n_launch_apis = a->n_launch;
  for (int j = 0; j < a->n_launch; j++) {
    s->launch_api[j] = a->launch[j];
    s->launch_api_per_call[j] = a->launch_count[j] / calls;
  }
}

int prof_is_step_name(const char *name) {
  static const char prefix[] = "ProfilerStep#";
  if (!name || strncmp(name, prefix, sizeof prefix - 1)) return 0;
  const char *p = name + sizeof prefix - 1;
  if (!*p) return 0;
  for (; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return 1;
}

static int64_t summarize(summary_ctx c, prof_range_summary **out, prof_link_stats *links) {
  const prof_trace *t = c.t;
  *out = NULL;
  if (!(c.nest = prof_nest_acquire(t))) return -1;
  if (links) *links = c.nest->links;
  prof_map_init(&c.by_name);
  int64_t n = -1;
  if (!collect_ranges(&c)) {
    count_ops(&c);
    if (c.n_rows > 1) qsort(c.rows, c.n_rows, sizeof *c.rows, cmp_first);
    *out = malloc((c.n_rows ? c.n_rows : 1) * sizeof **out);
    if (*out) {
      for (size_t r = 0; r < c.n_rows; r++) finish_row(&c.rows[r], &(*out)[r]);
      n = (int64_t)c.n_rows;
    }
  }
  if (n < 0)
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to summarize a trace of %zu events", c.nest->n);
  free(c.rows);
  prof_map_free(&c.by_name);
  prof_nest_release(c.nest);
  return n;
}

attn_status prof_summarize_ranges(const prof_trace *t, prof_range_summary **out, int64_t *n) {
  return prof_summarize_ranges_ex(t, PROF_SUMMARY_PER_STEP, out, n, NULL);
}

attn_status prof_summarize_ranges_ex(const prof_trace *t, unsigned flags, prof_range_summary **out,
                                     int64_t *n, prof_link_stats *links) {
  summary_ctx c = {.t = t, .flags = flags};
  return prof_count_status(summarize(c, out, links), n, "range summary");
}

attn_status prof_summarize_ranges_pid(const prof_trace *t, unsigned flags, int64_t pid,
                                      prof_range_summary **out, int64_t *n) {
  summary_ctx c = {.t = t, .flags = flags, .one_pid = pid >= 0, .pid = pid};
  return prof_count_status(summarize(c, out, NULL), n, "range summary");
}

const prof_range_summary *prof_range_summary_find(const prof_range_summary *rows, int64_t n,
                                                  const char *name) {
  for (int64_t i = 0; name && i < n; i++)
    if (rows[i].name && !strcmp(rows[i].name, name)) return &rows[i];
  return NULL;
}
