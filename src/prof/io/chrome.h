/* Internals of the Chrome/Kineto trace writer, shared by its three files:
 * chrome_writer.c (the file, its top level, atomic replace), chrome_events.c
 * (one X event with Kineto's args, and ac2g flows), chrome_meta.c
 * (deviceProperties and the process/thread metadata rows). */
#ifndef ATTNPROF_SRC_PROF_CHROME_H
#define ATTNPROF_SRC_PROF_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnprof/prof.h"
#include "prof/io/json_out.h"

typedef struct chrome_fp_cache chrome_fp_cache;

typedef struct {
  json_out o;
  const prof_trace *t;
  size_t n;                    /* events written */
  int64_t base_epoch;          /* baseTimeNanoseconds */
  int64_t offset;              /* add to an event time for epoch ns (prof_trace_epoch_offset) */
  int64_t *launch;             /* GPU activity -> its launch event, or -1 (prof_link_launches) */
  unsigned char *launches_gpu; /* launch event -> it has a GPU activity: gets an "s" */
  int first;                   /* nothing written into traceEvents yet */
  chrome_fp_cache *fp_cache;   /* NULL: footprint args computed every time */
} chrome_ctx;

/* The text of kernels' footprint args per (footprint, device), so a loop of
 * the same few kernels formats them once (chrome_events.c). The key is every
 * input of that text, so a hit writes what the miss wrote. Free with free(). */
chrome_fp_cache *chrome_fp_cache_create(void);

/* Starts an element of traceEvents (the separator before all but the first). */
void chrome_next(chrome_ctx *c);
/* A time field: event ns -> µs relative to baseTimeNanoseconds. */
void chrome_ts(chrome_ctx *c, int64_t event_ns);

void chrome_write_event(chrome_ctx *c, size_t i);
/* The whole trace document into f (already open; path is its traceName).
 * 0 or errno; f is flushed, not closed. */
int chrome_write_to(const prof_trace *t, FILE *f, const char *path);
/* The epoch ns the trace's times count from (baseTimeNanoseconds): its
 * first event's time floored to the millisecond. */
int64_t chrome_base_epoch(const prof_trace *t);
void chrome_write_devices(chrome_ctx *c);
/* The process and thread name rows; 0, or -1 (out of memory). */
int chrome_write_metadata(chrome_ctx *c);

#endif
