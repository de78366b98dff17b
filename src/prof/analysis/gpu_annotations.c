/* gpu_user_annotation spans (prof_add_gpu_annotations): what torch.profiler
 * draws on each GPU stream for a record_function range: one span per range
 * call and stream, from the first to the last GPU activity the range
 * launched there (its innermost range, by the launch's correlation id), one
 * ns wider on each side as Kineto makes it. Perfetto then shows the range on
 * the GPU lanes above its kernels. */
#include <stdlib.h>

#include "core/error.h"
#include "prof/model/map.h"
#include "prof/analysis/nest.h"
#include "prof/analysis/status.h"

typedef struct {
  int64_t range, start, end;
  int32_t device, stream;
} span;

static int has_annotations(const prof_trace *t) {
  for (size_t i = 0; i < prof_trace_count(t); i++)
    if (prof_trace_at(t, i)->cat == PROF_CAT_GPU_USER_ANNOTATION) return 1;
  return 0;
}

/* One span per (range call, device, stream) over the attributed activities. */
static int64_t collect(const prof_trace *t, const int64_t *range, size_t n, span **out) {
  prof_map where;
  prof_map_init(&where);
  span *v = NULL;
  size_t m = 0, cap = 0;
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (!prof_cat_is_gpu_activity(e->cat) || range[i] < 0) continue;
    uint64_t lane = (uint64_t)(uint32_t)e->device << 32 | (uint32_t)e->stream;
    int64_t k = prof_map_put(&where, (uint64_t)range[i], lane, (int64_t)m);
    if (k < 0 || (k == (int64_t)m && m == cap &&
                  !(v = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *v)))) {
      prof_map_free(&where);
      return -1;
    }
    int64_t end = e->start_ns + e->dur_ns;
    if (k == (int64_t)m) {
      v[m++] = (span){range[i], e->start_ns, end, e->device, e->stream};
    } else {
      if (e->start_ns < v[k].start) v[k].start = e->start_ns;
      if (end > v[k].end) v[k].end = end;
    }
  }
  prof_map_free(&where);
  *out = v;
  return (int64_t)m;
}

static int64_t add_gpu_annotations(prof_trace *t);

attn_status prof_add_gpu_annotations(prof_trace *t, int64_t *added) {
  int64_t n = 0;
  attn_status st = prof_count_status(add_gpu_annotations(t), &n, "GPU annotations");
  if (!st && added) *added = n;
  return st;
}

static int64_t add_gpu_annotations(prof_trace *t) {
  if (has_annotations(t)) return 0; /* torch.profiler's own, or added already */
  size_t n = prof_trace_count(t);
  int64_t *range = NULL;
  span *v = NULL;
  int64_t m = prof_attribute(t, &range) ? -1 : collect(t, range, n, &v);
  free(range);
  if (m < 0) {
    free(v);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for the GPU annotation spans"), -1;
  }
  for (int64_t k = 0; k < m; k++) {
    prof_event e =
        prof_event_init(PROF_CAT_GPU_USER_ANNOTATION, prof_trace_at(t, (size_t)v[k].range)->name);
    e.start_ns = v[k].start - 1;
    e.dur_ns = v[k].end - v[k].start + 2;
    e.device = v[k].device;
    e.stream = v[k].stream;
    e.pid = v[k].device;
    e.tid = v[k].stream;
    prof_trace_append(t, &e, NULL);
  }
  free(v);
  return m;
}
