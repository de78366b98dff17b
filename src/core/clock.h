/* The core clock's private half: its offset to the wall clock, which the
 * collectors give a trace so writers can write epoch times. attn_clock_ns
 * itself is public (attnprof/clock.h). */
#ifndef ATTNPROF_SRC_CORE_CLOCK_H
#define ATTNPROF_SRC_CORE_CLOCK_H

#include <stdint.h>

#include "attnprof/clock.h"

/* Unix-epoch ns minus attn_clock_ns, read between two clock reads so the
 * error is at most half their gap. */
int64_t attn_clock_epoch_offset(void);

#endif
