/* CUPTI activity buffers and their conversion (see cupti_buffers.h).
 *
 * Memory is bounded by the pool: at most max_buffers buffers of buffer_bytes
 * exist; a completed buffer is converted and goes back to the free list. When
 * CUPTI asks while all are in use, it gets none and drops records, which it
 * counts (cuptiActivityGetNumDroppedRecords) and we add to the trace's dropped
 * count: lost, never silently. With a sink the converted events also leave
 * memory chunk by chunk, so a program of any length is traced in bounded
 * memory.
 *
 * Deferral (prof_session_opts.defer_mb; docs/design/profiler-cost.md): a
 * completed buffer is kept as CUPTI wrote it, with the launch and sync records
 * the callbacks wrote meanwhile copied raw beside it, and nothing is converted
 * or written until the session stops; then the kept steps are replayed in
 * order, the same calls as streaming would have made, so the output is the
 * same. Past the cap everything kept is replayed and streaming resumes.
 *
 * Locking: pool_mu guards the free list and its counts; conv_mu everything
 * else (the converter, the target, the stats). CUPTI asks for buffers on the
 * program's launching thread, so that path takes pool_mu only: a launch
 * never waits behind a chunk being written. CUPTI calls the completion callback
 * from its own thread and from whichever thread flushes. */
#include "prof/collect/cupti_buffers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof/collect/cupti_api_cb.h"
#include "prof/collect/cupti_records.h"

enum { MAX_DEVICES = 64 };

typedef struct free_buf {
  struct free_buf *next;
} free_buf;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static free_buf *pool_free;
static size_t buf_bytes = 2u << 20, max_buffers = 32, n_allocated;
static int64_t n_refused;

static pthread_mutex_t conv_mu = PTHREAD_MUTEX_INITIALIZER;
static const cupti_fns *fns;
static cupti_conv *conv;
static prof_trace *target; /* the session trace, or the chunk in progress */
static cupti_sink_fn sink;
static void *sink_ctx;
static size_t chunk_events = 1u << 16;
static prof_device devices[MAX_DEVICES];
static int n_devices;
static cupti_stats st;

/* One completion (or hand-off, buffer NULL) kept for later (see the top). */
typedef struct held {
  struct held *next;
  uint8_t *buffer;
  size_t valid, dropped;
  int64_t calls_lost;
  uint8_t *calls; /* the callbacks' records drained with it, raw, 8-aligned */
  size_t calls_bytes, calls_cap;
} held;
static size_t defer_cap, defer_bytes; /* bytes: the cap, and what is kept */
static int defer_over;                /* the cap was reached this session */
static held *held_head, **held_tail = &held_head, *holding;
static size_t n_held; /* buffers kept: the pool may allocate that many more */

static pthread_mutex_t name_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *rt_names[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static const char *drv_names[CUPTI_DRIVER_TRACE_CBID_SIZE];

void cupti_buffers_configure(const cupti_fns *f, const prof_session_opts *o) {
  pthread_mutex_lock(&pool_mu);
  /* The size is fixed once buffers exist: the free list holds one size. */
  if (!n_allocated) buf_bytes = (o->buffer_kb ? o->buffer_kb : 2048) << 10;
  max_buffers = o->max_buffers ? o->max_buffers : 32;
  pthread_mutex_unlock(&pool_mu);
  pthread_mutex_lock(&conv_mu);
  defer_cap = o->defer_mb << 20;
  fns = f;
  if (!conv) conv = cupti_conv_create(cupti_cbid_name);
  st.cupti_version = f->version;
  st.buffer_bytes = (int64_t)buf_bytes;
  pthread_mutex_unlock(&conv_mu);
}

void cupti_buffers_set_clock_offset(int64_t offset) {
  pthread_mutex_lock(&conv_mu);
  if (conv) cupti_conv_set_clock_offset(conv, offset);
  pthread_mutex_unlock(&conv_mu);
}

/* ---- names ---------------------------------------------------------------- */

const char *cupti_cbid_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  int rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const char **slot = rt ? (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? &rt_names[cbid] : NULL)
                         : (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? &drv_names[cbid] : NULL);
  if (!slot || !fns) return NULL;
  pthread_mutex_lock(&name_mu);
  const char *raw = NULL;
  if (!*slot && fns->GetCallbackName(domain, cbid, &raw) == CUPTI_SUCCESS && raw) {
    char buf[256];
    *slot = strdup(cupti_strip_version(raw, buf, sizeof buf)); /* kept for the process */
  }
  const char *name = *slot;
  pthread_mutex_unlock(&name_mu);
  return name;
}

/* ---- the pool --------------------------------------------------------------- */

