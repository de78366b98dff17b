/* The streamed trace writer (see chrome_stream.h). Each chunk is merged with
 * the events held from earlier chunks into one small trace, whose launch
 * links are computed as the whole-trace writer does (prof_link_launches);
 * events with a partner are written with their flow, unmatched launch calls
 * and GPU activities are held (at most MAX_AGE chunks, at most MAX_HELD
 * events), the rest are written. Lanes seen are remembered, one event each,
 * for the metadata rows at the end. Memory: one chunk + the held events +
 * one event per lane. */
#include "prof/io/chrome_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/model/map.h"
#include "prof/model/trace_borrow.h"
#include "prof/analysis/nest.h"

enum { MAX_AGE = 4, MAX_HELD = 1 << 16 };

struct chrome_stream {
  FILE *f;
  char *path;
  json_out o;
  int64_t base_epoch, offset;
  int header_done, first;
  prof_trace *held; /* events waiting for their flow partner */
  unsigned char *held_age;
  prof_trace *lanes; /* one event per (pid, tid) seen, and the devices */
  prof_map lane_seen;
  int64_t safe_offset, events, dropped;
  chrome_fp_cache *fp_cache; /* NULL: none, the same output */
};

chrome_stream *chrome_stream_open(const char *path, int64_t base_epoch, int64_t offset, char *why,
                                  size_t len) {
  chrome_stream *s = calloc(1, sizeof *s);
  if (s) {
    s->path = strdup(path);
    prof_trace_create(&s->held);
    prof_trace_create(&s->lanes);
    s->f = s->path ? fopen(path, "w") : NULL;
  }
  if (!s || !s->path || !s->held || !s->lanes || !s->f) {
    snprintf(why, len, "cannot write trace '%s': %s", path,
             s && !s->f ? strerror(errno) : "no memory");
    if (s && s->f) fclose(s->f);
    if (s) prof_trace_destroy(s->held), prof_trace_destroy(s->lanes), free(s->path);
    free(s);
    return NULL;
  }
  setvbuf(s->f, NULL, _IOFBF, 1 << 20);
  s->o.f = s->f;
  s->base_epoch = base_epoch;
  s->offset = offset;
  s->first = 1;
  s->fp_cache = chrome_fp_cache_create();
  prof_map_init(&s->lane_seen);
  return s;
}

int64_t chrome_stream_safe_offset(const chrome_stream *s) { return s->safe_offset; }
int64_t chrome_stream_events(const chrome_stream *s) { return s->events; }
int64_t chrome_stream_dropped(const chrome_stream *s) { return s->dropped; }

/* The top of the document, up to the opening of traceEvents; the devices are
 * those of the first chunk (the collector adds every device to every chunk). */
static void header(chrome_stream *s, const prof_trace *devices_from) {
  chrome_ctx c = {.o = s->o, .t = devices_from};
  json_fmt(&c.o, "{\n  \"" KINETO_SCHEMA_VERSION "\": %d,\n  ", KINETO_SCHEMA_VERSION_VALUE);
  chrome_write_devices(&c);
  json_raw(&c.o, "  \"" ATTNPROF_KEY_VERSION "\": \"" ATTNPROF_VERSION "\",\n");
  json_raw(&c.o, "  \"" KINETO_DISPLAY_TIME_UNIT "\": \"" KINETO_DISPLAY_TIME_UNIT_VALUE "\",\n");
  json_fmt(&c.o, "  \"" KINETO_BASE_TIME_NS "\": %lld,\n", (long long)s->base_epoch);
  json_raw(&c.o, "  \"" KINETO_TRACE_EVENTS "\": [");
  s->o = c.o;
  s->header_done = 1;
  for (size_t i = 0; i < prof_trace_device_count(devices_from); i++)
    prof_trace_add_device(s->lanes, prof_trace_device(devices_from, i));
}

static void note_lane(chrome_stream *s, const prof_event *e) {
  size_t before = s->lane_seen.used;
  if (prof_map_put(&s->lane_seen, (uint64_t)e->pid, (uint64_t)e->tid, 1) >= 0 &&
      s->lane_seen.used != before)
    prof_trace_append(s->lanes, e, NULL);
}

/* Whether event i waits for a partner that may come in a later chunk. */
static int waits(const prof_event *e, const chrome_ctx *c, size_t i, int age) {
  if (age >= MAX_AGE || !e->correlation) return 0;
  if (prof_cat_is_gpu_activity(e->cat)) return c->launch[i] < 0;
  return prof_cat_is_launch(e->cat) && !c->launches_gpu[i];
}

/* Writes what can be written of w (held events first, then the chunk's),
 * moving the rest into a new held trace. */
static int write_merged(chrome_stream *s, prof_trace *w, size_t n_held_before,
                        const unsigned char *ages) {
  chrome_ctx c = {.o = s->o,
                  .t = w,
                  .n = prof_trace_count(w),
                  .base_epoch = s->base_epoch,
                  .offset = s->offset,
                  .first = s->first,
                  .fp_cache = s->fp_cache};
  c.launch = malloc((c.n ? c.n : 1) * sizeof *c.launch);
  c.launches_gpu = calloc(c.n ? c.n : 1, 1);
  prof_trace *held = NULL;
  prof_trace_create(&held);
  unsigned char *held_age = malloc(MAX_HELD);
  int err =
      !c.launch || !c.launches_gpu || !held || !held_age || prof_link_launches(w, c.n, c.launch)
          ? ENOMEM
          : 0;
  for (size_t i = 0; !err && i < c.n; i++)
    if (c.launch[i] >= 0) c.launches_gpu[c.launch[i]] = 1;
  for (size_t i = 0; !err && i < c.n; i++) {
    const prof_event *e = prof_trace_at(w, i);
    int age = i < n_held_before ? ages[i] + 1 : 0;
    size_t nh = prof_trace_count(held);
    if (nh < MAX_HELD && waits(e, &c, i, age) && !prof_trace_append(held, e, NULL)) {
      held_age[nh] = (unsigned char)age;
      continue;
    }
    note_lane(s, e);
    chrome_write_event(&c, i);
    s->events++;
  }
  s->o = c.o;
  s->first = c.first;
  free(c.launch);
  free(c.launches_gpu);
  if (err) {
    prof_trace_destroy(held);
    free(held_age);
    return err;
  }
  prof_trace_destroy(s->held);
  free(s->held_age);
  s->held = held;
  s->held_age = held_age;
  return 0;
}

