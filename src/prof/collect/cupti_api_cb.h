/* Launch calls recorded through CUPTI's callback API instead of its RUNTIME
 * and DRIVER activity kinds (the default API mode; see collector_cupti.c for
 * why and docs/design/profiler-cost.md for the measurements).
 * Only the calls the collector subscribes reach us; each becomes a
 * CUpti_ActivityAPI record, the same shape CUPTI writes, in a per-thread block
 * that the buffer completion path drains. Shared by collector_cupti.c and
 * cupti_buffers.c only. */
#ifndef ATTNPROF_SRC_PROF_CUPTI_API_CB_H
#define ATTNPROF_SRC_PROF_CUPTI_API_CB_H

#include <stdint.h>

#include <cupti.h>

#include "prof/collect/cupti_lib.h"

/* Added to every time we stamp: 0 when CUPTI stamps with our clock too,
 * else the offset its records carry (see cupti_conv_set_clock_offset). */
void cupti_api_cb_set_clock_offset(int64_t offset);
/* Called when the callbacks are switched on or off. */
void cupti_api_cb_switched(void);
/* One runtime or driver callback (enter or exit) of a subscribed call. */
void cupti_api_cb_on(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *d);
/* Notes whether the call named name (cbid in dom) is a sync call, for the
 * sync records below; called for every subscribed id before they are on. */
void cupti_api_cb_classify(CUpti_CallbackDomain dom, uint32_t cbid, const char *name);
/* f non-NULL: a successful sync call also writes the record CUPTI's
 * SYNCHRONIZATION kind would (the default; not under PROF_SYNC_FROM_KIND);
 * NULL: not. */
void cupti_api_cb_set_sync(const cupti_fns *f);
/* Hands every record written so far to take, oldest block first; the caller
 * serializes drains (cupti_buffers.c holds its converter lock). */
void cupti_api_cb_drain(void (*take)(const CUpti_Activity *rec));
/* Records lost because the block pool was exhausted, since the last call. */
int64_t cupti_api_cb_take_lost(void);

#endif
