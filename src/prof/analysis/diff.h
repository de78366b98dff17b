/* Internals of the trace diff: each trace is first tallied per range name
 * (diff_tally.c), then the two tallies are matched op by op (diff.c).
 *
 * Both tallies intern their names in one pool, so the same text from trace A
 * and trace B is the same pointer and ops match by pointer. Range names are
 * normalized before they are pooled (ProfilerStep#2 and #3 are one range,
 * "ProfilerStep#N", with two calls); op names are kept exact, and normalized
 * only for the ops that found no exact partner. */
#ifndef ATTNPROF_SRC_PROF_DIFF_H
#define ATTNPROF_SRC_PROF_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/prof.h"
#include "prof/model/map.h"
#include "prof/model/strpool.h"

enum { DIFF_GPU = 0, DIFF_CPU = 1 };

typedef struct {
  const char *name; /* pooled, exact */
  double count;     /* over all calls of the range */
  int64_t dev_ns;
} diff_op;

typedef struct {
  const char *name; /* pooled, normalized */
  int64_t calls, first_start;
  diff_op *ops[2]; /* [DIFF_GPU]: GPU activities; [DIFF_CPU]: outermost CPU ops */
  size_t n_ops[2], cap_ops[2];
} diff_range;

typedef struct {
  diff_range *ranges;
  size_t n, cap;
  prof_map by_name; /* pooled range name -> range */
  prof_map ops;     /* (range * 2 + side, pooled op name) -> op */
} diff_tally;

/* Tallies t per normalized range name, in order of first start. 0, or -1
 * (out of memory, attn_last_error set). */
int diff_tally_build(const prof_trace *t, prof_strpool *pool, diff_tally *out);
void diff_tally_free(diff_tally *t);

/* What the diff result owns besides its arrays. */
struct prof_diff_store {
  prof_strpool pool;
};

#endif
