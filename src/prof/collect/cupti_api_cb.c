/* Launch calls through CUPTI's callback API (see cupti_api_cb.h).
 *
 * Each thread writes into a block of its own, with no lock: the record, then
 * the block's count (release). The drainer, serialized by its caller, reads
 * up to the count (acquire). A full block, or the block of a thread that
 * ended, is detached; once read to the end it goes back to the free list.
 * Memory is bounded (MAX_BLOCKS); a call that finds the pool exhausted is
 * counted as lost, never silently, as CUPTI counts its own dropped records.
 *
 * Timing: the enter callback stamps the start into CUPTI's per-call slot
 * (correlationData), the exit callback writes the record. A driver call made
 * inside a recorded runtime call is left out: the runtime call is the launch
 * its GPU work is correlated with, as in CUPTI's own activity records (every
 * runtime launch and sync makes one such driver call: 4 callbacks a launch);
 * the driver's ids stay on for programs that call it themselves (Triton's).
 *
 * Sync records (the default; PROF_SYNC_FROM_KIND leaves them to CUPTI's
 * kind): the exit of a successful sync call also writes the
 * CUpti_ActivitySynchronization2 record that CUPTI's SYNCHRONIZATION kind
 * would have (type from the call, its context, the stream it names, the
 * call's correlation id), timed by the call itself. The
 * kind costs on every launch (docs/design/profiler-cost.md); these cost only at the
 * syncs, which block anyway, so they go to one list under a lock. */
#include "prof/collect/cupti_api_cb.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attnprof/prof.h"
#include "prof/collect/cupti_lib.h"

enum { BLOCK_RECS = 2048, MAX_BLOCKS = 512 }; /* 80 KB each, 40 MB at most */

typedef struct api_block {
  struct api_block *next; /* in the live list or the free list */
  atomic_size_t count;    /* records written (the owner) */
  size_t read;            /* records drained (the drainer) */
  atomic_int detached;    /* the owner writes no more */
  CUpti_ActivityAPI rec[BLOCK_RECS];
} api_block;

static pthread_mutex_t blk_mu = PTHREAD_MUTEX_INITIALIZER;
static api_block *live, *free_list;
static size_t n_blocks;
static atomic_llong lost;
static int64_t clock_offset;
static atomic_uint pid;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static _Thread_local api_block *mine;
static _Thread_local uint32_t my_tid;
static _Thread_local int rt_depth; /* recorded runtime calls open on this thread */
/* Bumped at every switch on or off: a call that was open across a switch
 * must not leave this thread's depth counting (its enter or exit was missed). */
static atomic_uint generation;
static _Thread_local unsigned my_generation;

/* Sync calls by callback id: the CUpti_ActivitySynchronizationType, and
 * whether the first parameter names a stream (SYNC_STREAM) that is the
 * per-thread default when it is 0 (SYNC_PTSZ). */
enum { SYNC_STREAM = 16, SYNC_PTSZ = 32, MAX_SYNCS = 1 << 20 };
static uint8_t sync_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE], sync_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];
static const cupti_fns *_Atomic sync_fns; /* non-NULL: sync records are written */
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_ActivitySynchronization2 *syncs;
static size_t n_syncs, cap_syncs;

static void on_thread_exit(void *b) { atomic_store(&((api_block *)b)->detached, 1); }
static void after_fork(void) { atomic_store(&pid, (unsigned)getpid()); }

static void make_key(void) {
  pthread_key_create(&exit_key, on_thread_exit);
  pthread_atfork(NULL, NULL, after_fork);
  after_fork();
}

void cupti_api_cb_set_clock_offset(int64_t offset) { clock_offset = offset; }

void cupti_api_cb_switched(void) { atomic_fetch_add(&generation, 1); }

int64_t cupti_api_cb_take_lost(void) { return atomic_exchange(&lost, 0); }

static api_block *new_block(void) {
  pthread_once(&key_once, make_key);
  pthread_mutex_lock(&blk_mu);
  api_block *b = free_list;
  if (b) free_list = b->next;
  else if (n_blocks < MAX_BLOCKS && (b = malloc(sizeof *b))) n_blocks++;
  if (b) {
    atomic_store(&b->count, 0);
    b->read = 0;
    atomic_store(&b->detached, 0);
    b->next = live;
    live = b;
  }
  pthread_mutex_unlock(&blk_mu);
  if (b) pthread_setspecific(exit_key, b);
  return b;
}

/* This thread's block with room for one more record, or NULL (pool exhausted). */
static api_block *room(void) {
  api_block *b = mine;
  if (b && atomic_load_explicit(&b->count, memory_order_relaxed) == BLOCK_RECS) {
    atomic_store(&b->detached, 1);
    b = mine = NULL;
  }
  if (!b) b = mine = new_block();
  return b;
}

