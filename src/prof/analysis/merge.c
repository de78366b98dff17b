/* Traces of several processes (torchrun's ranks) on one timeline
 * (prof_merge). Each input keeps its lanes: host pids and GPU device ids that
 * an earlier input already used are moved to free ones, and correlation ids
 * get the input's number in their high bits, so no launch links to another
 * process's work. Clocks: ranks of one all-reduce finish its NCCL kernel
 * together (the collective cannot end on one rank before the last rank's
 * data arrived), so the k-th NCCL kernel's end on each rank marks one
 * instant; an input's offset is the median, over the collectives both have,
 * of (input 0's end - its end). Without collectives an input keeps its
 * clock, and says why; so does one whose collectives do not pair up with
 * input 0's (after that offset their ends still differ by a median of more
 * than MERGE_PAIR_NS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/nest.h"
#include "prof/model/map.h"

/* The ends of one collective on two ranks differ by the last transfer's
 * latency plus the error of CUPTI's GPU-to-host clock conversion: a few us
 * over NVLink, tens across a network. A median residual past 1 ms means the
 * k-th collectives are not the same all-reduce (traces of different runs,
 * or a rank that missed the first collectives), and the offset would be
 * wrong. */
#define MERGE_PAIR_NS 1000000

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Ends of t's NCCL kernels in start order (malloc'd; *n of them), or NULL. */
static int64_t *collective_ends(const prof_trace *t, size_t *n) {
  size_t cap = 0;
  int64_t *starts = NULL, *ends = NULL;
  *n = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_KERNEL || !prof_is_comm_kernel(e->name)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      int64_t *s2 = realloc(starts, 2 * cap * sizeof *s2);
      if (!s2) return free(starts), *n = 0, NULL;
      starts = s2;
    }
    starts[2 * *n] = e->start_ns, starts[2 * *n + 1] = e->start_ns + e->dur_ns;
    (*n)++;
  }
  /* pairs (start, end) sorted by start: a trace's events need not be in time order */
  if (*n) qsort(starts, *n, 2 * sizeof *starts, cmp_i64);
  ends = starts;
  for (size_t i = 0; i < *n; i++) ends[i] = starts[2 * i + 1];
  return ends;
}

/* The offset that puts input r's collective ends on input 0's. */
static void align(const int64_t *ref, size_t n_ref, const prof_trace *t, prof_merge_input *info) {
  size_t n;
  int64_t *ends = collective_ends(t, &n);
  info->collectives = (int64_t)n;
  size_t k = n < n_ref ? n : n_ref;
  if (!k) {
    snprintf(info->why, sizeof info->why, "%s",
             !n ? "no NCCL collectives in this trace: its clock is kept as it is"
                : "no NCCL collectives in the first trace: this clock is kept as it is");
  } else {
    int64_t *d = malloc(k * sizeof *d);
    if (d) {
      for (size_t i = 0; i < k; i++) d[i] = ref[i] - ends[i];
      qsort(d, k, sizeof *d, cmp_i64);
      int64_t offset = d[k / 2];
      for (size_t i = 0; i < k; i++) d[i] = d[i] > offset ? d[i] - offset : offset - d[i];
      qsort(d, k, sizeof *d, cmp_i64);
      info->residual_ns = d[k / 2];
      info->aligned = info->residual_ns <= MERGE_PAIR_NS;
      info->offset_ns = info->aligned ? offset : 0;
      if (!info->aligned)
        snprintf(info->why, sizeof info->why,
                 "the clocks cannot be aligned: its %zu NCCL collectives do not pair up with the "
                 "first trace's (after the best offset, %+.3f us, their ends still differ by a "
                 "median of %.3f us, more than %d): its clock is kept as it is",
                 n, (double)offset / 1e3, (double)info->residual_ns / 1e3, MERGE_PAIR_NS / 1000);
      else if (n != n_ref)
        snprintf(info->why, sizeof info->why,
                 "%zu NCCL collectives here, %zu in the first trace: aligned on the first %zu", n,
                 n_ref, k);
      free(d);
    }
  }
  free(ends);
}

