/* prof_write_chrome_trace and prof_check_writable: the trace file in Kineto's
 * schema, streamed event by event to PATH.tmp and renamed over PATH, so a
 * reader never sees half a file and a failure leaves nothing behind. Extra
 * memory while writing: an index per event for the time order and the flow
 * links (about 40 bytes per event), never the output itself.
 *
 * Times: ts/dur are µs with exact ns ("1234.567"), ts relative to
 * baseTimeNanoseconds (Unix-epoch ns). Kineto floors the base to a 3-month
 * boundary to keep doubles exact; we floor the first event's time to the
 * millisecond instead: just as exact, and a viewer's time axis starts near 0. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/error.h"
#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/analysis/nest.h"

void chrome_next(chrome_ctx *c) {
  json_raw(&c->o, c->first ? "\n  " : ",\n  ");
  c->first = 0;
}

void chrome_ts(chrome_ctx *c, int64_t event_ns) {
  json_us(&c->o, event_ns + c->offset - c->base_epoch);
}

static int64_t base_epoch(const prof_trace *t, size_t n, int64_t offset) {
  int64_t lo = INT64_MAX;
  for (size_t i = 0; i < n; i++) {
    int64_t s = prof_trace_at(t, i)->start_ns;
    if (s < lo) lo = s;
  }
  if (!n) lo = 0;
  int64_t epoch = lo + offset;
  return epoch - ((epoch % 1000000) + 1000000) % 1000000; /* floor to the ms, also below 0 */
}

int64_t chrome_base_epoch(const prof_trace *t) {
  return base_epoch(t, prof_trace_count(t), prof_trace_epoch_offset(t));
}

static void write_header(chrome_ctx *c) {
  json_out *o = &c->o;
  json_fmt(o, "{\n  \"" KINETO_SCHEMA_VERSION "\": %d,\n  ", KINETO_SCHEMA_VERSION_VALUE);
  chrome_write_devices(c);
  json_raw(o, "  \"" ATTNPROF_KEY_VERSION "\": \"" ATTNPROF_VERSION "\",\n");
  json_fmt(o, "  \"" ATTNPROF_KEY_DROPPED "\": %lld,\n", (long long)prof_trace_dropped(c->t));
  json_raw(o, "  \"" KINETO_DISPLAY_TIME_UNIT "\": \"" KINETO_DISPLAY_TIME_UNIT_VALUE "\",\n");
  json_fmt(o, "  \"" KINETO_BASE_TIME_NS "\": %lld,\n", (long long)c->base_epoch);
  json_raw(o, "  \"" KINETO_TRACE_EVENTS "\": [");
}

typedef struct {
  int64_t start, end;
  int rank; /* at equal spans the user range first: it is the outer slice */
  int64_t idx;
} time_key;

static int cmp_time(const void *pa, const void *pb) {
  const time_key *a = pa, *b = pb;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  if (a->end != b->end) return a->end > b->end ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Events in time order, longest first at equal starts: viewers nest slices
 * of one thread by the order they meet them, and the collector appends a
 * range only when it closes, after what it contains. */
static int64_t *time_order(const prof_trace *t, size_t n) {
  time_key *keys = malloc((n ? n : 1) * sizeof *keys);
  int64_t *order = malloc((n ? n : 1) * sizeof *order);
  if (keys && order) {
    for (size_t i = 0; i < n; i++) {
      const prof_event *e = prof_trace_at(t, i);
      keys[i] = (time_key){e->start_ns, e->start_ns + e->dur_ns, e->cat != PROF_CAT_USER_ANNOTATION,
                           (int64_t)i};
    }
    if (n > 1) qsort(keys, n, sizeof *keys, cmp_time);
    for (size_t i = 0; i < n; i++) order[i] = keys[i].idx;
  } else {
    free(order), order = NULL;
  }
  free(keys);
  return order;
}

static int write_body(chrome_ctx *c, const char *path) {
  int64_t *order = time_order(c->t, c->n);
  if (!order) return ENOMEM;
  write_header(c);
  for (size_t i = 0; i < c->n && !c->o.err; i++) chrome_write_event(c, (size_t)order[i]);
  free(order);
  if (chrome_write_metadata(c)) return ENOMEM;
  json_raw(&c->o, "\n  ],\n  ");
  json_key(&c->o, KINETO_TRACE_NAME);
  json_str(&c->o, path);
  json_raw(&c->o, "\n}\n");
  json_flush(&c->o);
  if (!c->o.err && fflush(c->o.f)) c->o.err = errno ? errno : EIO;
  return c->o.err;
}

/* Flow ends: which events get an "s" (a launch with GPU work) or an "f". */
static int link_flows(chrome_ctx *c) {
  c->launch = malloc((c->n ? c->n : 1) * sizeof *c->launch);
  c->launches_gpu = calloc(c->n ? c->n : 1, 1);
  if (!c->launch || !c->launches_gpu || prof_link_launches(c->t, c->n, c->launch)) return ENOMEM;
  for (size_t i = 0; i < c->n; i++)
    if (c->launch[i] >= 0) c->launches_gpu[c->launch[i]] = 1;
  return 0;
}

static char *tmp_path(const char *path) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 5);
  if (tmp) memcpy(tmp, path, n), memcpy(tmp + n, ".tmp", 5);
  return tmp;
}

