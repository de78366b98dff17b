/* The in-memory event model: prof_trace and the category/kind name tables.
 *
 * Events live in chunks that never move, so a `const prof_event *` stays
 * valid while collectors keep appending from other threads. Chunk k holds
 * BASE << k events (geometric, so the chunk table is a fixed array and an
 * index maps to its chunk with one bit scan, no lock). Appends take the
 * trace's mutex; the count is published with release order after the event
 * is written, so a reader that sees index i < count sees event i whole. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"
#include "core/error.h"
#include "prof/model/strpool.h"
#include "prof/model/trace_borrow.h"
#include "prof/model/trace_cache.h"

enum { BASE = 256, MAX_CHUNKS = 40 };

struct prof_trace {
  pthread_mutex_t mu;
  prof_event *chunks[MAX_CHUNKS];
  _Atomic size_t count;
  _Atomic int64_t dropped;
  prof_strpool names;
  prof_device **devices; /* each allocated on its own: pointers stay valid */
  size_t n_devices, cap_devices;
  int64_t pid;
  const char *process_name; /* interned */
  int64_t epoch_offset_ns;
  prof_trace_cache cache; /* the analyses' shared nesting (trace_cache.h) */
};

/* ---- names ---------------------------------------------------------------- */

static const char *const cat_names[] = {
#define PROF_CAT_STR(name, str) str,
    PROF_CAT_MAP(PROF_CAT_STR)
#undef PROF_CAT_STR
};

static const char *const kind_names[] = {
#define PROF_KIND_STR(name, str) str,
    PROF_KIND_MAP(PROF_KIND_STR)
#undef PROF_KIND_STR
};

const char *prof_cat_name(prof_cat c) {
  return (unsigned)c < PROF_CAT_COUNT ? cat_names[c] : cat_names[PROF_CAT_OTHER];
}

prof_cat prof_cat_from_name(const char *name) {
  for (int c = 0; name && c < PROF_CAT_COUNT; c++)
    if (!strcmp(cat_names[c], name)) return (prof_cat)c;
  return PROF_CAT_OTHER;
}

const char *prof_kind_name(prof_kind k) {
  return (unsigned)k < PROF_KIND_COUNT ? kind_names[k] : kind_names[PROF_KIND_OTHER];
}

attn_status prof_kind_from_name(const char *name, prof_kind *out) {
  for (int k = 0; name && k < PROF_KIND_COUNT; k++)
    if (!strcmp(kind_names[k], name)) return *out = (prof_kind)k, ATTN_STATUS_OK;
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "op kind '%s': accepted are kernel, memcpy, memset, "
                   "gemm, elementwise, copy, softmax, cast, fused, comm, other",
                   name ? name : "(null)");
}

prof_event prof_event_init(prof_cat cat, const char *name) {
  prof_event e;
  memset(&e, 0, sizeof e);
  e.cat = cat;
  e.kind = PROF_KIND_OTHER;
  e.name = name;
  e.device = -1;
  e.stream = -1;
  e.cbid = -1;
  e.memcpy_kind = PROF_MEMCPY_UNKNOWN;
  e.fp.occupancy_pct_in_file = -1;
  return e;
}

/* ---- storage -------------------------------------------------------------- */

attn_status prof_trace_create(prof_trace **out) {
  prof_trace *t = calloc(1, sizeof *t);
  *out = NULL;
  if (!t || pthread_mutex_init(&t->mu, NULL)) {
    free(t);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for a trace");
  }
  atomic_init(&t->count, 0);
  atomic_init(&t->dropped, 0);
  prof_strpool_init(&t->names);
  *out = t;
  return ATTN_STATUS_OK;
}

