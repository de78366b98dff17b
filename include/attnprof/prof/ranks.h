/* attnprof profiler, several ranks (one process per GPU): the overlap of
 * communication (NCCL kernels) with compute, per device and per step, and
 * the figures of each process of a trace. Per-rank traces come onto one
 * timeline with prof_merge (analysis.h). */
#ifndef ATTNPROF_PROF_RANKS_H
#define ATTNPROF_PROF_RANKS_H

#include <stdio.h>

#include "attnprof/prof/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compute and communication on one device (one rank), over the kernels
 * launched inside one user range (`step`, e.g. "cp.step 2"), or over all
 * kernels (step "(all)"). Times are unions of kernel intervals (kernels that
 * run at once count once). hidden_us: the part of the communication time
 * during which a compute kernel of the same device ran (any step's). */
typedef struct {
  int32_t device;
  const char *step; /* points into the trace, or a static "(all)" / "(none)" */
  int64_t compute_kernels, comm_kernels;
  double compute_us, comm_us, hidden_us;
  double hidden_share; /* hidden_us / comm_us; NaN with no communication */
} prof_overlap_row;

/* 1 when a kernel name is NCCL's (ncclDevKernel_..., ncclKernel_...; plain,
 * "void "-prefixed or mangled as CUPTI records it): communication. */
PROF_API int prof_is_comm_kernel(const char *name);

/* Rows per device: "(all)" first, then one per step in order of first
 * kernel: a malloc'd array in *out, its length in *n. */
PROF_API attn_status prof_overlap_summarize(const prof_trace *t, prof_overlap_row **out,
                                            int64_t *n);
PROF_API void prof_print_overlap(FILE *f, const prof_overlap_row *rows, int64_t n);

/* ---- several processes in one trace (src/prof/analysis/ranks.c) ---- */

/* The distinct pids of t's host events, ascending, into *out (malloc'd);
 * their count into *n. GPU rows carry a device there, not a
 * process, and are left out. A trace of ranks merged by prof_merge has one
 * per rank. */
PROF_API attn_status prof_trace_pids(const prof_trace *t, int64_t **out, int64_t *n);
/* The per-range summary, the kernel table and the key averages of process
 * pid only: its host events and the GPU work its launch calls started (pid
 * -1: all, as prof_summarize_ranges_ex, prof_summarize_kernels and
 * prof_key_averages). */
PROF_API attn_status prof_summarize_ranges_pid(const prof_trace *t, unsigned flags, int64_t pid,
                                               prof_range_summary **out, int64_t *n);
PROF_API attn_status prof_summarize_kernels_pid(const prof_trace *t, const char *range, int64_t pid,
                                                prof_kernel_summary **out, int64_t *n);
PROF_API attn_status prof_key_averages_pid(const prof_trace *t, int64_t pid, prof_key_average **out,
                                           int64_t *n);

#ifdef __cplusplus
}
#endif
#endif