/* Writes c's trace to tmp and renames it to path; an errno value, or 0. */
static int write_file(chrome_ctx *c, const char *tmp, const char *path) {
  int err = link_flows(c);
  if (!err && !(c->o.f = fopen(tmp, "w"))) err = errno;
  if (err) return err;
  err = write_body(c, path);
  if (fclose(c->o.f) && !err) err = errno ? errno : EIO;
  if (!err && rename(tmp, path)) err = errno;
  if (err) unlink(tmp);
  return err;
}

static void ctx_init(chrome_ctx *c, const prof_trace *t) {
  c->t = t;
  c->n = prof_trace_count(t);
  c->offset = prof_trace_epoch_offset(t);
  c->base_epoch = base_epoch(t, c->n, c->offset);
  c->first = 1;
  c->fp_cache = chrome_fp_cache_create(); /* NULL: no cache, the same output */
}

static void ctx_free(chrome_ctx *c) {
  if (c) free(c->launch), free(c->launches_gpu), free(c->fp_cache);
  free(c);
}

int chrome_write_to(const prof_trace *t, FILE *f, const char *path) {
  chrome_ctx *c = calloc(1, sizeof *c);
  if (!c) return ENOMEM;
  ctx_init(c, t);
  c->o.f = f;
  int err = link_flows(c);
  if (!err) err = write_body(c, path);
  ctx_free(c);
  return err;
}

attn_status prof_write_chrome_trace(const prof_trace *t, const char *path) {
  if (!t || !path || !*path)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "no trace or no path to write it to");
  chrome_ctx *c = calloc(1, sizeof *c);
  char *tmp = tmp_path(path);
  int err = ENOMEM;
  if (c && tmp) {
    ctx_init(c, t);
    err = write_file(c, tmp, path);
  }
  ctx_free(c);
  free(tmp);
  if (err)
    return attn_fail(ATTN_STATUS_IO_ERROR, "cannot write trace '%s': %s", path, strerror(err));
  return ATTN_STATUS_OK;
}

attn_status prof_check_writable(const char *path) {
  if (!path || !*path) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "empty trace path");
  struct stat st;
  if (!stat(path, &st) && S_ISDIR(st.st_mode))
    return attn_fail(ATTN_STATUS_IO_ERROR, "cannot write trace '%s': %s", path, strerror(EISDIR));
  char *tmp = tmp_path(path);
  if (!tmp) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory");
  /* The writer creates PATH.tmp; make (and remove) it now, never touching PATH.
   * A stale PATH.tmp from an earlier crash is fine if we may replace it. */
  int err = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd >= 0) {
    close(fd);
    unlink(tmp);
  } else if (errno != EEXIST || access(tmp, W_OK)) {
    err = errno;
  }
  free(tmp);
  if (err)
    return attn_fail(ATTN_STATUS_IO_ERROR, "cannot write trace '%s': %s", path, strerror(err));
  return ATTN_STATUS_OK;
}
