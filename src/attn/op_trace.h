/* The engine's one hook into the profiler: CPU backends mark each op they
 * run (gemm_qk, softmax, copy_scores, ...) with prof_op_begin/prof_op_end of
 * the public profiler API, so a trace shows the ops of a CPU forward as it
 * shows a GPU forward's kernels. When no profiling session is on, a mark
 * costs one atomic load. This header is the only place src/attn reaches the
 * profiler; src/prof never includes src/attn. */
#ifndef ATTNPROF_SRC_ATTN_OP_TRACE_H
#define ATTNPROF_SRC_ATTN_OP_TRACE_H

#include "attnprof/prof.h"

#endif
