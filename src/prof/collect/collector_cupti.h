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
  int64_t open_ranges;        /* NVTX ranges still open when the session stopped */
  int64_t buffers_on_starter; /* of buffers: completed on the thread that started
                                 the session (injected: the one that called cuInit) */
  int64_t buffers_held;       /* of buffers: kept unconverted until the session's end or
                               the cap (prof_session_opts.defer_mb) */
  int64_t callbacks[3];       /* bench only (cupti_collector_bench_count_calls): runtime,
                               driver, driver inside a recorded runtime call */
  uint32_t cupti_version;
  int api_all; /* 1: every runtime/driver call recorded */
} cupti_stats;

void cupti_collector_stats(cupti_stats *out);

/* Bench only (bench/trace_cost.py through the injection library): the parts
 * of the collector switched on one by one, to measure what each costs.
 * Returns the activity records read so far, or -1 without a session. */
enum {
  CUPTI_BENCH_KERNEL = 1,    /* CONCURRENT_KERNEL */
  CUPTI_BENCH_GPU = 2,       /* MEMCPY, MEMSET, SYNCHRONIZATION, MARKER */
  CUPTI_BENCH_RUNTIME = 4,   /* the RUNTIME kind, filtered by id */
  CUPTI_BENCH_DRIVER = 8,    /* the DRIVER kind, filtered by id */
  CUPTI_BENCH_SELECT = 16,   /* the wanted ids enabled alone, no kinds */
  CUPTI_BENCH_CALLBACK = 32, /* the wanted ids through the callback API */
  CUPTI_BENCH_DISCARD = 64,  /* records counted, not converted nor written */
  CUPTI_BENCH_MEMCPY = 128,  /* the four kinds of CUPTI_BENCH_GPU one by one */
  CUPTI_BENCH_MEMSET = 256,
  CUPTI_BENCH_SYNC = 512,
  CUPTI_BENCH_MARKER = 1024,
  CUPTI_BENCH_SYNC_CALLBACK = 2048, /* sync records from the sync calls' callbacks */
  /* CALLBACK's runtime ids alone: no driver callbacks, so none inside a
   * runtime launch either (and no direct driver launch recorded) */
  CUPTI_BENCH_CALLBACK_RT = 4096
};
int64_t cupti_collector_bench_set(unsigned mask);

/* Bench only, before prof_start: the session starts with the parts in mask
 * instead of the default set (nothing is switched on and off again: the cost
 * of a process traced that way from its start). mask < 0: the default. */
void cupti_collector_bench_start(int mask);

/* Bench only, before prof_start: how launch calls are recorded, "kinds",
 * "select" or "callback" (the default; bench/TRACE_COST.md compares them).
 * -1 for another name (the default is kept). */
int cupti_collector_bench_api_mode(const char *mode);

/* Bench only: from now on the collector counts the runtime and driver
 * callbacks it gets (cupti_stats.callbacks), enter and exit each. */
void cupti_collector_bench_count_calls(void);

/* Stops CUPTI for good at process exit: forced flush into whatever target is
 * still set, then cuptiFinalize (CUDA 13.0/13.1's CUPTI can crash at exit
 * without it). Idempotent. */
void cupti_collector_shutdown(void);

#endif
