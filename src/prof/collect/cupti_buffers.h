/* CUPTI's activity buffers: a bounded pool handed to CUPTI on request, and
 * the completion callback that converts each finished buffer's records into
 * events for the current target (the session trace, or a chunk trace handed
 * to a sink). Shared by collector_cupti.c only. */
#ifndef ATTNPROF_SRC_PROF_CUPTI_BUFFERS_H
#define ATTNPROF_SRC_PROF_CUPTI_BUFFERS_H

#include "prof/collect/collector_cupti.h"
#include "prof/collect/cupti_lib.h"

/* Takes the session's buffer size, the pool's bound and the deferral cap
 * (MB of completed buffers kept unconverted until the session stops; 0:
 * converted as they complete) and remembers the CUPTI table; call before
 * registering callbacks. */
void cupti_buffers_configure(const cupti_fns *f, const prof_session_opts *o);
/* Record times minus offset (see cupti_conv_set_clock_offset). */
void cupti_buffers_set_clock_offset(int64_t offset);
void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                     size_t valid);

/* Where events go from now on; NULL stops delivery (records are read and
 * discarded). With a sink set, t is ignored and chunks are made instead. */
int cupti_buffers_set_target(prof_trace *t);
void cupti_buffers_set_sink(cupti_sink_fn sink, void *ctx, size_t chunk_events);
/* Hands the chunk in progress to the sink (no-op without a sink). */
void cupti_buffers_hand_off(void);
/* Adds a device to the current target and to every later chunk. */
void cupti_buffers_add_device(const prof_device *d);
void cupti_buffers_stats(cupti_stats *out);
/* API names by callback id, cached ("cudaLaunchKernel"), or NULL. */
const char *cupti_cbid_name(CUpti_CallbackDomain domain, uint32_t cbid);

#endif