/* The held events, then the chunk's, in one trace that borrows their names:
 * it is not read once s->held or chunk is gone. */
static prof_trace *merge(chrome_stream *s, prof_trace *chunk) {
  prof_trace *w = NULL;
  prof_trace_create(&w);
  if (!w) return NULL;
  for (size_t i = 0; i < prof_trace_device_count(chunk); i++) /* a device seen late */
    prof_trace_add_device(s->lanes, prof_trace_device(chunk, i));
  for (size_t i = 0; i < prof_trace_device_count(s->lanes); i++)
    prof_trace_add_device(w, prof_trace_device(s->lanes, i)); /* blocks per SM, occupancy */
  for (size_t i = 0; i < prof_trace_count(s->held); i++)
    prof_trace_append_borrowed(w, prof_trace_at(s->held, i));
  for (size_t i = 0; i < prof_trace_count(chunk); i++)
    prof_trace_append_borrowed(w, prof_trace_at(chunk, i));
  return w;
}

int chrome_stream_chunk(chrome_stream *s, prof_trace *chunk) {
  if (!chunk) return 0;
  if (!s->header_done) header(s, chunk);
  s->dropped += prof_trace_dropped(chunk);
  size_t n_held = prof_trace_count(s->held);
  unsigned char *ages = s->held_age;
  prof_trace *w = merge(s, chunk);
  int err = w ? write_merged(s, w, n_held, ages) : ENOMEM;
  prof_trace_destroy(w);
  prof_trace_destroy(chunk);
  /* Only a chunk written whole moves the point a repair cuts back to. */
  json_flush(&s->o);
  if (!err && !s->o.err && !fflush(s->f)) s->safe_offset = (int64_t)ftello(s->f);
  return err ? err : s->o.err;
}

static void tail(json_out *o, int64_t dropped) {
  json_raw(o, "\n  ],\n");
  json_fmt(o, "  \"" ATTNPROF_KEY_DROPPED "\": %lld\n}\n", (long long)dropped);
}

int chrome_stream_close(chrome_stream *s, int64_t extra_dropped, int64_t pid, const char *process) {
  int err = 0;
  if (!s->header_done) header(s, s->lanes);
  size_t n = prof_trace_count(s->held);
  if (n) { /* held events are written unpaired: their partner never came */
    for (size_t i = 0; i < n; i++) s->held_age[i] = MAX_AGE;
    prof_trace *empty = NULL;
    prof_trace_create(&empty);
    prof_trace *w = empty ? merge(s, empty) : NULL;
    err = w ? write_merged(s, w, n, s->held_age) : ENOMEM;
    prof_trace_destroy(empty);
    prof_trace_destroy(w);
  }
  prof_trace_set_process(s->lanes, pid, process ? process : "attnprof");
  chrome_ctx c = {.o = s->o, .t = s->lanes, .n = prof_trace_count(s->lanes), .first = s->first};
  if (chrome_write_metadata(&c) && !err) err = ENOMEM;
  s->o = c.o;
  tail(&s->o, s->dropped + extra_dropped);
  json_flush(&s->o);
  if (!err) err = s->o.err;
  int closed = chrome_stream_abandon(s);
  return err ? err : closed;
}

int chrome_stream_abandon(chrome_stream *s) {
  json_flush(&s->o); /* what stdio would have held is written, as before */
  int err = fclose(s->f) ? (errno ? errno : EIO) : 0;
  prof_trace_destroy(s->held);
  prof_trace_destroy(s->lanes);
  prof_map_free(&s->lane_seen);
  free(s->held_age);
  free(s->fp_cache);
  free(s->path);
  free(s);
  return err;
}

attn_status prof_chrome_trace_repair(const char *path, int64_t safe_offset, int64_t dropped) {
  FILE *f = fopen(path, safe_offset > 0 ? "r+" : "w");
  if (!f)
    return attn_fail(ATTN_STATUS_IO_ERROR, "cannot repair the trace %s: %s", path, strerror(errno));
  json_out o = {.f = f};
  if (safe_offset > 0) {
    if (ftruncate(fileno(f), safe_offset) || fseeko(f, safe_offset, SEEK_SET)) o.err = errno;
  } else { /* nothing whole: an empty trace */
    json_fmt(&o,
             "{\n  \"" KINETO_SCHEMA_VERSION "\": %d,\n  \"" KINETO_DEVICE_PROPERTIES
             "\": [],\n  \"" KINETO_TRACE_EVENTS "\": [",
             KINETO_SCHEMA_VERSION_VALUE);
  }
  tail(&o, dropped);
  json_flush(&o);
  int err = o.err;
  if (fclose(f) && !err) err = errno ? errno : EIO;
  if (err)
    return attn_fail(ATTN_STATUS_IO_ERROR, "cannot repair the trace %s: %s", path, strerror(err));
  return ATTN_STATUS_OK;
}
