/* How the events of a trace hang together, computed once for every analysis:
 * which host event contains which on the same thread, the innermost user
 * range of each event, and the launch call behind each GPU activity. */
#ifndef ATTNPROF_SRC_PROF_NEST_H
#define ATTNPROF_SRC_PROF_NEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attnprof/prof.h"
#include "attnprof/prof/ranks.h" /* prof_is_comm_kernel */

/* Events with a process and thread (pid/tid are OS ids); OTHER included, as a
 * trace read from disk has host rows of categories we do not model. */
static inline int prof_cat_is_host(prof_cat c) {
  return c == PROF_CAT_CPU_OP || c == PROF_CAT_USER_ANNOTATION || c == PROF_CAT_CUDA_RUNTIME ||
         c == PROF_CAT_CUDA_DRIVER || c == PROF_CAT_OTHER;
}

/* GPU work that counts as an op: kernels, copies and sets on a stream. */
static inline int prof_cat_is_gpu_activity(prof_cat c) {
  return c == PROF_CAT_KERNEL || c == PROF_CAT_GPU_MEMCPY || c == PROF_CAT_GPU_MEMSET;
}

/* API calls that can launch GPU work (matched by correlation id). */
static inline int prof_cat_is_launch(prof_cat c) {
  return c == PROF_CAT_CUDA_RUNTIME || c == PROF_CAT_CUDA_DRIVER;
}

/* The kind of a GPU activity follows from its category, whoever filled it in. */
static inline prof_kind prof_gpu_kind(prof_cat c) {
  return c == PROF_CAT_KERNEL       ? PROF_KIND_KERNEL
         : c == PROF_CAT_GPU_MEMCPY ? PROF_KIND_MEMCPY
                                    : PROF_KIND_MEMSET;
}

typedef struct {
  size_t n;              /* events in the trace when built */
  prof_link_stats links; /* what the linking and nesting could not settle */
  int64_t *parent;       /* host event: innermost host event containing it on its thread, or -1 */
  int64_t *range;        /* innermost user_annotation open at its start on its thread, itself
                      excluded (a GPU activity: that of its launch call), or -1; for a
                      range, the chain through range[] holds every range open at its start
                      (and, where ranges cross, some closed since: see prof_nest_outer) */
  int64_t *launch;       /* GPU activity: its launch API event, or -1 */
  int64_t *order;        /* the host events, each after every event that contains it */
  size_t n_order;
} prof_nest;

/* The launch API event of each GPU activity among the first n events into
 * launch[n], -1 elsewhere. Matched by correlation id; where launch calls of
 * several processes share the id (traces merged by hand), the process that
 * launched work on the activity's device wins, then the latest call starting
 * before the activity; within one process, the first call (a runtime call and
 * the driver call inside it may share an id). links (may be NULL) counts
 * what stayed unmatched. 0, or -1 (out of memory). O(n log n). */
int prof_link_launches(const prof_trace *t, size_t n, int64_t *launch);
int prof_link_launches_stats(const prof_trace *t, size_t n, int64_t *launch,
                             prof_link_stats *links);

/* GPU work that ran inside a CUDA graph launch: a kernel record's graph id
 * (CUPTI's graphId), or a launch call that replays a graph (cudaGraphLaunch,
 * cuGraphLaunch: their correlation id is every node's). */
static inline int prof_nest_from_graph(const prof_trace *t, const prof_nest *nest, size_t i) {
  const prof_event *e = prof_trace_at(t, i);
  if (e->cat == PROF_CAT_KERNEL && e->fp.graph_id) return 1;
  int64_t l = nest->launch[i];
  const char *api = l >= 0 ? prof_trace_at(t, (size_t)l)->name : NULL;
  return api && strstr(api, "GraphLaunch") != NULL;
}

/* The process an event belongs to: a host event's pid, a GPU activity's
 * launch call's pid (GPU rows carry a device there), -1 when it has no
 * launch call in the trace. */
static inline int64_t prof_nest_process(const prof_trace *t, const prof_nest *nest, size_t i) {
  const prof_event *e = prof_trace_at(t, i);
  if (prof_cat_is_host(e->cat)) return e->pid;
  return nest->launch[i] >= 0 ? prof_trace_at(t, (size_t)nest->launch[i])->pid : -1;
}

/* A range "holds" time ts when it is open then: start <= ts <= end. */
static inline int prof_range_holds(const prof_event *r, int64_t ts) {
  return r->start_ns <= ts && ts <= r->start_ns + r->dur_ns;
}

/* The time an event is attributed by: a GPU activity's launch call's start,
 * any other event's own start (the rule of the reference, tests/reader). */
static inline int64_t prof_nest_ref_ns(const prof_trace *t, const prof_nest *nest, size_t i) {
  int64_t l = nest->launch[i];
  return prof_trace_at(t, l >= 0 ? (size_t)l : i)->start_ns;
}

/* The ranges around event i, innermost outwards: start with r = nest->range[i]
 * and step with prof_nest_outer(t, nest, r, prof_nest_ref_ns(t, nest, i)).
 * Ranges that overlap without nesting leave, in the chain, ranges that closed
 * before ts; those are stepped over. */
static inline int64_t prof_nest_outer(const prof_trace *t, const prof_nest *nest, int64_t r,
                                      int64_t ts) {
  for (r = nest->range[r]; r >= 0; r = nest->range[r])
    if (prof_range_holds(prof_trace_at(t, (size_t)r), ts)) return r;
  return -1;
}

/* 0, or -1 (out of memory, attn_last_error set). O(n log n). */
int prof_nest_build(const prof_trace *t, prof_nest *out);
void prof_nest_free(prof_nest *nest);

/* The nesting of t's events as they are now, built once and kept by the trace
 * for every analysis after (a summary runs three over one nesting); NULL when
 * out of memory (attn_last_error set). Hand it back with prof_nest_release;
 * it stays valid until then, even if a live trace grows meanwhile. */
const prof_nest *prof_nest_acquire(const prof_trace *t);
void prof_nest_release(const prof_nest *nest);

#endif
