/* One result derived from a trace's events that the trace keeps for every
 * analysis run on it (the nesting: prof_nest_acquire in nest.h). Events are
 * never changed once appended, so what was derived from the first n events
 * stays true of them. The trace only holds the result and calls drop on it
 * when destroyed; whoever fills the slot guards access to it. */
#ifndef ATTNPROF_SRC_PROF_MODEL_TRACE_CACHE_H
#define ATTNPROF_SRC_PROF_MODEL_TRACE_CACHE_H

#include "attnprof/prof.h"

typedef struct {
  void *p;
  void (*drop)(void *p);
} prof_trace_cache;

prof_trace_cache *prof_trace_cache_of(const prof_trace *t);

#endif
