/* prof_write_perfetto_trace's body: the events of a trace as Perfetto slices,
 * in time order. A slice is a BEGIN packet at its start and an END packet at
 * its end; ends wait in a heap and go out before the next begin that comes
 * at or after them, inner before outer at equal times, so each thread track
 * nests exactly as the JSON's complete events do. Extra memory: an index
 * per event (time order, flow links) and the slices open at one time. */
#include <errno.h>
#include <stdlib.h>

#include "prof/io/chrome.h"
#include "prof/io/pftrace.h"
#include "prof/analysis/nest.h"

typedef struct {
  int64_t start, end;
  int rank; /* at equal spans the user range first: it is the outer slice */
  int64_t idx;
} span;

static int cmp_span(const void *pa, const void *pb) {
  const span *a = pa, *b = pb;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Open slices: a min-heap on (end, later begin first). */
typedef struct {
  int64_t end, seq, idx;
} open_slice;

static int before(const open_slice *a, const open_slice *b) {
  return a->end != b->end ? a->end < b->end : a->seq > b->seq;
}

static void heap_push(open_slice *h, size_t *n, open_slice v) {
  size_t i = (*n)++;
  while (i && before(&v, &h[(i - 1) / 2])) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
  h[i] = v;
}

static open_slice heap_pop(open_slice *h, size_t *n) {
  open_slice top = h[0], last = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && before(&h[c + 1], &h[c])) c++;
    if (!before(&h[c], &last)) break;
    h[i] = h[c], i = c;
  }
  if (*n) h[i] = last;
  return top;
}

static void close_until(pft_writer *w, const prof_trace *t, open_slice *h, size_t *n, int64_t at,
                        int all) {
  while (*n && (all || h[0].end <= at))
    pft_write_end(w, prof_trace_at(t, (size_t)heap_pop(h, n).idx));
}

static void write_events(pft_writer *w, const prof_trace *t, const span *order, size_t n,
                         const int64_t *launch, const unsigned char *launches, open_slice *heap) {
  size_t open = 0;
  for (size_t k = 0; k < n && !w->err; k++) {
    size_t i = (size_t)order[k].idx;
    const prof_event *e = prof_trace_at(t, i);
    close_until(w, t, heap, &open, e->start_ns, 0);
    /* A flow is named by its launch event's index + 1: unique in the trace,
     * where correlation ids of several processes may collide. */
    uint64_t out = launches[i] ? (uint64_t)i + 1 : 0;
    uint64_t in = launch[i] >= 0 ? (uint64_t)launch[i] + 1 : 0;
    pft_write_begin(w, t, e, out, in);
    heap_push(heap, &open, (open_slice){e->start_ns + e->dur_ns, (int64_t)k, (int64_t)i});
  }
  close_until(w, t, heap, &open, 0, 1);
}

int pft_write_trace_to(const prof_trace *t, FILE *f, int compress) {
  size_t n = prof_trace_count(t);
  span *order = malloc((n ? n : 1) * sizeof *order);
  int64_t *launch = malloc((n ? n : 1) * sizeof *launch);
  unsigned char *launches = calloc(n ? n : 1, 1);
  open_slice *heap = malloc((n ? n : 1) * sizeof *heap);
  pft_writer w;
  int err = pft_writer_init(&w, f, compress);
  if (!err && (!order || !launch || !launches || !heap || prof_link_launches(t, n, launch)))
    err = ENOMEM;
  if (!err) {
    for (size_t i = 0; i < n; i++) {
      const prof_event *e = prof_trace_at(t, i);
      order[i] = (span){e->start_ns, e->start_ns + e->dur_ns, e->cat != PROF_CAT_USER_ANNOTATION,
                        (int64_t)i};
      if (launch[i] >= 0) launches[launch[i]] = 1;
    }
    if (n > 1) qsort(order, n, sizeof *order, cmp_span);
    w.t = t;
    w.offset = prof_trace_epoch_offset(t);
    pft_write_header(&w, t, chrome_base_epoch(t));
    pft_describe_own_process(&w);
    write_events(&w, t, order, n, launch, launches, heap);
    err = pft_writer_finish(&w);
  }
  pft_writer_free(&w);
  free(order);
  free(launch);
  free(launches);
  free(heap);
  return err;
}
