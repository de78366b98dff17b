/* One side of a diff: every op of a trace tallied under each range that
 * contains it (the summary's rule, prof.h: an op counts for its innermost
 * range and every enclosing one; a range's ops are its GPU activities, or its
 * outermost CPU ops when it launched none), with range names normalized so
 * that ProfilerStep#2..#4 are one range of three calls. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/diff.h"
#include "prof/analysis/nest.h"

enum { RANGE_NAME_MAX = 4096 };

static int grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t cap2 = *cap ? *cap * 2 : 16;
  void *q = realloc(*p, cap2 * size);
  if (!q) return -1;
  *p = q, *cap = cap2;
  return 0;
}

/* The row of a range event (created on first sight of its normalized name). */
static int64_t range_row(diff_tally *d, prof_strpool *pool, const prof_event *e, char *buf) {
  prof_normalize_name(e->name ? e->name : "", buf, RANGE_NAME_MAX);
  const char *name = prof_strpool_intern(pool, buf);
  if (!name) return -1;
  int64_t r = prof_map_put(&d->by_name, prof_map_ptr(name), 0, (int64_t)d->n);
  if (r < 0) return -1;
  if ((size_t)r == d->n) {
    if (grow((void **)&d->ranges, &d->cap, d->n + 1, sizeof *d->ranges)) return -1;
    memset(&d->ranges[r], 0, sizeof d->ranges[r]);
    d->ranges[r].name = name;
    d->ranges[r].first_start = e->start_ns;
    d->n++;
  }
  diff_range *row = &d->ranges[r];
  row->calls++;
  if (e->start_ns < row->first_start) row->first_start = e->start_ns;
  return r;
}

static int add_op(diff_tally *d, int64_t r, int side, const char *name, int64_t dur) {
  diff_range *row = &d->ranges[r];
  int64_t k = prof_map_put(&d->ops, (uint64_t)(r * 2 + side), prof_map_ptr(name),
                           (int64_t)row->n_ops[side]);
  if (k < 0) return -1;
  if ((size_t)k == row->n_ops[side]) {
    if (grow((void **)&row->ops[side], &row->cap_ops[side], row->n_ops[side] + 1, sizeof(diff_op)))
      return -1;
    row->ops[side][k] = (diff_op){name, 0, 0};
    row->n_ops[side]++;
  }
  row->ops[side][k].count += 1;
  row->ops[side][k].dev_ns += dur;
  return 0;
}

/* DIFF_GPU, DIFF_CPU, or -1 for an event no range counts. */
static int side_of(const prof_trace *t, const prof_nest *nest, size_t i) {
  const prof_event *e = prof_trace_at(t, i);
  if (prof_cat_is_gpu_activity(e->cat)) return DIFF_GPU;
  if (e->cat != PROF_CAT_CPU_OP) return -1;
  int64_t p = nest->parent[i];
  return p < 0 || prof_trace_at(t, (size_t)p)->cat != PROF_CAT_CPU_OP ? DIFF_CPU : -1;
}

static int tally_ops(const prof_trace *t, const prof_nest *nest, const int64_t *row_of,
                     prof_strpool *pool, diff_tally *d) {
  for (size_t i = 0; i < nest->n; i++) {
    int side = nest->range[i] < 0 ? -1 : side_of(t, nest, i);
    if (side < 0) continue;
    const prof_event *e = prof_trace_at(t, i);
    const char *name = prof_strpool_intern(pool, e->name ? e->name : "");
    if (!name) return -1;
    int64_t ts = prof_nest_ref_ns(t, nest, i);
    for (int64_t r = nest->range[i]; r >= 0; r = prof_nest_outer(t, nest, r, ts))
      if (add_op(d, row_of[r], side, name, e->dur_ns)) return -1;
  }
  return 0;
}

static int cmp_first(const void *pa, const void *pb) {
  const diff_range *a = pa, *b = pb;
  if (a->first_start != b->first_start) return a->first_start < b->first_start ? -1 : 1;
  return strcmp(a->name, b->name); /* names are distinct: a total order */
}

static int build(const prof_trace *t, const prof_nest *nest, prof_strpool *pool, diff_tally *d) {
  int64_t *row_of = malloc((nest->n ? nest->n : 1) * sizeof *row_of);
  char *buf = malloc(RANGE_NAME_MAX);
  int rc = row_of && buf ? 0 : -1;
  for (size_t i = 0; !rc && i < nest->n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    row_of[i] = -1;
    if (e->cat == PROF_CAT_USER_ANNOTATION && (row_of[i] = range_row(d, pool, e, buf)) < 0) rc = -1;
  }
  if (!rc) rc = tally_ops(t, nest, row_of, pool, d);
  free(row_of);
  free(buf);
  return rc;
}

int diff_tally_build(const prof_trace *t, prof_strpool *pool, diff_tally *d) {
  memset(d, 0, sizeof *d);
  prof_map_init(&d->by_name);
  prof_map_init(&d->ops);
  const prof_nest *nest = prof_nest_acquire(t);
  if (!nest) return -1;
  int rc = build(t, nest, pool, d);
  prof_nest_release(nest);
  /* The maps index rows by position: done with them before the sort. */
  prof_map_free(&d->by_name);
  prof_map_free(&d->ops);
  if (rc) {
    diff_tally_free(d);
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to diff a trace of %zu events",
              prof_trace_count(t));
    return -1;
  }
  if (d->n) qsort(d->ranges, d->n, sizeof *d->ranges, cmp_first);
  return 0;
}

void diff_tally_free(diff_tally *d) {
  for (size_t r = 0; r < d->n; r++) free(d->ranges[r].ops[0]), free(d->ranges[r].ops[1]);
  free(d->ranges);
  prof_map_free(&d->by_name);
  prof_map_free(&d->ops);
  memset(d, 0, sizeof *d);
}
