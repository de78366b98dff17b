/* attnprof's one clock, shared by the engine's timings and the profiler:
 * CLOCK_MONOTONIC in ns. Every event of a trace is on it (GPU collectors
 * convert their timestamps to it), so host timings taken with it line up
 * with a trace's events. */
#ifndef ATTNPROF_CLOCK_H
#define ATTNPROF_CLOCK_H

#include <stdint.h>

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

ATTN_API int64_t attn_clock_ns(void);

#ifdef __cplusplus
}
#endif
#endif