void CUPTIAPI cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *max_records = 0; /* as many as fit */
  pthread_mutex_lock(&pool_mu);
  void *b = pool_free;
  if (b) {
    pool_free = pool_free->next;
  } else if (n_allocated < max_buffers + n_held && (b = aligned_alloc(8, buf_bytes))) {
    n_allocated++;
  }
  size_t bytes = buf_bytes;
  if (!b) n_refused++;
  pthread_mutex_unlock(&pool_mu);
  *buffer = b;
  *size = b ? bytes : 0;
}

static void pool_give(uint8_t *b) {
  free_buf *f = (free_buf *)(void *)b;
  pthread_mutex_lock(&pool_mu);
  f->next = pool_free;
  pool_free = f;
  pthread_mutex_unlock(&pool_mu);
}

/* ---- targets ------------------------------------------------------------------ */

static void lose(int64_t n) {
  if (target) prof_trace_add_dropped(target, n);
}

static void add_devices_to(prof_trace *t) {
  for (int i = 0; i < n_devices; i++) prof_trace_add_device(t, &devices[i]);
}

static void take_record(const CUpti_Activity *rec);
static int hold_locked(uint8_t *buffer, size_t valid, size_t dropped);
static void replay_held_locked(void);

/* Under conv_mu: the launch calls recorded through the callback API so far,
 * and the ones the pool had no room for. */
static void drain_api_locked(void) {
  cupti_api_cb_drain(take_record);
  int64_t n = cupti_api_cb_take_lost();
  if (n) st.dropped_by_cupti += n, lose(n);
}

/* Under conv_mu: with a sink, gives it the chunk and starts the next. */
static void hand_off_locked(void) {
  if (!sink || !target) return;
  prof_trace *chunk = target;
  prof_trace_create(&target);
  if (target) add_devices_to(target);
  sink(chunk, sink_ctx);
}

void cupti_buffers_hand_off(void) {
  pthread_mutex_lock(&conv_mu);
  if (hold_locked(NULL, 0, 0)) {
    pthread_mutex_unlock(&conv_mu);
    return;
  }
  drain_api_locked();
  if (target && prof_trace_count(target)) hand_off_locked();
  pthread_mutex_unlock(&conv_mu);
}

int cupti_buffers_set_target(prof_trace *t) {
  pthread_mutex_lock(&conv_mu);
  if (!t) replay_held_locked(); /* the session ends: what was kept, then */
  if (!t) drain_api_locked();   /* its last launch calls */
  if (t) defer_over = 0;
  if (sink) {
    if (!t && target) { /* the session ends: the last chunk goes to the sink */
      prof_trace *chunk = target;
      target = NULL;
      sink(chunk, sink_ctx);
    } else if (t && !target) {
      prof_trace_create(&target);
    }
  } else {
    target = t;
  }
  if (target) add_devices_to(target);
  int ok = !t || target;
  pthread_mutex_unlock(&conv_mu);
  return ok ? 0 : -1;
}

void cupti_buffers_set_sink(cupti_sink_fn fn, void *ctx, size_t chunk) {
  pthread_mutex_lock(&conv_mu);
  sink = fn;
  sink_ctx = ctx;
  if (chunk) chunk_events = chunk;
  pthread_mutex_unlock(&conv_mu);
}

void cupti_buffers_add_device(const prof_device *d) {
  pthread_mutex_lock(&conv_mu);
  int i = 0;
  while (i < n_devices && devices[i].id != d->id) i++;
  if (i < MAX_DEVICES) {
    devices[i] = *d;
    if (i == n_devices) n_devices++;
    if (target) prof_trace_add_device(target, d);
  }
  pthread_mutex_unlock(&conv_mu);
}

void cupti_buffers_stats(cupti_stats *out) {
  pthread_mutex_lock(&conv_mu);
  *out = st;
  out->open_ranges = conv ? (int64_t)cupti_conv_open_ranges(conv) : 0;
  pthread_mutex_unlock(&conv_mu);
  pthread_mutex_lock(&pool_mu);
  out->buffers_allocated = (int64_t)n_allocated;
  out->buffers_refused = n_refused;
  pthread_mutex_unlock(&pool_mu);
}

/* ---- completion ----------------------------------------------------------------- */

/* A GPU record whose end never came (a forced flush of work still running)
 * would carry a garbage duration: it is counted as lost instead. */
static int complete(const prof_event *e) {
  return e->cat == PROF_CAT_USER_ANNOTATION || e->cat == PROF_CAT_CUDA_RUNTIME ||
         e->cat == PROF_CAT_CUDA_DRIVER || (e->start_ns > 0 && e->dur_ns >= 0);
}

static void take_record(const CUpti_Activity *rec) {
  prof_event e;
  st.records++;
  int r = cupti_conv_record(conv, rec, &e);
  if (r < 0) {
    st.unmatched_range_ends++;
    lose(1);
  } else if (r > 0 && !complete(&e)) {
    st.incomplete++;
    lose(1);
  } else if (r > 0 && target) {
    if (!prof_trace_append(target, &e, NULL)) st.events++;
  }
}

