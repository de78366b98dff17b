/* Per-rank traces onto one timeline (prof_merge_ranks): clocks aligned on
 * the ends of the communication kernels, events copied with their strings,
 * correlation ids kept apart. Kept small and separate from the analyses so
 * that a general multi-process merge can take its place. */
#include <stdlib.h>

#include "attnprof/prof_ranks.h"
#include "core/error.h"

/* Ends of the communication kernels of a trace, in trace order. */
static int64_t *comm_ends(const prof_trace *t, size_t *n) {
  size_t cap = 0;
  int64_t *v = NULL;
  *n = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_KERNEL || !prof_is_comm_kernel(e->name)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      int64_t *w = realloc(v, cap * sizeof *w);
      if (!w) return free(v), *n = 0, NULL;
      v = w;
    }
    v[(*n)++] = e->start_ns + e->dur_ns;
  }
  return v;
}

static int i64_cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

/* Median over k of ends0[k] - ends[k] (both sorted), 0 with nothing common. */
static int64_t clock_shift(int64_t *ends0, size_t n0, int64_t *ends, size_t n) {
  size_t m = n0 < n ? n0 : n;
  if (!m) return 0;
  int64_t *d = malloc(m * sizeof *d);
  if (!d) return 0;
  for (size_t k = 0; k < m; k++) d[k] = ends0[k] - ends[k];
  qsort(d, m, sizeof *d, i64_cmp);
  int64_t r = d[m / 2];
  free(d);
  return r;
}

static int64_t shift_id(int64_t id, int rank) { return id ? id + ((int64_t)rank << 40) : 0; }

attn_status prof_merge_ranks(prof_trace *const *ranks, int n, prof_trace **out,
                             int64_t *offset_ns) {
  *out = NULL;
  if (n < 1) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "merge: no rank traces");
  prof_trace *m = prof_trace_create();
  if (!m) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "merge: no memory");
  size_t n0 = 0;
  int64_t *ends0 = comm_ends(ranks[0], &n0);
  if (n0) qsort(ends0, n0, sizeof *ends0, i64_cmp);
  prof_trace_set_epoch_offset(m, prof_trace_epoch_offset(ranks[0]));
  if (prof_trace_process_id(ranks[0]))
    prof_trace_set_process(m, prof_trace_process_id(ranks[0]), prof_trace_process_name(ranks[0]));
  attn_status st = ATTN_STATUS_OK;
  for (int r = 0; st == ATTN_STATUS_OK && r < n; r++) {
    const prof_trace *t = ranks[r];
    size_t nr = 0;
    int64_t *ends = comm_ends(t, &nr);
    if (nr) qsort(ends, nr, sizeof *ends, i64_cmp);
    int64_t shift = r ? clock_shift(ends0, n0, ends, nr) : 0;
    free(ends);
    if (offset_ns) offset_ns[r] = shift;
    for (size_t i = 0; st == ATTN_STATUS_OK && i < prof_trace_count(t); i++) {
      prof_event e = *prof_trace_at(t, i);
      e.name = prof_trace_intern(m, e.name ? e.name : "");
      e.start_ns += shift;
      e.correlation = shift_id(e.correlation, r);
      e.external_id = shift_id(e.external_id, r);
      if (!e.name || prof_trace_append(m, &e) < 0)
        st = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "merge: no memory for rank %d's events", r);
    }
    for (size_t d = 0; d < prof_trace_device_count(t); d++) {
      const prof_device *dev = prof_trace_device(t, d);
      int seen = 0;
      for (size_t k = 0; k < prof_trace_device_count(m); k++)
        seen |= prof_trace_device(m, k)->id == dev->id;
      if (!seen) prof_trace_add_device(m, dev);
    }
  }
  free(ends0);
  if (st != ATTN_STATUS_OK) return prof_trace_destroy(m), st;
  *out = m;
  return ATTN_STATUS_OK;
}
