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
 * its GPU work is correlated with, as in CUPTI's own activity records. */
#include "prof/collect/cupti_api_cb.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attnprof/prof.h"

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

void cupti_api_cb_on(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const CUpti_CallbackData *d) {
  int rt = dom == CUPTI_CB_DOMAIN_RUNTIME_API;
  unsigned g = atomic_load_explicit(&generation, memory_order_relaxed);
  if (g != my_generation) my_generation = g, rt_depth = 0;
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (rt) rt_depth++;
    else if (rt_depth) return;
    *d->correlationData = (uint64_t)(prof_clock_ns() + clock_offset);
    return;
  }
  if (rt) rt_depth -= rt_depth > 0;
  else if (rt_depth) return;
  uint64_t end = (uint64_t)(prof_clock_ns() + clock_offset), start = *d->correlationData;
  if (!start || start > end) return; /* entered before we were switched on */
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
  a->returnValue = d->functionReturnValue ? *(const uint32_t *)d->functionReturnValue : 0;
  atomic_store_explicit(&b->count, n + 1, memory_order_release);
}

void cupti_api_cb_drain(void (*take)(const CUpti_Activity *rec)) {
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
