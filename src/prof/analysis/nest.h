/* How the events of a trace hang together, computed once for every analysis:
 * which host event contains which on the same thread, the innermost user
 * range of each event, and the launch call behind each GPU activity. */
#ifndef ATTNPROF_SRC_PROF_NEST_H
#define ATTNPROF_SRC_PROF_NEST_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/prof.h"

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
  return c == PROF_CAT_KERNEL ? PROF_KIND_KERNEL
         : c == PROF_CAT_GPU_MEMCPY ? PROF_KIND_MEMCPY
                                    : PROF_KIND_MEMSET;
}

typedef struct {
  size_t n;        /* events in the trace when built */
  int64_t *parent; /* host event: innermost host event containing it on its thread, or -1 */
  int64_t *range;  /* innermost user_annotation containing it, itself excluded (a GPU
                      activity: that of its launch call), or -1 */
  int64_t *launch; /* GPU activity: its launch API event, or -1 */
  int64_t *order;  /* the host events, each after every event that contains it */
  size_t n_order;
} prof_nest;

/* The launch API event of each GPU activity among the first n events
 * (matched by correlation id; the first such event when several share one)
 * into launch[n], -1 elsewhere. 0, or -1 (out of memory). O(n log n). */
int prof_link_launches(const prof_trace *t, size_t n, int64_t *launch);

/* 0, or -1 (out of memory, attn_last_error set). O(n log n). */
int prof_nest_build(const prof_trace *t, prof_nest *out);
void prof_nest_free(prof_nest *nest);

#endif
