/* The core's clock: one monotonic clock for CPU ranges, CUPTI timestamps
 * (mapped onto it) and host timings, and its offset to the wall clock that
 * trace files use. Declared in attnprof/clock.h and core/clock.h. */
#include "core/clock.h"

#include <time.h>

int64_t attn_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t attn_clock_epoch_offset(void) {
  struct timespec rt;
  int64_t a = attn_clock_ns();
  clock_gettime(CLOCK_REALTIME, &rt);
  int64_t b = attn_clock_ns();
  return (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (a + (b - a) / 2);
}
