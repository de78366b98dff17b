/* attnprof profiler: analyses over a trace, live or read from disk alike:
 * attribution to user ranges, per-range summaries, key averages, kernel
 * table, occupancy, merging the traces of several processes, diff, and
 * expectations ("guess first, then look"). */
#ifndef ATTNPROF_PROF_ANALYSIS_H
#define ATTNPROF_PROF_ANALYSIS_H

#include <stdio.h>

#include "attnprof/prof/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- analyses ---------------------------------------------------------- */

/* Attribution: for each event, the index of the innermost user range on the
 * launching thread that contains it (GPU activities through the correlation id
 * of their launch call, wherever the activity itself falls in time), or -1. A
 * range's own entry is the range around it. *out: a malloc'd array of prof_trace_count
 * entries. O(n log n). */
PROF_API attn_status prof_attribute(const prof_trace *t, int64_t **out);

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
  int gpu;               /* 1: the ops counted are GPU activities; 0: CPU ops */
  double graph_per_call; /* of per_call_total, GPU events that ran inside CUDA graph
                            launches (counted as eager ones are, and said apart) */
} prof_range_summary;

/* One row per distinct user-range name, in order of first appearance (earliest
 * start): a malloc'd array in *out, its length in *n.
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
PROF_API attn_status prof_summarize_ranges(const prof_trace *t, prof_range_summary **out,
                                           int64_t *n);
/* The same with choices: PROF_SUMMARY_PER_STEP keeps one row per
 * "ProfilerStep#<n>" (prof_summarize_ranges does); without it they are one
 * row "ProfilerStep#N" with a call per step, as diff counts them. links (may
 * be NULL) receives what the linking could not settle. */
enum { PROF_SUMMARY_PER_STEP = 1 };
PROF_API attn_status prof_summarize_ranges_ex(const prof_trace *t, unsigned flags,
                                              prof_range_summary **out, int64_t *n,
                                              prof_link_stats *links);
/* "ProfilerStep#" followed by digits only: a step torch.profiler numbered. */
PROF_API int prof_is_step_name(const char *name);
/* The row named `name`, or NULL. */
PROF_API const prof_range_summary *prof_range_summary_find(const prof_range_summary *rows,
                                                           int64_t n, const char *name);

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
PROF_API attn_status prof_key_averages(const prof_trace *t, prof_key_average **out, int64_t *n);

/* Adds torch.profiler's gpu_user_annotation spans: for each user-range call
 * and each (device, stream) its GPU activities ran on, one span from the
 * first to the last of them (the innermost range of each activity's launch).
 * A trace that has such spans already is left alone. *added (may be
 * NULL): the number added. */
PROF_API attn_status prof_add_gpu_annotations(prof_trace *t, int64_t *added);

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
 * (a median residual past 1 ms), it stays, with the reason in info[r].why. info has n entries. The new trace goes to *out. */
PROF_API attn_status prof_merge(prof_trace *const *in, size_t n, prof_merge_input *info,
                                prof_trace **out);

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
  double limit_cluster;    /* blocks/SM the cluster residency allows; -1 = no cluster */
  double active_blocks;    /* resident blocks per SM: the least limit (fractional
                             only under the cluster limit) */
  double theoretical_pct;  /* active warps / max warps per SM */
  double achieved_est_pct; /* theoretical x min(1, grid blocks / (SMs x active)) */
  unsigned limiting;       /* PROF_OCC_LIMIT_* bits */
  int smem_per_block;      /* allocated: static + dynamic + reserved, rounded up */
  int smem_per_sm;         /* the carveout used: the record's, else the largest */
} prof_occupancy;

/* Occupancy of a kernel from its footprint and its device, as the hardware
 * allocates (the granularities of the device's architecture; the opt-in
 * shared memory limit when the kernel opted in or needs more than the
 * default; the carveout the record reports; clusters through CUPTI's
 * max_active_clusters). Device limits left at 0 come from the architecture
 * table. UNSUPPORTED when the device is unknown; INVALID_ARGUMENT when the
 * footprint cannot be resident at all (then *out holds the limits with
 * active_blocks 0). */
