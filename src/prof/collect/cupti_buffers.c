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
 * Locking: pool_mu guards the free list and its counts; conv_mu everything
 * else (the converter, the target, the stats). CUPTI asks for buffers on the
 * program's launching thread, so that path takes pool_mu only: a launch
 * never waits behind a chunk being written. CUPTI calls the completion callback
 * from its own thread and from whichever thread flushes. */
#include "prof/collect/cupti_buffers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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
static int discard; /* bench only: records are counted, not converted */
static int starter_tid;

static pthread_mutex_t name_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *rt_names[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static const char *drv_names[CUPTI_DRIVER_TRACE_CBID_SIZE];

static size_t env_size(const char *name, size_t fallback, size_t lo, size_t hi) {
  const char *v = getenv(name);
  char *end;
  unsigned long long n = v ? strtoull(v, &end, 10) : 0;
  return v && *v && !*end && n >= lo && n <= hi ? (size_t)n : fallback;
}

void cupti_buffers_configure(const cupti_fns *f) {
  pthread_mutex_lock(&pool_mu);
  /* The size is fixed once buffers exist: the free list holds one size. */
  if (!n_allocated) buf_bytes = env_size("ATTNPROF_CUPTI_BUFFER_KB", 2048, 16, 1 << 20) << 10;
  max_buffers = env_size("ATTNPROF_CUPTI_MAX_BUFFERS", 32, 1, 1 << 16);
  pthread_mutex_unlock(&pool_mu);
  pthread_mutex_lock(&conv_mu);
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
  } else if (n_allocated < max_buffers && (b = aligned_alloc(8, buf_bytes))) {
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
  target = prof_trace_create();
  if (target) add_devices_to(target);
  sink(chunk, sink_ctx);
}

void cupti_buffers_hand_off(void) {
  pthread_mutex_lock(&conv_mu);
  drain_api_locked();
  if (target && prof_trace_count(target)) hand_off_locked();
  pthread_mutex_unlock(&conv_mu);
}

int cupti_buffers_set_target(prof_trace *t) {
  pthread_mutex_lock(&conv_mu);
  if (!t) drain_api_locked(); /* the session ends: its last launch calls */
  if (sink) {
    if (!t && target) { /* the session ends: the last chunk goes to the sink */
      prof_trace *chunk = target;
      target = NULL;
      sink(chunk, sink_ctx);
    } else if (t && !target) {
      target = prof_trace_create();
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

void cupti_buffers_set_starter(int tid) {
  pthread_mutex_lock(&conv_mu);
  starter_tid = tid;
  pthread_mutex_unlock(&conv_mu);
}

void cupti_buffers_set_discard(int on) {
  pthread_mutex_lock(&conv_mu);
  discard = on;
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
  if (discard) return;
  int r = cupti_conv_record(conv, rec, &e);
  if (r < 0) {
    st.unmatched_range_ends++;
    lose(1);
  } else if (r > 0 && !complete(&e)) {
    st.incomplete++;
    lose(1);
  } else if (r > 0 && target) {
    if (prof_trace_append(target, &e) >= 0) st.events++;
  }
}

void CUPTIAPI cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                     size_t valid) {
  (void)size;
  pthread_mutex_lock(&conv_mu);
  st.buffers++;
  if (starter_tid && (int)syscall(SYS_gettid) == starter_tid) st.buffers_on_starter++;
  CUpti_Activity *rec = NULL;
  while (fns && conv && valid &&
         fns->ActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    take_record(rec);
  drain_api_locked();
  size_t dropped = 0;
  if (fns && fns->ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
    st.dropped_by_cupti += (int64_t)dropped;
    lose((int64_t)dropped);
  }
  if (sink && target && prof_trace_count(target) >= chunk_events) hand_off_locked();
  pthread_mutex_unlock(&conv_mu);
  if (buffer) pool_give(buffer);
}
