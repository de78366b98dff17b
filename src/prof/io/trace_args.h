/* The args of one event, as every trace writer gives them: Kineto's keys for
 * its category (kineto_keys.h) plus ours, computed once here and handed to a
 * sink that spells them in its format (JSON object, Perfetto debug
 * annotations), so the formats cannot drift apart. */
#ifndef ATTNPROF_SRC_PROF_TRACE_ARGS_H
#define ATTNPROF_SRC_PROF_TRACE_ARGS_H

#include <stdint.h>

#include "attnprof/prof.h"

typedef struct trace_args_sink trace_args_sink;
struct trace_args_sink {
  void (*i64)(trace_args_sink *s, const char *key, int64_t v);
  void (*num)(trace_args_sink *s, const char *key, double v);
  void (*str)(trace_args_sink *s, const char *key, const char *v);
  void (*dim3)(trace_args_sink *s, const char *key, const int32_t v[3]);
  /* Kineto main's "occupancy": {activeBlocksPerMultiprocessor, limitingFactors}. */
  void (*occupancy)(trace_args_sink *s, const char *key, double active_blocks,
                    const char *limiting);
  /* Optional: takes a kernel's footprint args whole (the JSON writer keeps
   * their text per footprint and device); it calls trace_args_footprint for
   * what it has not seen. NULL: they come through the calls above. */
  void (*footprint)(trace_args_sink *s, const prof_footprint *fp, const prof_device *d);
};

/* The args of e (an event of t; t's devices give the occupancy figures). */
void trace_args_emit(const prof_trace *t, const prof_event *e, trace_args_sink *s);
/* A kernel's footprint args, which depend on fp and its device d (NULL:
 * unknown) alone: registers, shared memory, per-SM work, grid, block, ours,
 * occupancy. */
void trace_args_footprint(const prof_footprint *fp, const prof_device *d, trace_args_sink *s);

#endif
