/* The analyses' count-returning internals (-1: out of memory) behind the
 * public convention (prof.h): attn_status, the count through *n. */
#ifndef ATTNPROF_SRC_PROF_ANALYSIS_STATUS_H
#define ATTNPROF_SRC_PROF_ANALYSIS_STATUS_H

#include <stdint.h>

#include "core/error.h"

static inline attn_status prof_count_status(int64_t k, int64_t *n, const char *what) {
  if (k < 0) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: out of memory", what);
  *n = k;
  return ATTN_STATUS_OK;
}

#endif
