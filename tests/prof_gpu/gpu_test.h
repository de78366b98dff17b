/* Helpers of the GPU tests: the skip rule (exit 77 with the reason when no
 * GPU or no CUPTI is usable, so ctest reports "Skipped", never a pass) and
 * lookups in a trace. */
#ifndef ATTNPROF_TESTS_PROF_GPU_GPU_TEST_H
#define ATTNPROF_TESTS_PROF_GPU_GPU_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"

enum { GPU_TEST_SKIP = 77 };

/* For tests without cmocka: says which check failed and returns 1. */
#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

/* Starts a GPU session into t with opts (NULL: the defaults), or exits 77
 * saying why it cannot. */
static inline void gpu_test_start_opts_or_skip(prof_trace *t, const prof_session_opts *opts) {
  if (prof_start(t, PROF_COLLECT_GPU, opts) != ATTN_STATUS_OK) {
    printf("SKIP: prof_start failed: %s\n", attn_last_error());
    exit(GPU_TEST_SKIP);
  }
  if (!(prof_collecting() & PROF_COLLECT_GPU)) {
    printf("SKIP: no GPU collection here: %s\n", attn_last_error());
    prof_stop();
    exit(GPU_TEST_SKIP);
  }
}

static inline void gpu_test_start_or_skip(prof_trace *t) { gpu_test_start_opts_or_skip(t, NULL); }

/* The first event of category cat whose name contains part, or NULL. */
static inline const prof_event *gpu_test_find(const prof_trace *t, prof_cat cat, const char *part) {
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat == cat && e->name && strstr(e->name, part)) return e;
  }
  return NULL;
}

/* The API event (runtime or driver) with this correlation id, or NULL. */
static inline const prof_event *gpu_test_launch_of(const prof_trace *t, int64_t correlation) {
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if ((e->cat == PROF_CAT_CUDA_RUNTIME || e->cat == PROF_CAT_CUDA_DRIVER) &&
        e->correlation == correlation)
      return e;
  }
  return NULL;
}

static inline size_t gpu_test_count(const prof_trace *t, prof_cat cat, int64_t t0, int64_t t1) {
  size_t n = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    n += e->cat == cat && e->start_ns >= t0 && e->start_ns <= t1;
  }
  return n;
}

#endif
