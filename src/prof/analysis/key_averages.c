/* Key averages (prof_key_averages), as torch.profiler's table: one row per
 * (category, name) with calls, host total and self time, and device time.
 *
 * Self time subtracts the direct children on the same thread (prof_nest's
 * parent links). Device time of a host event is inclusive: each GPU activity
 * is credited to its launch call, then sums flow from children to parents in
 * one reverse pass over the nesting order, so an annotation or op gets the
 * GPU time of everything launched inside it. O(n log n) overall. */
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof/ranks.h"
#include "core/error.h"
#include "prof/model/map.h"
#include "prof/analysis/nest.h"
#include "prof/analysis/status.h"

typedef struct {
  prof_key_average *rows;
  size_t n, cap;
  prof_map index; /* (interned name, cat) -> row */
} row_set;

static prof_key_average *row_for(row_set *s, const prof_event *e) {
  int64_t r = prof_map_put(&s->index, prof_map_ptr(e->name), (uint64_t)e->cat, (int64_t)s->n);
  if (r < 0) return NULL;
  if ((size_t)r == s->n) {
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 64;
      prof_key_average *grown = realloc(s->rows, cap * sizeof *grown);
      if (!grown) return NULL;
      s->rows = grown, s->cap = cap;
    }
    memset(&s->rows[s->n], 0, sizeof s->rows[0]);
    s->rows[s->n].name = e->name;
    s->rows[s->n].cat = e->cat;
    s->n++;
  }
  return &s->rows[r];
}

/* child_ns: summed duration of each host event's direct children;
 * dev_ns: GPU time launched inside each host event, inclusive. */
static void host_sums(const prof_trace *t, const prof_nest *nest, int64_t *child_ns,
                      int64_t *dev_ns) {
  for (size_t i = 0; i < nest->n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (nest->parent[i] >= 0) child_ns[nest->parent[i]] += e->dur_ns;
    if (nest->launch[i] >= 0) dev_ns[nest->launch[i]] += e->dur_ns;
  }
  for (size_t j = nest->n_order; j-- > 0;) { /* children before parents */
    int64_t i = nest->order[j];
    if (nest->parent[i] >= 0) dev_ns[nest->parent[i]] += dev_ns[i];
  }
}

static int cmp_rows(const void *pa, const void *pb) {
  const prof_key_average *a = pa, *b = pb;
  if (a->device_us_total != b->device_us_total)
    return a->device_us_total > b->device_us_total ? -1 : 1;
  if (a->host_us_total != b->host_us_total) return a->host_us_total > b->host_us_total ? -1 : 1;
  if (a->cat != b->cat) return a->cat < b->cat ? -1 : 1;
  return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* pid >= 0: that process's host events and the GPU work it launched only. */
static int fill_rows(const prof_trace *t, const prof_nest *nest, const int64_t *child_ns,
                     const int64_t *dev_ns, int64_t pid, row_set *s) {
  for (size_t i = 0; i < nest->n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (pid >= 0 && prof_nest_process(t, nest, i) != pid) continue;
    prof_key_average *r = row_for(s, e);
    if (!r) return -1;
    r->calls++;
    if (prof_cat_is_host(e->cat)) {
      r->host_us_total += (double)e->dur_ns / 1e3;
      r->host_us_self_total += (double)(e->dur_ns - child_ns[i]) / 1e3;
      r->device_us_total += (double)dev_ns[i] / 1e3;
    } else {
      r->device_us_total += (double)e->dur_ns / 1e3;
    }
  }
  return 0;
}

static int64_t key_averages(const prof_trace *t, int64_t pid, prof_key_average **out);

attn_status prof_key_averages(const prof_trace *t, prof_key_average **out, int64_t *n) {
  return prof_key_averages_pid(t, -1, out, n);
}

attn_status prof_key_averages_pid(const prof_trace *t, int64_t pid, prof_key_average **out,
                                  int64_t *n) {
  return prof_count_status(key_averages(t, pid, out), n, "key averages");
}

static int64_t key_averages(const prof_trace *t, int64_t pid, prof_key_average **out) {
  *out = NULL;
  const prof_nest *nest = prof_nest_acquire(t);
  if (!nest) return -1;
  int64_t *child_ns = calloc(nest->n ? nest->n : 1, sizeof *child_ns);
  int64_t *dev_ns = calloc(nest->n ? nest->n : 1, sizeof *dev_ns);
  row_set s = {0};
  prof_map_init(&s.index);
  int64_t n = -1;
  if (child_ns && dev_ns) {
    host_sums(t, nest, child_ns, dev_ns);
    if (!fill_rows(t, nest, child_ns, dev_ns, pid, &s)) {
      if (s.n > 1) qsort(s.rows, s.n, sizeof *s.rows, cmp_rows);
      *out = s.rows;
      s.rows = NULL;
      n = (int64_t)s.n;
    }
  }
  if (n < 0)
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for key averages of %zu events", nest->n);
  free(s.rows);
  prof_map_free(&s.index);
  free(child_ns);
  free(dev_ns);
  prof_nest_release(nest);
  return n;
}