void cupti_api_cb_classify(CUpti_CallbackDomain dom, uint32_t cbid, const char *name) {
  static const struct {
    const char *prefix;
    uint8_t type;
  } calls[] = {
      {"cudaDeviceSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE},
      {"cuCtxSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE},
      {"cudaEventSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE},
      {"cuEventSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE},
      {"cudaStreamSynchronize",
       CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE | SYNC_STREAM},
      {"cuStreamSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE | SYNC_STREAM},
      {"cudaStreamWaitEvent", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT | SYNC_STREAM},
      {"cuStreamWaitEvent", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT | SYNC_STREAM}};
  int rt = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
  uint8_t *slot = rt ? (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? &sync_rt[cbid] : NULL)
                     : (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? &sync_drv[cbid] : NULL);
  if (!slot) return;
  *slot = 0;
  for (size_t i = 0; name && i < sizeof calls / sizeof calls[0]; i++)
    if (!strncmp(name, calls[i].prefix, strlen(calls[i].prefix)))
      *slot = (uint8_t)(calls[i].type | (strstr(name, "_ptsz") ? SYNC_PTSZ : 0));
}

void cupti_api_cb_set_sync(const cupti_fns *f) { atomic_store(&sync_fns, f); }

/* The sync record of a successful sync call (see the top of the file). */
static void add_sync(const cupti_fns *f, uint8_t how, const CUpti_CallbackData *d, uint64_t start,
                     uint64_t end) {
  CUpti_ActivitySynchronization2 s;
  memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = (CUpti_ActivitySynchronizationType)(how & 15);
  s.start = start;
  s.end = end;
  s.correlationId = d->correlationId;
  s.contextId = s.streamId = s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.cudaEventSyncId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  if (d->context) f->GetContextId(d->context, &s.contextId);
  if ((how & SYNC_STREAM) && d->functionParams) {
    CUstream stream = *(CUstream const *)d->functionParams; /* first in every one of them */
    uint8_t per_thread = !!(how & SYNC_PTSZ);
    /* The two special handles name the default streams. */
    if (stream == CU_STREAM_PER_THREAD) stream = NULL, per_thread = 1;
    else if (stream == CU_STREAM_LEGACY) stream = NULL, per_thread = 0;
    uint32_t id;
    if (f->GetStreamIdEx(d->context, stream, per_thread, &id) == CUPTI_SUCCESS) s.streamId = id;
  }
  pthread_mutex_lock(&sync_mu);
  if (n_syncs == cap_syncs && cap_syncs < MAX_SYNCS) {
    size_t cap = cap_syncs ? 2 * cap_syncs : 256;
    CUpti_ActivitySynchronization2 *p = realloc(syncs, cap * sizeof *p);
    if (p) syncs = p, cap_syncs = cap;
  }
  if (n_syncs < cap_syncs) syncs[n_syncs++] = s;
  else atomic_fetch_add(&lost, 1);
  pthread_mutex_unlock(&sync_mu);
}

void cupti_api_cb_on(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *d) {
  int rt = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
  unsigned g = atomic_load_explicit(&generation, memory_order_relaxed);
  if (g != my_generation) my_generation = g, rt_depth = 0;
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (rt) rt_depth++;
    else if (rt_depth) return;
    *d->correlationData = (uint64_t)(attn_clock_ns() + clock_offset);
    return;
  }
  if (rt) rt_depth -= rt_depth > 0;
  else if (rt_depth) return;
  uint64_t end = (uint64_t)(attn_clock_ns() + clock_offset), start = *d->correlationData;
  if (!start || start > end) return; /* entered before we were switched on */
  uint32_t ret = d->functionReturnValue ? *(const uint32_t *)d->functionReturnValue : 0;
  const cupti_fns *f = atomic_load_explicit(&sync_fns, memory_order_relaxed);
  uint8_t how = !f || ret ? 0
                : rt      ? (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? sync_rt[cbid] : 0)
                          : (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? sync_drv[cbid] : 0);
  if (how) add_sync(f, how, d, start, end);
  api_block *b = room();
  if (!b) {
    atomic_fetch_add(&lost, 1);
    return;
  }
  if (!my_tid) my_tid = (uint32_t)syscall(SYS_gettid);
  size_t n = atomic_load_explicit(&b->count, memory_order_relaxed);
  CUpti_ActivityAPI *a = &b->rec[n];
  a->kind = rt ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  a->cbid = cbid;
  a->start = start;
  a->end = end;
  a->processId = atomic_load_explicit(&pid, memory_order_relaxed);
  a->threadId = my_tid;
  a->correlationId = d->correlationId;
  a->returnValue = ret;
  atomic_store_explicit(&b->count, n + 1, memory_order_release);
}

/* Hands the sync records written so far to take (outside the lock: syncs
 * keep coming meanwhile) and frees them. */
static void drain_syncs(void (*take)(const CUpti_Activity *rec)) {
  pthread_mutex_lock(&sync_mu);
  CUpti_ActivitySynchronization2 *mine_now = syncs;
  size_t n = n_syncs;
  syncs = NULL, n_syncs = cap_syncs = 0;
  pthread_mutex_unlock(&sync_mu);
  for (size_t i = 0; i < n; i++) take((const CUpti_Activity *)(const void *)&mine_now[i]);
  free(mine_now);
}

void cupti_api_cb_drain(void (*take)(const CUpti_Activity *rec)) {
  drain_syncs(take);
  /* Blocks are only unlinked here, so the list from this head on holds still
   * while we read it without the lock; blocks pushed meanwhile wait a turn. */
  pthread_mutex_lock(&blk_mu);
  api_block *head = live;
  pthread_mutex_unlock(&blk_mu);
  for (api_block *b = head; b; b = b->next) {
    size_t n = atomic_load_explicit(&b->count, memory_order_acquire);
    for (; b->read < n; b->read++) take((const CUpti_Activity *)(const void *)&b->rec[b->read]);
  }
  pthread_mutex_lock(&blk_mu);
  for (api_block **p = &live; *p;) {
    api_block *b = *p;
    if (atomic_load(&b->detached) && b->read == atomic_load(&b->count)) {
      *p = b->next;
      b->next = free_list;
      free_list = b;
    } else {
      p = &b->next;
    }
  }
  pthread_mutex_unlock(&blk_mu);
}