/* Under conv_mu: what a completed buffer gives, in streaming's order; a kept
 * one replays the same steps (replay_one). */
static void convert_locked(uint8_t *buffer, size_t valid) {
  CUpti_Activity *rec = NULL;
  while (fns && conv && valid && fns->ActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    take_record(rec);
}

static void count_dropped_locked(size_t dropped) {
  if (!dropped) return;
  st.dropped_by_cupti += (int64_t)dropped;
  lose((int64_t)dropped);
}

static void chunk_full_locked(void) {
  if (sink && target && prof_trace_count(target) >= chunk_events) hand_off_locked();
}

/* ---- deferral (see the top) ---------------------------------------------------- */

/* cupti_api_cb_drain's taker while holding: the record copied as it is. */
static void keep_call(const CUpti_Activity *rec) {
  size_t n = rec->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
                 ? sizeof(CUpti_ActivitySynchronization2)
                 : sizeof(CUpti_ActivityAPI);
  n = (n + 7) & ~(size_t)7;
  held *h = holding;
  if (h->calls_bytes + n > h->calls_cap) {
    size_t cap = h->calls_cap ? 2 * h->calls_cap : 64u << 10;
    uint8_t *p = realloc(h->calls, cap);
    if (!p) {
      h->calls_lost++; /* counted as lost, as the callbacks' own pool does */
      return;
    }
    h->calls = p, h->calls_cap = cap;
  }
  memcpy(h->calls + h->calls_bytes, rec, n);
  h->calls_bytes += n;
}

/* Under conv_mu: keeps this completion (or hand-off) for the session's end;
 * 0 when not deferring, or the cap is reached (everything kept is replayed
 * then, and this one goes the streaming way). */
static int hold_locked(uint8_t *buffer, size_t valid, size_t dropped) {
  static int said;
  /* With no session to write into, nothing is kept for a later one. */
  if (!defer_cap || defer_over || !target) return 0;
  held *h = defer_bytes + (buffer ? buf_bytes : 0) <= defer_cap ? calloc(1, sizeof *h) : NULL;
  if (!h) {
    if (!said++)
      fprintf(stderr,
              "attnprof: the deferral's %zu MB are full: the trace is written "
              "during the run from here on\n",
              defer_cap >> 20);
    defer_over = 1;
    replay_held_locked();
    return 0;
  }
  h->buffer = buffer, h->valid = valid, h->dropped = dropped;
  holding = h;
  cupti_api_cb_drain(keep_call);
  holding = NULL;
  h->calls_lost += cupti_api_cb_take_lost();
  *held_tail = h, held_tail = &h->next;
  defer_bytes += (buffer ? buf_bytes : 0) + h->calls_cap;
  if (buffer) {
    st.buffers_held++;
    pthread_mutex_lock(&pool_mu);
    n_held++;
    pthread_mutex_unlock(&pool_mu);
  }
  return 1;
}

/* Under conv_mu: one kept step, as cupti_buffer_completed (or hand_off)
 * would have done it then. */
static void replay_one(held *h) {
  if (h->buffer) convert_locked(h->buffer, h->valid);
  for (size_t at = 0; at < h->calls_bytes;) {
    const CUpti_Activity *rec = (const CUpti_Activity *)(const void *)(h->calls + at);
    take_record(rec);
    at +=
        ((rec->kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ? sizeof(CUpti_ActivitySynchronization2)
                                                           : sizeof(CUpti_ActivityAPI)) +
         7) &
        ~(size_t)7;
  }
  if (h->calls_lost) st.dropped_by_cupti += h->calls_lost, lose(h->calls_lost);
  if (h->buffer) {
    count_dropped_locked(h->dropped);
    chunk_full_locked();
  } else if (target && prof_trace_count(target)) {
    hand_off_locked();
  }
}

static void replay_held_locked(void) {
  while (held_head) {
    held *h = held_head;
    held_head = h->next;
    replay_one(h);
    if (h->buffer) {
      pool_give(h->buffer);
      pthread_mutex_lock(&pool_mu);
      n_held--;
      pthread_mutex_unlock(&pool_mu);
    }
    free(h->calls);
    free(h);
  }
  held_tail = &held_head;
  defer_bytes = 0;
}

void CUPTIAPI cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                     size_t valid) {
  (void)size;
  pthread_mutex_lock(&conv_mu);
  st.buffers++;
  size_t dropped = 0;
  if (fns && fns->ActivityGetNumDroppedRecords(ctx, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  if (buffer && hold_locked(buffer, valid, dropped)) {
    pthread_mutex_unlock(&conv_mu);
    return;
  }
  convert_locked(buffer, valid);
  drain_api_locked();
  count_dropped_locked(dropped);
  chunk_full_locked();
  pthread_mutex_unlock(&conv_mu);
  if (buffer) pool_give(buffer);
}