/* A free id for `id` among `used` (a map of ids taken): itself, or past the
 * largest. */
static int64_t fresh(prof_map *used, int64_t id, int64_t *largest, int64_t step) {
  if (prof_map_get(used, (uint64_t)id, 0) < 0) return id;
  return *largest + step;
}

typedef struct {
  prof_map pid_of, dev_of; /* this input's (old id) -> new id */
} remap;

static int64_t map_id(prof_map *mine, prof_map *used, int64_t id, int64_t *largest, int64_t step) {
  int64_t v = prof_map_get(mine, (uint64_t)id, 0);
  if (v >= 0) return v - 1; /* stored + 1 so that id -1 fits */
  int64_t n = fresh(used, id, largest, step);
  if (n > *largest) *largest = n;
  prof_map_put(mine, (uint64_t)id, 0, n + 1);
  prof_map_put(used, (uint64_t)n, 0, 1);
  return n;
}

static int add_input(prof_trace *out, const prof_trace *t, size_t r, prof_merge_input *info,
                     prof_map *pids, prof_map *devs, int64_t *max_pid, int64_t *max_dev) {
  remap m;
  prof_map_init(&m.pid_of);
  prof_map_init(&m.dev_of);
  for (size_t i = 0; i < prof_trace_device_count(t); i++) {
    prof_device d = *prof_trace_device(t, i);
    d.id = (int)map_id(&m.dev_of, devs, d.id, max_dev, 1);
    prof_trace_add_device(out, &d);
  }
  int rc = 0;
  for (size_t i = 0; i < prof_trace_count(t) && !rc; i++) {
    prof_event e = *prof_trace_at(t, i);
    e.start_ns += info->offset_ns;
    if (e.correlation) e.correlation += (int64_t)(r + 1) << 40;
    if (prof_cat_is_host(e.cat)) {
      e.pid = map_id(&m.pid_of, pids, e.pid, max_pid, 1000000);
      if (!info->pid && prof_cat_is_launch(e.cat)) info->pid = e.pid;
    } else {
      int64_t dev = e.device >= 0 ? e.device : e.pid;
      int64_t nd = map_id(&m.dev_of, devs, dev, max_dev, 1);
      if (e.device >= 0) e.device = (int32_t)nd;
      e.pid = nd;
      if (info->device < 0) info->device = (int)nd;
    }
    rc = prof_trace_append(out, &e, NULL);
  }
  prof_trace_add_dropped(out, prof_trace_dropped(t));
  prof_map_free(&m.pid_of);
  prof_map_free(&m.dev_of);
  return rc;
}

attn_status prof_merge(prof_trace *const *in, size_t n, prof_merge_input *info,
                       prof_trace **merged) {
  prof_trace *out = NULL;
  *merged = NULL;
  prof_trace_create(&out);
  size_t n_ref = 0;
  int64_t *ref = n ? collective_ends(in[0], &n_ref) : NULL;
  prof_map pids, devs;
  prof_map_init(&pids);
  prof_map_init(&devs);
  int64_t max_pid = 0, max_dev = -1;
  int rc = !out;
  for (size_t r = 0; r < n && !rc; r++) {
    memset(&info[r], 0, sizeof info[r]);
    info[r].device = -1;
    if (r == 0) {
      info[r].collectives = (int64_t)n_ref, info[r].aligned = n_ref > 0;
      if (!n_ref)
        snprintf(info[r].why, sizeof info[r].why, "no NCCL collectives: the reference clock");
    } else {
      align(ref, n_ref, in[r], &info[r]);
    }
    rc = add_input(out, in[r], r, &info[r], &pids, &devs, &max_pid, &max_dev);
  }
  free(ref);
  prof_map_free(&pids);
  prof_map_free(&devs);
  if (rc) {
    prof_trace_destroy(out);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to merge %zu traces", n);
  }
  *merged = out;
  return ATTN_STATUS_OK;
}
