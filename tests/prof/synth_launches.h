/* A synthetic launch loop, as a serving loop of small kernels traces: n
 * cudaLaunchKernel calls on one thread, each with its kernel on stream 7 of
 * an H200-like device (so every footprint and occupancy arg is written) and
 * the flow between them, inside "attn_fwd" ranges of 10 launches. Times and
 * sizes vary as real ones do (seeded), so compression is not flattered. For
 * the format tests (test_prof_formats.c) and bench/pftrace_size.c. */
#ifndef ATTNPROF_TESTS_SYNTH_LAUNCHES_H
#define ATTNPROF_TESTS_SYNTH_LAUNCHES_H

#include <stdint.h>

#include "attnprof/prof.h"

enum { SYNTH_LOOP_PID = 4242, SYNTH_LOOP_TID = 11, SYNTH_LOOP_STREAM = 7, SYNTH_LOOP_RANGE = 10 };

/* NULL when out of memory. */
prof_trace *synth_launch_loop(int64_t n_launches, uint64_t seed);

#endif
