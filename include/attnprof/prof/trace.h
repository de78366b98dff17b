/* attnprof profiler: the trace model. Events (prof_event) of categories and
 * kinds as Kineto names them, the devices they ran on, in one prof_trace
 * that collectors fill, readers make and analyses and writers take. See
 * attnprof/prof.h for the error convention. */
#ifndef ATTNPROF_PROF_TRACE_H
#define ATTNPROF_PROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/attn.h"
#include "attnprof/clock.h"

/* Exported from the library (built with hidden visibility). */
#ifndef PROF_API
#define PROF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Categories, named as Kineto names them in the trace ("cat"). */
#define PROF_CAT_MAP(X)                         \
  X(CPU_OP, "cpu_op")                           \
  X(USER_ANNOTATION, "user_annotation")         \
  X(GPU_USER_ANNOTATION, "gpu_user_annotation") \
  X(CUDA_RUNTIME, "cuda_runtime")               \
  X(CUDA_DRIVER, "cuda_driver")                 \
  X(KERNEL, "kernel")                           \
  X(GPU_MEMCPY, "gpu_memcpy")                   \
  X(GPU_MEMSET, "gpu_memset")                   \
  X(CUDA_SYNC, "cuda_sync")                     \
  X(OTHER, "other")

typedef enum {
#define PROF_CAT_ENUM(name, str) PROF_CAT_##name,
  PROF_CAT_MAP(PROF_CAT_ENUM)
#undef PROF_CAT_ENUM
      PROF_CAT_COUNT
} prof_cat;

PROF_API const char *prof_cat_name(prof_cat c);
PROF_API prof_cat prof_cat_from_name(const char *name); /* unknown -> PROF_CAT_OTHER */

/* What one op or GPU activity is, for "ops per forward by kind". GPU
 * activities are KERNEL, MEMCPY or MEMSET; CPU ops carry the rest. */
#define PROF_KIND_MAP(X)        \
  X(KERNEL, "kernel")           \
  X(MEMCPY, "memcpy")           \
  X(MEMSET, "memset")           \
  X(GEMM, "gemm")               \
  X(ELEMENTWISE, "elementwise") \
  X(COPY, "copy")               \
  X(SOFTMAX, "softmax")         \
  X(CAST, "cast")               \
  X(FUSED, "fused")             \
  X(COMM, "comm")               \
  X(OTHER, "other")

typedef enum {
#define PROF_KIND_ENUM(name, str) PROF_KIND_##name,
  PROF_KIND_MAP(PROF_KIND_ENUM)
#undef PROF_KIND_ENUM
      PROF_KIND_COUNT
} prof_kind;

PROF_API const char *prof_kind_name(prof_kind k);
/* Accepts the names above; INVALID_ARGUMENT for another. */
PROF_API attn_status prof_kind_from_name(const char *name, prof_kind *out);

/* Memcpy kinds as CUPTI numbers them (CUpti_ActivityMemcpyKind). */
typedef enum {
  PROF_MEMCPY_UNKNOWN = 0,
  PROF_MEMCPY_HTOD = 1,
  PROF_MEMCPY_DTOH = 2,
  PROF_MEMCPY_DTOD = 8,
  PROF_MEMCPY_HTOH = 9,
  PROF_MEMCPY_PTOP = 10
} prof_memcpy_kind;

typedef struct {
  int32_t grid[3], block[3], cluster[3]; /* cluster {0,0,0} = none */
  int32_t registers_per_thread;
  int32_t static_shared_memory, dynamic_shared_memory;
  int32_t shared_memory_executed;    /* carveout the record reports; 0 = unknown */
  int32_t shared_memory_limit_optin; /* 1 when the kernel opted in past 48 KiB */
  double occupancy_pct_in_file;      /* "est. achieved occupancy %" read; -1 = none */
  int32_t max_active_clusters;       /* CUPTI's count over the GPU; 0 = unknown */
  uint32_t graph_id;                 /* the CUDA graph it ran in (CUPTI's graphId); 0 = a
                                        launch of its own */
} prof_footprint;

/* A measured backend's place on the roofline, carried by the user annotation
 * that groups its forwards (attnprof run/compare): the median time of one
 * forward and the two roofs it is set against (0 = unknown). That event's
 * bytes and flops are then those of one forward. time_us 0: none. */
