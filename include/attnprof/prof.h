/* attnprof profiler API: one in-memory event model, collectors that fill it,
 * analyses over it, and writers (Chrome/Kineto trace JSON, Perfetto, tables,
 * an HTML report). This umbrella header includes each part:
 *
 *   attnprof/prof/trace.h     the trace model: events, devices, prof_trace
 *   attnprof/prof/session.h   recording: sessions, collectors, ranges, ops
 *   attnprof/prof/analysis.h  attribution, summaries, kernel table, occupancy,
 *                             merge, diff, expectations
 *   attnprof/prof/io.h        trace files (write, read, repair), HTML report
 *   attnprof/prof/ranks.h     several ranks: overlap, per-process figures
 *
 * Layers (as in Kineto): collectors (CPU clock, CUPTI) -> plain prof_event
 * records in a prof_trace -> analyses -> writers. Analyses never look at a
 * collector, so a trace read from disk and a live one are treated alike.
 *
 * Errors, as in attn.h: a function that can fail returns attn_status
 * (ATTN_STATUS_OK, 0, on success) and leaves one line in attn_last_error()
 * (per thread) saying what was wrong and what is accepted; what it makes
 * comes back through its out-parameters, untouched or NULL on failure.
 * Functions that cannot fail (getters, names, printers) return their value.
 * Options structs start with size_t size: take them from their *_default()
 * function. */
#ifndef ATTNPROF_PROF_H
#define ATTNPROF_PROF_H

#include "attnprof/prof/trace.h"
#include "attnprof/prof/session.h"
#include "attnprof/prof/analysis.h"
#include "attnprof/prof/io.h"
#include "attnprof/prof/ranks.h"

#endif