void prof_trace_destroy(prof_trace *t) {
  if (!t) return;
  if (t->cache.p && t->cache.drop) t->cache.drop(t->cache.p);
  for (int k = 0; k < MAX_CHUNKS; k++) free(t->chunks[k]);
  for (size_t i = 0; i < t->n_devices; i++) free(t->devices[i]);
  free(t->devices);
  prof_strpool_free(&t->names);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* Chunk of index i, and i's offset in it. */
static int chunk_of(size_t i, size_t *offset) {
  size_t q = i / BASE + 1;
  int k = 63 - __builtin_clzll((unsigned long long)q);
  *offset = i - (size_t)BASE * (((size_t)1 << k) - 1);
  return k;
}

attn_status prof_trace_intern(prof_trace *t, const char *s, const char **out) {
  *out = NULL;
  if (!s) return ATTN_STATUS_OK;
  pthread_mutex_lock(&t->mu);
  *out = prof_strpool_intern(&t->names, s);
  pthread_mutex_unlock(&t->mu);
  return *out ? ATTN_STATUS_OK : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for a name");
}

static int64_t append(prof_trace *t, const prof_event *ev, int intern) {
  int64_t idx = -1;
  pthread_mutex_lock(&t->mu);
  size_t i = atomic_load_explicit(&t->count, memory_order_relaxed), off;
  int k = chunk_of(i, &off);
  if (k < MAX_CHUNKS && !t->chunks[k]) t->chunks[k] = malloc(((size_t)BASE << k) * sizeof *ev);
  const char *name = ev->name && intern ? prof_strpool_intern(&t->names, ev->name) : ev->name;
  if (k < MAX_CHUNKS && t->chunks[k] && (name || !ev->name)) {
    t->chunks[k][off] = *ev;
    t->chunks[k][off].name = name;
    atomic_store_explicit(&t->count, i + 1, memory_order_release);
    idx = (int64_t)i;
  }
  pthread_mutex_unlock(&t->mu);
  if (idx < 0) prof_trace_add_dropped(t, 1); /* out of memory: counted, not hidden */
  return idx;
}

attn_status prof_trace_append(prof_trace *t, const prof_event *ev, int64_t *index) {
  int64_t i = append(t, ev, 1);
  if (i < 0)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for an event (counted as dropped)");
  if (index) *index = i;
  return ATTN_STATUS_OK;
}

int64_t prof_trace_append_borrowed(prof_trace *t, const prof_event *ev) { return append(t, ev, 0); }

size_t prof_trace_count(const prof_trace *t) {
  return atomic_load_explicit(&((prof_trace *)t)->count, memory_order_acquire);
}

const prof_event *prof_trace_at(const prof_trace *t, size_t i) {
  if (i >= prof_trace_count(t)) return NULL;
  size_t off;
  int k = chunk_of(i, &off);
  return &t->chunks[k][off];
}

prof_trace_cache *prof_trace_cache_of(const prof_trace *t) {
  return &((prof_trace *)t)->cache; /* what analyses derive, not the events: const holds */
}

/* ---- devices, dropped records, process ------------------------------------ */

/* Room for one more device pointer; 0 or -1 (out of memory). */
static int reserve_device(prof_trace *t) {
  if (t->n_devices < t->cap_devices) return 0;
  size_t cap = t->cap_devices ? 2 * t->cap_devices : 8;
  prof_device **d = realloc(t->devices, cap * sizeof *d);
  if (!d) return -1;
  t->devices = d;
  t->cap_devices = cap;
  return 0;
}

attn_status prof_trace_add_device(prof_trace *t, const prof_device *d) {
  int kept = 1;
  pthread_mutex_lock(&t->mu);
  size_t i = 0;
  while (i < t->n_devices && t->devices[i]->id != d->id) i++;
  if (i < t->n_devices) {
    *t->devices[i] = *d; /* the same device again: the newer properties win */
  } else if (!reserve_device(t) && (t->devices[i] = malloc(sizeof *d))) {
    *t->devices[i] = *d;
    t->n_devices++;
  } else {
    kept = 0;
  }
  pthread_mutex_unlock(&t->mu);
  return kept ? ATTN_STATUS_OK : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for a device");
}

size_t prof_trace_device_count(const prof_trace *t) { return t->n_devices; }

const prof_device *prof_trace_device(const prof_trace *t, size_t i) {
  return i < t->n_devices ? t->devices[i] : NULL;
}

void prof_trace_add_dropped(prof_trace *t, int64_t n) {
  atomic_fetch_add_explicit(&t->dropped, n, memory_order_relaxed);
}

int64_t prof_trace_dropped(const prof_trace *t) {
  return atomic_load_explicit(&((prof_trace *)t)->dropped, memory_order_relaxed);
}

attn_status prof_trace_set_process(prof_trace *t, int64_t pid, const char *name) {
  const char *n = NULL;
  attn_status st = prof_trace_intern(t, name, &n);
  pthread_mutex_lock(&t->mu);
  t->pid = pid;
  t->process_name = n;
  pthread_mutex_unlock(&t->mu);
  return st;
}

int64_t prof_trace_process_id(const prof_trace *t) { return t->pid; }
const char *prof_trace_process_name(const prof_trace *t) { return t->process_name; }

void prof_trace_set_epoch_offset(prof_trace *t, int64_t epoch_minus_clock_ns) {
  t->epoch_offset_ns = epoch_minus_clock_ns;
}

int64_t prof_trace_epoch_offset(const prof_trace *t) { return t->epoch_offset_ns; }
