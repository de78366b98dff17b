/* A trace of several processes (ranks merged by attnprof merge, or a
 * torchrun run traced whole): which processes it holds, and the per-range
 * summary of one of them, for per-rank rows. */
#ifndef ATTNPROF_SRC_PROF_ANALYSIS_RANKS_H
#define ATTNPROF_SRC_PROF_ANALYSIS_RANKS_H

#include <stdint.h>

#include "attnprof/prof.h"

/* The distinct pids of t's host events, ascending, into *out (malloc'd);
 * their count, or -1 (out of memory). GPU rows carry a device there, not a
 * process, and are left out. */
int64_t prof_trace_pids(const prof_trace *t, int64_t **out);

/* prof_summarize_ranges_ex over the ranges of process pid only; the GPU work
 * they launched follows them (a launch is on its range's thread). */
int64_t prof_summarize_ranges_pid(const prof_trace *t, unsigned flags, int64_t pid,
                                  prof_range_summary **out);

#endif
