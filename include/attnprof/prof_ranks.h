/* attnprof profiler, several ranks (one process per GPU): the overlap of
 * communication (NCCL kernels) with compute, per device and per step. Per-rank
 * traces come onto one timeline with prof_merge (prof.h). */
#ifndef ATTNPROF_PROF_RANKS_H
#define ATTNPROF_PROF_RANKS_H

#include <stdio.h>

#include "attnprof/prof.h"

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

/* Rows per device: "(all)" first, then one per step in order of first
 * kernel. Returns the count (malloc'd array in *out) or -1 (no memory). */
PROF_API int64_t prof_overlap_summarize(const prof_trace *t, prof_overlap_row **out);
PROF_API void prof_print_overlap(FILE *f, const prof_overlap_row *rows, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
