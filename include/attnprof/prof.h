/* attnprof profiler API: one in-memory event model, collectors that fill it,
 * analyses over it, and writers (Chrome/Kineto trace JSON, tables).
 *
 * Layers (as in Kineto): collectors (CPU clock, CUPTI) -> plain prof_event
 * records in a prof_trace -> analyses (attribution, summaries, expectations)
 * -> writers. Analyses never look at a collector, so a trace read from disk and
 * a live one are treated alike. */
#ifndef ATTNPROF_PROF_H
#define ATTNPROF_PROF_H

#include <stdint.h>
#include <stdio.h>

#include "attnprof/attn.h"

/* Exported from the library (built with hidden visibility). */
#ifndef PROF_API
#define PROF_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- event model ------------------------------------------------------- */

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
#define PROF_KIND_MAP(X)           \
  X(KERNEL, "kernel")              \
  X(MEMCPY, "memcpy")              \
  X(MEMSET, "memset")              \
  X(GEMM, "gemm")                  \
  X(ELEMENTWISE, "elementwise")    \
  X(COPY, "copy")                  \
  X(SOFTMAX, "softmax")            \
  X(CAST, "cast")                  \
  X(FUSED, "fused")                \
  X(COMM, "comm")                  \
  X(OTHER, "other")

typedef enum {
#define PROF_KIND_ENUM(name, str) PROF_KIND_##name,
  PROF_KIND_MAP(PROF_KIND_ENUM)
#undef PROF_KIND_ENUM
  PROF_KIND_COUNT
} prof_kind;

PROF_API const char *prof_kind_name(prof_kind k);
/* Accepts the names above; returns -1 for an unknown name. */
PROF_API int prof_kind_from_name(const char *name);

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
  int32_t shared_memory_executed;   /* carveout the record reports; 0 = unknown */
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
 * (prof_clock_ns). Strings are owned by the trace (prof_trace_intern). */