PROF_API attn_status prof_occupancy_compute(const prof_footprint *fp, const prof_device *dev,
                                            prof_occupancy *out);
/* "REGS|SMEM" etc. for the bits; "" for none. */
PROF_API const char *prof_occupancy_limit_names(unsigned limiting, char *buf, size_t len);

PROF_API void prof_print_range_summary(FILE *f, const prof_range_summary *rows, int64_t n);
PROF_API void prof_print_key_averages(FILE *f, const prof_key_average *rows, int64_t n,
                                      int64_t max_rows);

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
 * named `range` (NULL: every kernel), by device time, largest first: a
 * malloc'd array in *out (strings point into t), its length in *n. */
PROF_API attn_status prof_summarize_kernels(const prof_trace *t, const char *range,
                                            prof_kernel_summary **out, int64_t *n);

/* The name two runs share: template argument lists -> "<>", hex addresses
 * -> "0x?", counters after '#' -> "#N" (ProfilerStep#3 -> ProfilerStep#N).
 * Writes at most len bytes (NUL included) into buf; returns the length. */
PROF_API size_t prof_normalize_name(const char *name, char *buf, size_t len);

typedef enum {
  PROF_DIFF_SAME,
  PROF_DIFF_CHANGED,
  PROF_DIFF_APPEARED,
  PROF_DIFF_VANISHED
} prof_diff_status;

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

/* A time changed when it moved by more than both thresholds. Start from
 * prof_diff_opts_default() (it sets size and the defaults below). */
#define PROF_DIFF_TIME_PCT 10.0
#define PROF_DIFF_TIME_MIN_US 1.0
typedef struct {
  size_t size; /* sizeof(prof_diff_opts) */
  double time_pct, time_min_us;
} prof_diff_opts;

PROF_API prof_diff_opts prof_diff_opts_default(void);

/* Per range name (normalized), the ops of A and B matched by exact name, then
 * by normalized name; counts and device time per call (the summary's
 * counting rules). opts NULL: the defaults. */
PROF_API attn_status prof_diff_traces(const prof_trace *a, const prof_trace *b,
                                      const prof_diff_opts *opts, prof_diff *out);
PROF_API void prof_diff_free(prof_diff *d);

/* ---- expectations ("guess first, then look") --------------------------- */

/* A list of comparisons such as "ops==5, copies==0, device_us<200": items
 * `metric OP value` separated by commas or new lines, white space anywhere,
 * '#' to the end of a line is a comment. Metrics: ops (all ops or GPU events),
 * each kind name (gemm, copy, kernel, memcpy, ...; plural forms accepted),
 * device_us, host_us, calls. Operators: == != < <= > >=. The grammar also reads
 * `metric(arg) OP value[%]` and name values, for metrics that take them. */
typedef struct prof_expect prof_expect;

/* Parses text into *out; INVALID_ARGUMENT naming what was not understood. */
PROF_API attn_status prof_expect_parse(const char *text, prof_expect **out);
PROF_API void prof_expect_free(prof_expect *e);

/* Checks every expectation against the range named `range` in t (its per-call
 * figures, see prof_summarize_ranges); prints one line each ("held" /
 * "BROKEN" with the observed value) to f (may be NULL) and sets *broken to
 * the number broken. INVALID_ARGUMENT when the range is not in the trace. */
PROF_API attn_status prof_expect_check(const prof_expect *e, const prof_trace *t, const char *range,
                                       FILE *f, int *broken);

PROF_API size_t prof_expect_count(const prof_expect *e);

/* One checked expectation, for machine-readable output. */
typedef struct {
  char text[128];    /* normalized, e.g. "copies == 0" */
  char observed[64]; /* e.g. "1", "937.25", "cuLaunchKernelEx" */
  int held;
} prof_expect_result;

/* As prof_expect_check, into out[prof_expect_count(e)] instead of lines.
 * range NULL: the trace's only range name (an error when there are several). */
PROF_API attn_status prof_expect_evaluate(const prof_expect *e, const prof_trace *t,
                                          const char *range, prof_expect_result *out, int *broken);

#ifdef __cplusplus
}
#endif
#endif
