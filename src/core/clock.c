/* The core's clock: one monotonic clock for CPU ranges, CUPTI timestamps
 * (mapped onto it) and host timings, and its offset to the wall clock that
 * trace files use. Declared in attnprof/prof.h. */
#include <stdint.h>
#include <time.h>

#include "attnprof/prof.h"

int64_t prof_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t prof_clock_epoch_offset(void) {
  struct timespec rt;
  int64_t a = prof_clock_ns();
  clock_gettime(CLOCK_REALTIME, &rt);
  int64_t b = prof_clock_ns();
  return (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (a + (b - a) / 2);
}

