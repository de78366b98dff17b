/* Attribution (prof_attribute) and the nesting it rests on (prof_nest_build).
 *
 * Host events are sorted by (pid, tid, start, longest first) and swept with a
 * stack per thread: an event's parent is the nearest open event that still
 * contains it. The innermost range follows from the parent in O(1) (the parent
 * itself if it is a user_annotation, else the parent's range), so the whole
 * build is one sort, O(n log n). GPU activities then take the range of their
 * launch call, found by binary search on the correlation ids of the API
 * events; this is Kineto's rule (innermost range on the launching thread
 * around the launch), which also holds when the kernel runs after the range
 * has closed. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/nest.h"

typedef struct {
  int64_t pid, tid, start, end;
  int rank; /* at equal spans a user range contains the op, not the reverse */
  int64_t idx;
} host_key;

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static int cmp_host(const void *pa, const void *pb) {
  const host_key *a = pa, *b = pb;
  int c;
  if ((c = cmp_i64(a->pid, b->pid)) || (c = cmp_i64(a->tid, b->tid)) ||
      (c = cmp_i64(a->start, b->start)) || (c = cmp_i64(b->end, a->end)) ||
      (c = cmp_i64(a->rank, b->rank)))
    return c;
  return cmp_i64(a->idx, b->idx);
}

typedef struct {
  int64_t correlation, idx;
} corr_key;

static int cmp_corr(const void *pa, const void *pb) {
  const corr_key *a = pa, *b = pb;
  int c = cmp_i64(a->correlation, b->correlation);
  return c ? c : cmp_i64(a->idx, b->idx);
}

void prof_nest_free(prof_nest *nest) {
  free(nest->parent);
  free(nest->range);
  free(nest->launch);
  free(nest->order);
  memset(nest, 0, sizeof *nest);
}

/* Sorts the host events into nest->order. */
static int sort_host(const prof_trace *t, prof_nest *nest) {
  host_key *keys = malloc((nest->n ? nest->n : 1) * sizeof *keys);
  if (!keys) return -1;
  size_t m = 0;
  for (size_t i = 0; i < nest->n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (!prof_cat_is_host(e->cat)) continue;
    keys[m++] = (host_key){e->pid, e->tid, e->start_ns, e->start_ns + e->dur_ns,
                           e->cat != PROF_CAT_USER_ANNOTATION, (int64_t)i};
  }
  qsort(keys, m, sizeof *keys, cmp_host);
  for (size_t j = 0; j < m; j++) nest->order[j] = keys[j].idx;
  nest->n_order = m;
  free(keys);
  return 0;
}

/* The stack sweep over nest->order: parent and range of every host event. */
static int sweep(const prof_trace *t, prof_nest *nest) {
  int64_t *stack = malloc((nest->n_order ? nest->n_order : 1) * sizeof *stack);
  if (!stack) return -1;
  size_t sp = 0;
  const prof_event *prev = NULL;
  for (size_t j = 0; j < nest->n_order; j++) {
    int64_t i = nest->order[j];
    const prof_event *e = prof_trace_at(t, (size_t)i);
    if (prev && (prev->pid != e->pid || prev->tid != e->tid)) sp = 0;
    prev = e;
    int64_t end = e->start_ns + e->dur_ns;
    while (sp) { /* sorted by start, so the top contains e iff it ends no earlier */
      const prof_event *top = prof_trace_at(t, (size_t)stack[sp - 1]);
      if (top->start_ns + top->dur_ns >= end) break;
      sp--;
    }
    int64_t p = sp ? stack[sp - 1] : -1;
    nest->parent[i] = p;
    nest->range[i] = p < 0                                                    ? -1
                     : prof_trace_at(t, (size_t)p)->cat == PROF_CAT_USER_ANNOTATION ? p
                                                                                : nest->range[p];
    stack[sp++] = i;
  }
  free(stack);
  return 0;
}

int prof_link_launches(const prof_trace *t, size_t n, int64_t *launch) {
  size_t m = 0;
  corr_key *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!keys) return -1;
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    launch[i] = -1;
    if (prof_cat_is_launch(e->cat) && e->correlation) keys[m++] = (corr_key){e->correlation, (int64_t)i};
  }
  qsort(keys, m, sizeof *keys, cmp_corr);
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (!prof_cat_is_gpu_activity(e->cat) || !e->correlation) continue;
    size_t lo = 0, hi = m; /* the first key with correlation >= e's */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (keys[mid].correlation < e->correlation) lo = mid + 1;
      else hi = mid;
    }
    if (lo < m && keys[lo].correlation == e->correlation) launch[i] = keys[lo].idx;
  }
  free(keys);
  return 0;
}

/* A GPU activity belongs to the range of its launch call. */
static void range_by_launch(prof_nest *nest) {
  for (size_t i = 0; i < nest->n; i++)
    if (nest->launch[i] >= 0) nest->range[i] = nest->range[nest->launch[i]];
}

int prof_nest_build(const prof_trace *t, prof_nest *nest) {
  memset(nest, 0, sizeof *nest);
  nest->n = prof_trace_count(t);
  size_t bytes = (nest->n ? nest->n : 1) * sizeof(int64_t);
  nest->parent = malloc(bytes);
  nest->range = malloc(bytes);
  nest->launch = malloc(bytes);
  nest->order = malloc(bytes);
  if (nest->parent && nest->range && nest->launch && nest->order) {
    for (size_t i = 0; i < nest->n; i++) nest->parent[i] = nest->range[i] = nest->launch[i] = -1;
    if (!sort_host(t, nest) && !sweep(t, nest) && !prof_link_launches(t, nest->n, nest->launch)) {
      range_by_launch(nest);
      return 0;
    }
  }
  prof_nest_free(nest);
  attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to analyse a trace of %zu events",
            prof_trace_count(t));
  return -1;
}

int64_t *prof_attribute(const prof_trace *t) {
  prof_nest nest;
  if (prof_nest_build(t, &nest)) return NULL;
  int64_t *range = nest.range;
  nest.range = NULL;
  prof_nest_free(&nest);
  return range;
}
