/* attnprof profiler: recording. A session (one at a time) runs the CPU
 * collector and, when asked, the GPU one (CUPTI) into a caller's trace;
 * user ranges and CPU ops are recorded while it runs. */
#ifndef ATTNPROF_PROF_SESSION_H
#define ATTNPROF_PROF_SESSION_H

#include "attnprof/prof/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PROF_COLLECT_CPU = 1, PROF_COLLECT_GPU = 2 };

/* Names of the collectors compiled in ("cpu", "cupti"); returns the count. */
PROF_API size_t prof_collector_list(const char **names, size_t max);

/* Where synchronization records come from (the GPU collector). */
typedef enum {
  PROF_SYNC_FROM_CALLBACKS, /* the sync calls' callbacks: costs nothing per launch */
  PROF_SYNC_FROM_KIND       /* CUPTI's SYNCHRONIZATION activity kind (+0.15-0.5 us a launch) */
} prof_sync_source;

/* How a session records. Start from prof_session_opts_default() (it sets
 * size); fields left 0 take the defaults. Only the GPU collector (CUPTI)
 * reads them. */
typedef struct {
  size_t size; /* sizeof(prof_session_opts) */
  /* 1: every CUDA runtime and driver call (but four that PyTorch makes per
   * launch to no purpose); 0: the launch, copy, set and sync calls that GPU
   * work is attributed through, which cost far less to record. */
  int all_api;
  prof_sync_source sync;
  /* CUPTI's activity buffers: KiB each (16 to 1048576; 0: 2048; fixed once a
   * session has allocated them) and how many at most (1 to 65536; 0: 32).
   * When all are in use CUPTI drops records, which the trace counts. */
  size_t buffer_kb, max_buffers;
  /* MiB of completed buffers kept unconverted until the session stops, so
   * converting does not run beside the traced work (1 to 1048576; 0: none,
   * each buffer is converted as it completes). Past the cap, as without. */
  size_t defer_mb;
} prof_session_opts;

PROF_API prof_session_opts prof_session_opts_default(void);

/* Starts recording into t (which the caller owns) with the PROF_COLLECT_*
 * collectors; opts NULL: the defaults. Only one session at a time.
 * Asking for GPU collection where no GPU collector is usable records CPU
 * events only and says why in attn_last_error(), returning ATTN_STATUS_OK. */
PROF_API attn_status prof_start(prof_trace *t, unsigned collectors, const prof_session_opts *opts);
/* Flushes every collector and stops. */
PROF_API void prof_stop(void);
/* The collectors' one-time start-up, done now: a session started and stopped,
 * nothing kept. Call it before the warm-up of work a later session traces,
 * with the options that session will use. CUPTI's first start in a process
 * slows the next run of a kernel that ran before it (measured: a 53 us
 * kernel ran 60-64 us, once); warm-up after this pays that run instead of
 * the first traced forward. Same errors as prof_start. */
PROF_API attn_status prof_prepare(unsigned collectors, const prof_session_opts *opts);
PROF_API int prof_active(void);
/* PROF_COLLECT_* bits actually recording in the session now running (0 when
 * none): tells a caller whether its PROF_COLLECT_GPU request was honoured. */
PROF_API unsigned prof_collecting(void);

/* User ranges (user_annotation), nested per thread. Recorded when popped (a
 * range still open at prof_stop is not in the trace); the name is copied at
 * the push. Recorded whenever a session runs, GPU-only ones too: GPU work is
 * attributed to them. */
PROF_API void prof_range_push(const char *name);
PROF_API void prof_range_pop(void);

/* One CPU op, recorded as a cpu_op event when a session is active. */
typedef struct {
  const char *name;
  prof_kind kind;
  int64_t start_ns; /* 0 when no session was active at begin */
} prof_op_scope;

/* name must stay valid until prof_op_end (a string literal, typically). */
PROF_API prof_op_scope prof_op_begin(const char *name, prof_kind kind);
PROF_API void prof_op_end(prof_op_scope *op, int64_t bytes, double flops);

#ifdef __cplusplus
}
#endif
#endif
