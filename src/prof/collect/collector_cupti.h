/* The CUPTI collector: GPU activities (kernels with their footprint, memcpy,
 * memset, synchronization), the runtime/driver calls that launched them, and
 * NVTX push/pop ranges, from CUPTI's Activity API, on attn_clock_ns.
 *
 * Two ways to run: inside the library (prof_start with PROF_COLLECT_GPU; the
 * events go into the session's trace) and injected into another program
 * (src/prof/inject/; the driver is initializing when we start, and a sink
 * takes the events chunk by chunk so memory stays bounded). */
#ifndef ATTNPROF_SRC_PROF_COLLECTOR_CUPTI_H
#define ATTNPROF_SRC_PROF_COLLECTOR_CUPTI_H

#include <stdint.h>

#include "prof/collect/collector.h"

extern const prof_collector prof_collector_cupti;

/* Set before prof_start by the injection library: we are called from inside
 * cuInit, so start must not call the driver; devices are read when the
 * program creates its first context. */
void cupti_collector_set_injected(int injected);

/* With a sink, converted events go into a chunk trace of their own, handed to
 * the sink (which then owns and destroys it) once it holds chunk_events
 * events, and at every flush. Without one (the default), into the session's
 * trace. Set before prof_start. */
typedef void (*cupti_sink_fn)(prof_trace *chunk, void *ctx);
void cupti_collector_set_sink(cupti_sink_fn sink, void *ctx, size_t chunk_events);

/* What the collector saw, for the report at the end of a session. */
typedef struct {
  int64_t records;           /* activity records read */
  int64_t events;            /* events produced */
  int64_t buffers;           /* buffers CUPTI completed */
  int64_t buffers_allocated; /* buffers ever allocated (each buffer_bytes) */
  int64_t buffer_bytes;
  int64_t dropped_by_cupti; /* records CUPTI reported dropped */
  int64_t buffers_refused;  /* requests refused: the pool was at its limit */
  int64_t incomplete;       /* records without an end time at the final flush */
  int64_t unmatched_range_ends;
  int64_t open_ranges;  /* NVTX ranges still open when the session stopped */
  int64_t buffers_held; /* of buffers: kept unconverted until the session's end or
                               the cap (prof_session_opts.defer_mb) */
  uint32_t cupti_version;
  int api_all; /* 1: every runtime/driver call recorded */
} cupti_stats;

void cupti_collector_stats(cupti_stats *out);

/* Stops CUPTI for good at process exit: forced flush into whatever target is
 * still set, then cuptiFinalize (CUDA 13.0/13.1's CUPTI can crash at exit
 * without it). Idempotent. */
void cupti_collector_shutdown(void);

#endif
