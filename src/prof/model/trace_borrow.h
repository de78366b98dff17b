/* Appending without copying the name: for a short-lived trace that gathers
 * events of other traces (the streamed writer's merge of held events and a
 * chunk), where interning every name again was a tenth of the writer's time.
 * The name must outlive t; the other traces' pools hold it. */
#ifndef ATTNPROF_SRC_PROF_MODEL_TRACE_BORROW_H
#define ATTNPROF_SRC_PROF_MODEL_TRACE_BORROW_H

#include "attnprof/prof.h"

/* As prof_trace_append, with ev->name stored as it is. */
int64_t prof_trace_append_borrowed(prof_trace *t, const prof_event *ev);

#endif
