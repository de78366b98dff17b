/* The collector interface. As in Kineto, each source of events (the CPU
 * clock, CUPTI) sits behind the same few entry points, and the session
 * (session.c) starts, flushes and stops whichever are compiled in and asked
 * for. A GPU collector plugs in by adding one prof_collector to the table in
 * session.c; analyses and writers never see collectors, only the trace. */
#ifndef ATTNPROF_SRC_PROF_COLLECTOR_H
#define ATTNPROF_SRC_PROF_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/prof.h"
#include "core/clock.h"

typedef struct {
  const char *name; /* "cpu", "cupti": listed by attnprof --version */
  unsigned serves;  /* the PROF_COLLECT_* bits it records */
  /* Whether it can run here (a GPU present, a library loadable); NULL means
   * always. On failure writes one line into why. */
  attn_status (*available)(char *why, size_t why_len);
  /* Begins recording into t for the PROF_COLLECT_* bits in `collect`, as
   * opts (checked, complete) say; the session holds its lock, so no other
   * start or stop runs meanwhile. */
  attn_status (*start)(prof_trace *t, unsigned collect, const prof_session_opts *opts);
  /* Moves everything recorded so far into t (buffered GPU records). */
  void (*flush)(prof_trace *t);
  /* Stops; after it returns no more events reach t. */
  void (*stop)(prof_trace *t);
} prof_collector;

extern const prof_collector prof_collector_cpu;

#endif