typedef struct {
  prof_cat cat;
  prof_kind kind;   /* meaningful for CPU_OP, KERNEL, GPU_MEMCPY, GPU_MEMSET */
  const char *name;
  int64_t start_ns, dur_ns;
  int64_t pid, tid; /* CPU: process and thread; GPU: device and stream */
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

PROF_API prof_trace *prof_trace_create(void);
PROF_API void prof_trace_destroy(prof_trace *t);
/* Copies the string into the trace's pool; the same text gives the same pointer. */
PROF_API const char *prof_trace_intern(prof_trace *t, const char *s);
/* Appends a copy of ev (name interned); returns its index or -1 (out of memory).
 * Thread-safe. */
PROF_API int64_t prof_trace_append(prof_trace *t, const prof_event *ev);
PROF_API size_t prof_trace_count(const prof_trace *t);
/* Pointer stays valid until the trace is destroyed. */
PROF_API const prof_event *prof_trace_at(const prof_trace *t, size_t i);
PROF_API void prof_trace_add_device(prof_trace *t, const prof_device *d);
PROF_API size_t prof_trace_device_count(const prof_trace *t);
PROF_API const prof_device *prof_trace_device(const prof_trace *t, size_t i);
/* Counts of events a collector lost (CUPTI dropped records), reported, never hidden. */
PROF_API void prof_trace_add_dropped(prof_trace *t, int64_t n);
PROF_API int64_t prof_trace_dropped(const prof_trace *t);
/* Process id and name written as trace metadata. */
PROF_API void prof_trace_set_process(prof_trace *t, int64_t pid, const char *name);
PROF_API int64_t prof_trace_process_id(const prof_trace *t);      /* 0 = not set */
PROF_API const char *prof_trace_process_name(const prof_trace *t); /* NULL = not set */
/* Unix-epoch ns minus the trace's clock (prof_start sets it from
 * CLOCK_REALTIME - CLOCK_MONOTONIC), so writers can give wall-clock times.
 * 0 (the default) means event times are epoch ns already (a trace read from disk). */
PROF_API void prof_trace_set_epoch_offset(prof_trace *t, int64_t epoch_minus_clock_ns);
PROF_API int64_t prof_trace_epoch_offset(const prof_trace *t);

/* ---- collection -------------------------------------------------------- */

/* The one clock: CLOCK_MONOTONIC in ns. GPU collectors convert to it. */
PROF_API int64_t prof_clock_ns(void);

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

/* ---- analyses ---------------------------------------------------------- */

/* Attribution: for each event, the index of the innermost user range on the
 * launching thread that contains it (GPU activities through the correlation id
 * of their launch call, wherever the activity itself falls in time), or -1. A
 * range's own entry is the range around it. Returns a malloc'd array of
 * prof_trace_count entries (NULL on out of memory). O(n log n). */
PROF_API int64_t *prof_attribute(const prof_trace *t);

/* What linking GPU work to its launch calls, and ranges to each other, could
 * not settle: reported, never hidden. */
typedef struct {
  int64_t gpu_without_launch;   /* GPU activities no launch call's correlation id matches */
  int64_t launches_without_gpu; /* launch calls (names with Launch, Memcpy or Memset, bar
                                   cudaLaunchHostFunc) whose id no GPU activity carries */
  int64_t ambiguous;            /* GPU activities whose id calls of several processes
                                   share; settled by device, then time (prof_link_launches) */
  int64_t crossing_ranges;      /* user ranges starting inside another range on their thread
                                   and ending after it; work is attributed by the start of
                                   its launch call, to every range open then */
} prof_link_stats;

enum { PROF_MAX_LAUNCH_APIS = 8 };

typedef struct {
  const char *name;
  int64_t calls;
  double per_call_kind[PROF_KIND_COUNT]; /* events of each kind per call */
  double per_call_total;                 /* all ops / GPU events per call */
  double device_us_per_call;             /* sum of op/GPU durations */
  double host_us_per_call;               /* range duration */
  int n_launch_apis;
  const char *launch_api[PROF_MAX_LAUNCH_APIS];
  double launch_api_per_call[PROF_MAX_LAUNCH_APIS];
  int gpu; /* 1: the ops counted are GPU activities; 0: CPU ops */
  double graph_per_call; /* of per_call_total, GPU events that ran inside CUDA graph
                            launches (counted as eager ones are, and said apart) */
} prof_range_summary;

/* One row per distinct user-range name, in order of first appearance (earliest
 * start). Returns the number of rows (malloc'd array in *out), or -1 on error.
 * Strings point into t.
 *
 * What a range counts:
 * - An op counts for every range that contains it on its thread: its innermost
 *   range and that range's enclosing ranges. So "attn_fwd" inside
 *   "ProfilerStep#N" gets the forward's ops and the step gets them too, and a
 *   backend that opens its own sub-ranges does not take ops away from the
 *   forward. A range nested in a range of the same name is part of that call:
 *   one call, each op counted once (so calls x ops per call is what the
 *   kernel table of that range lists; torch's key averages count both).
 * - Ranges that overlap without nesting: an op counts for every range open
 *   at its start (a GPU activity: at its launch call's start), as the
 *   reference does; prof_link_stats.crossing_ranges says how many crossed.
 * - The ops of a range name are its GPU activities (kernel, memcpy, memset,
 *   attributed through the launch call's correlation id). A range name whose
 *   calls launched no GPU work counts its CPU ops instead: the outermost cpu_op
 *   events inside it (an op inside another op is part of that op), so CPU
 *   backends and GPU backends fill the same table.
 * - device_us is the summed duration of the ops counted; host_us the range's
 *   own duration; launch APIs name the call behind each GPU activity
 *   (PROF_MAX_LAUNCH_APIS distinct names; the rest are summed under "other"). */
PROF_API int64_t prof_summarize_ranges(const prof_trace *t, prof_range_summary **out);
/* The same with choices: PROF_SUMMARY_PER_STEP keeps one row per
 * "ProfilerStep#<n>" (prof_summarize_ranges does); without it they are one
 * row "ProfilerStep#N" with a call per step, as diff counts them. links (may
 * be NULL) receives what the linking could not settle. */
enum { PROF_SUMMARY_PER_STEP = 1 };
PROF_API int64_t prof_summarize_ranges_ex(const prof_trace *t, unsigned flags,
                                          prof_range_summary **out, prof_link_stats *links);
/* "ProfilerStep#" followed by digits only: a step torch.profiler numbered. */
PROF_API int prof_is_step_name(const char *name);
/* The row named `name`, or NULL. */
PROF_API const prof_range_summary *prof_range_summary_find(const prof_range_summary *rows, int64_t n,
                                                  const char *name);

typedef struct {
  const char *name;
  prof_cat cat;
  int64_t calls;
  double host_us_total, host_us_self_total; /* CPU-side events */
  double device_us_total;                   /* GPU time of the event and its launches */
} prof_key_average;

/* Key averages (as torch.profiler's table): one row per (cat, name) of CPU ops,
 * annotations, API calls and GPU activities, sorted by device total, then host
 * total (then cat and name, so the order is stable). Self time is the event's
 * duration minus its direct children's on the same thread. A host event's
 * device time is that of the GPU activities launched inside it (inclusive). */
PROF_API int64_t prof_key_averages(const prof_trace *t, prof_key_average **out);

/* Adds torch.profiler's gpu_user_annotation spans: for each user-range call
 * and each (device, stream) its GPU activities ran on, one span from the
 * first to the last of them (the innermost range of each activity's launch).
 * A trace that has such spans already is left alone. Returns the number
 * added, or -1 (out of memory). */
PROF_API int64_t prof_add_gpu_annotations(prof_trace *t);

/* ---- many processes (src/prof/analysis/merge.c) ------------------------ */

/* What prof_merge did with one input. */
typedef struct {
  int64_t offset_ns;   /* added to each of its times (clock alignment) */
  int64_t collectives; /* its NCCL kernels (prof_kind COMM) */
  int aligned;         /* 1: on the ends of NCCL collectives (input 0: it has some) */
  int64_t pid;         /* its host process in the merged trace (that of its first
                          launch call), 0 = none */
  int device;          /* its first GPU's id in the merged trace, -1 = none */
  int64_t residual_ns; /* median |input 0's end - its end - offset| over the paired
                          collectives: how well the ends agree (0 = none paired) */
  char why[320];       /* why it was not aligned, or how partly; "" when fully */
} prof_merge_input;

/* Traces of several processes on one timeline, each input in lanes of its
 * own: host pids and device ids already taken move to free ones, correlation
 * ids get the input's number in their high bits. Input r's clock moves by
 * the median offset between its NCCL collectives' ends and input 0's (the
 * k-th with the k-th); without collectives, or when they do not pair up
 * (a median residual past 1 ms), it stays, with the reason in info[r].why. info has n entries. A new trace, or NULL (out of memory). */
PROF_API prof_trace *prof_merge(prof_trace *const *in, size_t n, prof_merge_input *info);

/* ---- occupancy (src/prof/analysis/occupancy.c) ---------------------------------- */

/* Which limit keeps more blocks off an SM (several bits when tied). */
enum {
  PROF_OCC_LIMIT_WARPS = 1,
  PROF_OCC_LIMIT_REGS = 2,
  PROF_OCC_LIMIT_SMEM = 4,
  PROF_OCC_LIMIT_BLOCKS = 8,
  PROF_OCC_LIMIT_CLUSTER = 16
};

typedef struct {
  int limit_warps, limit_regs, limit_smem, limit_blocks; /* blocks/SM each allows */
  double limit_cluster;   /* blocks/SM the cluster residency allows; -1 = no cluster */
  double active_blocks;   /* resident blocks per SM: the least limit (fractional
                             only under the cluster limit) */
  double theoretical_pct; /* active warps / max warps per SM */
  double achieved_est_pct; /* theoretical x min(1, grid blocks / (SMs x active)) */
  unsigned limiting;      /* PROF_OCC_LIMIT_* bits */
  int smem_per_block;     /* allocated: static + dynamic + reserved, rounded up */
  int smem_per_sm;        /* the carveout used: the record's, else the largest */
} prof_occupancy;

/* Occupancy of a kernel from its footprint and its device, as the hardware
 * allocates (the granularities of the device's architecture; the opt-in
 * shared memory limit when the kernel opted in or needs more than the
 * default; the carveout the record reports; clusters through CUPTI's
 * max_active_clusters). Device limits left at 0 come from the architecture
 * table. Returns 0; -1 with attn_last_error() when the device is unknown or
 * the footprint cannot be resident at all (then *out holds the limits with
 * active_blocks 0). */
PROF_API int prof_occupancy_compute(const prof_footprint *fp, const prof_device *dev,
                           prof_occupancy *out);
/* "REGS|SMEM" etc. for the bits; "" for none. */
PROF_API const char *prof_occupancy_limit_names(unsigned limiting, char *buf, size_t len);

/* ---- writers ----------------------------------------------------------- */

/* Chrome trace JSON in Kineto's schema. Written to path.tmp and renamed, so a
 * failed write leaves no partial file. */
PROF_API attn_status prof_write_chrome_trace(const prof_trace *t, const char *path);
/* Completes a streamed trace file whose writer never closed it (a traced
 * program that died): cuts it to safe_offset, the end of the last chunk
 * written whole (0: none), and closes the event list and the document,
 * recording `dropped` lost events. 0 or errno. */
PROF_API int prof_chrome_trace_repair(const char *path, int64_t safe_offset, int64_t dropped);
/* Checks that the trace can be written to path (the writer creates path.tmp
 * and renames it over path, so that is what is tried, then removed); an
 * existing file at path is never touched. ATTN_STATUS_IO_ERROR naming the path
 * and the reason otherwise. */
PROF_API attn_status prof_check_writable(const char *path);

/* Trace file formats: Kineto JSON, the same gzip-compressed (.json.gz, as
 * torch.profiler writes it), and Perfetto's protobuf (.pftrace: interned
 * names, zlib-compressed packet batches; about 15x smaller than the JSON). */
typedef enum {
  PROF_FORMAT_AUTO,    /* by the path: .pftrace, .gz, else JSON */
  PROF_FORMAT_JSON,
  PROF_FORMAT_JSON_GZ,
  PROF_FORMAT_PFTRACE
} prof_trace_format;

PROF_API const char *prof_trace_format_name(prof_trace_format f); /* "json", "json.gz", "pftrace" */
/* The names above -> a format; -1 for any other name. */
PROF_API int prof_trace_format_from_name(const char *name);
PROF_API prof_trace_format prof_trace_format_for_path(const char *path);
/* How prof_write_trace writes. Start from prof_write_opts_default() (it sets
 * size). */
typedef struct {
  size_t size;              /* sizeof(prof_write_opts) */
  prof_trace_format format; /* PROF_FORMAT_AUTO: by the path's name */
  /* 1: a .pftrace without its zlib batches (about 9x larger; for looking at
   * the packets with other tools). */
  int pftrace_plain;
} prof_write_opts;

PROF_API prof_write_opts prof_write_opts_default(void);
/* The trace as opts say (NULL: the defaults); streamed to PATH.tmp and
 * renamed, as prof_write_chrome_trace. The Perfetto file holds the same
 * tracks, slices, args and launch flows as the JSON. */
PROF_API attn_status prof_write_trace(const prof_trace *t, const char *path, const prof_write_opts *opts);

PROF_API void prof_print_range_summary(FILE *f, const prof_range_summary *rows, int64_t n);
PROF_API void prof_print_key_averages(FILE *f, const prof_key_average *rows, int64_t n,
                             int64_t max_rows);

/* ---- reading traces (src/prof/io/chrome_reader.c) ---------------------- */

/* Longest string kept from a trace file; longer ones are cut and counted. */
#define PROF_READ_NAME_MAX 65536
enum { PROF_READ_MAX_CATEGORIES = 8 };

/* What the reader kept, and every event it did not keep under one reason:
 * nothing is dropped silently. */
typedef struct {
  int64_t events;            /* kept: complete ("X") events of a modelled category */
  int64_t devices;           /* deviceProperties entries */
  int64_t metadata;          /* "M" rows (process names and labels) */
  int64_t flows;             /* "s"/"f" flow ends: launches are linked by correlation id */
  int64_t unknown_category;  /* skipped: a category attnprof does not model */
  int64_t unsupported_phase; /* skipped: B/E, instants, counters, async ... */
  int64_t missing_time;      /* skipped: no usable "ts" */
  int64_t not_an_event;      /* skipped: an element of traceEvents that is no object */
  int64_t bad_values;        /* fields of the wrong type or out of range, ignored */
  int64_t truncated_strings; /* strings longer than PROF_READ_NAME_MAX, cut */
  int64_t out_of_order;      /* events starting before the one before them (kept) */
  int n_categories;          /* unknown category names listed below */
  struct {
    char name[48];
    int64_t count;
  } categories[PROF_READ_MAX_CATEGORIES];
  char phases[16]; /* the unsupported phases seen, e.g. "iC" */
} prof_read_stats;

/* Reads a Chrome trace JSON as torch.profiler (Kineto) or attnprof writes it,
 * or a bare array of events; plain or gzip; or a Perfetto protobuf trace as
 * attnprof writes it (all told by content, not by name).
 * Streaming: memory holds the event model, never the document. Times become
 * ns exactly; the file's baseTimeNanoseconds becomes the epoch offset.
 * stats (may be NULL) says what was skipped. Returns OK and a new trace in
 * *out, or INVALID_ARGUMENT (not JSON, not a trace), IO_ERROR (cannot
 * read) or OUT_OF_MEMORY with one line in attn_last_error() saying what was
 * wrong and where. */
PROF_API attn_status prof_read_chrome_trace(const char *path, prof_trace **out, prof_read_stats *stats);
PROF_API attn_status prof_read_chrome_trace_buffer(const void *data, size_t len, prof_trace **out,
                                          prof_read_stats *stats);
/* One line per reason something was skipped or cut, each starting with prefix. */
PROF_API void prof_read_stats_print(FILE *f, const char *prefix, const prof_read_stats *s);

/* ---- kernel table, diff, HTML report (issue 7) ------------------------- */

typedef struct {
  const char *name;
  int64_t calls;
  double device_us_total, device_us_avg;
  prof_footprint fp;      /* fp.occupancy_pct_in_file: the trace file's figure, -1 = none */
  int device;             /* ordinal, -1 unknown */
  const char *launch_api; /* the API that launched its first call, or NULL */
  double occupancy_pct;   /* ours, estimated achieved (prof_occupancy_compute); -1 when
                             the trace lacks the device's facts */
  double occupancy_theoretical_pct;
  unsigned occupancy_limiting; /* PROF_OCC_LIMIT_* */
  int64_t graph_calls;         /* of calls, those run inside CUDA graph launches */
} prof_kernel_summary;

/* One row per kernel name and footprint among the kernels inside a range
 * named `range` (NULL: every kernel), by device time, largest first. Returns
 * the row count (malloc'd array in *out; strings point into t), or -1. */
PROF_API int64_t prof_summarize_kernels(const prof_trace *t, const char *range, prof_kernel_summary **out);

/* The name two runs share: template argument lists -> "<>", hex addresses
 * -> "0x?", counters after '#' -> "#N" (ProfilerStep#3 -> ProfilerStep#N).
 * Writes at most len bytes (NUL included) into buf; returns the length. */
PROF_API size_t prof_normalize_name(const char *name, char *buf, size_t len);

typedef enum { PROF_DIFF_SAME, PROF_DIFF_CHANGED, PROF_DIFF_APPEARED, PROF_DIFF_VANISHED } prof_diff_status;

typedef struct {
  prof_diff_status status;
  const char *name;            /* exact name, or the normalized one when A's and B's differ */
  const char *name_a, *name_b; /* each side's name; NULL where absent */
  double count_a, count_b;     /* per call of the range */
  double device_us_a, device_us_b;
} prof_diff_item;

typedef struct {
  const char *name;         /* normalized range name */
  int64_t calls_a, calls_b; /* 0: no such range on that side */
  int gpu_a, gpu_b;         /* the ops counted are GPU activities (else CPU ops) */
  size_t n_items;
  prof_diff_item *items; /* vanished, appeared, changed, then the same ones */
} prof_diff_range;

typedef struct {
  prof_diff_range *ranges; /* A's ranges in order, then those only in B */
  size_t n_ranges;
  struct prof_diff_store *store; /* owns the names */
} prof_diff;

/* A time changed when it moved by more than both thresholds. */
#define PROF_DIFF_TIME_PCT 10.0
#define PROF_DIFF_TIME_MIN_US 1.0
typedef struct {
  double time_pct, time_min_us;
} prof_diff_opts;

/* Per range name (normalized), the ops of A and B matched by exact name, then
 * by normalized name; counts and device time per call (the summary's
 * counting rules). opts NULL: the defaults above. */
PROF_API attn_status prof_diff_traces(const prof_trace *a, const prof_trace *b, const prof_diff_opts *opts,
                             prof_diff *out);
PROF_API void prof_diff_free(prof_diff *d);

/* One trace of an HTML report and the label the page gives it. */
typedef struct {
  const char *label;
  const prof_trace *t;
} prof_report_input;

/* One self-contained HTML page (inline SVG and CSS, nothing loaded, no
 * script that runs): bar charts comparing the traces, and per trace a
 * timeline of one forward (CPU and GPU lanes), the per-range, kernel and key
 * average tables. range: the range the charts and timelines show (NULL or
 * absent from a trace: attn_fwd, else its earliest range). Every string from
 * a trace is escaped. Written to path.tmp and renamed. */
PROF_API attn_status prof_write_html_report(const char *path, const prof_report_input *in, size_t n,
                                   const char *range);
PROF_API attn_status prof_write_html_report_file(FILE *f, const prof_report_input *in, size_t n,
                                        const char *range);

/* ---- expectations ("guess first, then look") --------------------------- */

/* A list of comparisons such as "ops==5, copies==0, device_us<200": items
 * `metric OP value` separated by commas or new lines, white space anywhere,
 * '#' to the end of a line is a comment. Metrics: ops (all ops or GPU events),
 * each kind name (gemm, copy, kernel, memcpy, ...; plural forms accepted),
 * device_us, host_us, calls. Operators: == != < <= > >=. The grammar also reads
 * `metric(arg) OP value[%]` and name values, for metrics that take them. */
typedef struct prof_expect prof_expect;

/* Parses text; on error returns NULL and sets attn_last_error(). */
PROF_API prof_expect *prof_expect_parse(const char *text);
PROF_API void prof_expect_free(prof_expect *e);

/* Checks every expectation against the range named `range` in t (its per-call
 * figures, see prof_summarize_ranges); prints one line each ("held" / "BROKEN" with the observed value)
 * to f (may be NULL). Returns the number broken, or -1 (attn_last_error) when
 * the range is not in the trace. */
PROF_API int prof_expect_check(const prof_expect *e, const prof_trace *t, const char *range,
                      FILE *f);

PROF_API size_t prof_expect_count(const prof_expect *e);

/* One checked expectation, for machine-readable output. */
typedef struct {
  char text[128];    /* normalized, e.g. "copies == 0" */
  char observed[64]; /* e.g. "1", "937.25", "cuLaunchKernelEx" */
  int held;
} prof_expect_result;

/* As prof_expect_check, into out[prof_expect_count(e)] instead of lines.
 * range NULL: the trace's only range name (an error when there are several). */
PROF_API int prof_expect_evaluate(const prof_expect *e, const prof_trace *t, const char *range,
                         prof_expect_result *out);

#ifdef __cplusplus
}
#endif
#endif