typedef struct {
  double time_us, copy_gbps, peak_tflops;
} prof_roof;

/* One event. Times are nanoseconds on one clock shared by every collector
 * (attn_clock_ns, attnprof/clock.h). Strings are owned by the trace (prof_trace_intern). */
typedef struct {
  prof_cat cat;
  prof_kind kind; /* meaningful for CPU_OP, KERNEL, GPU_MEMCPY, GPU_MEMSET */
  const char *name;
  int64_t start_ns, dur_ns;
  int64_t pid, tid;    /* CPU: process and thread; GPU: device and stream */
  int64_t correlation; /* launch call <-> GPU activity; 0 = none */
  int64_t external_id; /* 0 = none */
  int64_t bytes;       /* bytes moved where known, else 0 */
  double flops;        /* floating-point operations where known, else 0 */
  int32_t device;      /* GPU events: device ordinal; -1 otherwise */
  int32_t stream;
  int32_t cbid;        /* API events: CUPTI callback id; -1 unknown */
  int32_t memcpy_kind; /* prof_memcpy_kind for GPU_MEMCPY */
  prof_footprint fp;   /* KERNEL only */
  prof_roof roof;      /* USER_ANNOTATION only */
} prof_event;

/* An event with every field at its "unknown" value. */
PROF_API prof_event prof_event_init(prof_cat cat, const char *name);

/* Limits of one device, for occupancy and for the trace's deviceProperties. */
typedef struct {
  int id;
  char name[128];
  int compute_major, compute_minor;
  int num_sms;
  int max_threads_per_block, max_threads_per_sm, max_blocks_per_sm;
  int regs_per_block, regs_per_sm, warp_size;
  int shared_memory_per_block, shared_memory_per_block_optin;
  int shared_memory_per_sm, reserved_shared_memory_per_block;
  int64_t total_global_mem;
} prof_device;

typedef struct prof_trace prof_trace;

/* A new empty trace in *out (OUT_OF_MEMORY: *out NULL). */
PROF_API attn_status prof_trace_create(prof_trace **out);
PROF_API void prof_trace_destroy(prof_trace *t);
/* Copies the string into the trace's pool, the copy into *out; the same text
 * gives the same pointer (NULL gives NULL). */
PROF_API attn_status prof_trace_intern(prof_trace *t, const char *s, const char **out);
/* Appends a copy of ev (name interned); its index goes to *index (may be
 * NULL). OUT_OF_MEMORY: the event is counted as dropped. Thread-safe. */
PROF_API attn_status prof_trace_append(prof_trace *t, const prof_event *ev, int64_t *index);
PROF_API size_t prof_trace_count(const prof_trace *t);
/* Pointer stays valid until the trace is destroyed. */
PROF_API const prof_event *prof_trace_at(const prof_trace *t, size_t i);
PROF_API attn_status prof_trace_add_device(prof_trace *t, const prof_device *d);
PROF_API size_t prof_trace_device_count(const prof_trace *t);
PROF_API const prof_device *prof_trace_device(const prof_trace *t, size_t i);
/* Counts of events a collector lost (CUPTI dropped records), reported, never hidden. */
PROF_API void prof_trace_add_dropped(prof_trace *t, int64_t n);
PROF_API int64_t prof_trace_dropped(const prof_trace *t);
/* Process id and name written as trace metadata. */
PROF_API attn_status prof_trace_set_process(prof_trace *t, int64_t pid, const char *name);
PROF_API int64_t prof_trace_process_id(const prof_trace *t);       /* 0 = not set */
PROF_API const char *prof_trace_process_name(const prof_trace *t); /* NULL = not set */
/* Unix-epoch ns minus the trace's clock (prof_start sets it from
 * CLOCK_REALTIME - CLOCK_MONOTONIC), so writers can give wall-clock times.
 * 0 (the default) means event times are epoch ns already (a trace read from disk). */
PROF_API void prof_trace_set_epoch_offset(prof_trace *t, int64_t epoch_minus_clock_ns);
PROF_API int64_t prof_trace_epoch_offset(const prof_trace *t);

#ifdef __cplusplus
}
#endif
#endif
