/* The engine handle's one bounded LRU cache: everything a call may reuse
 * (cuDNN plans, TMA descriptors, masks, CUDA graphs) lives here, keyed by
 * bytes that begin with the kind of thing cached, so kinds never collide.
 *
 * Building a value costs milliseconds (a cuDNN plan) or an allocation (a
 * mask); finding one costs a hash. Failed builds may be cached too (the value
 * says why), so a problem refused once is refused fast.
 *
 * Eviction is deferred: attn_cache_put never frees an entry, so a pointer
 * found earlier in the same call stays valid until the call ends;
 * attn_cache_trim (dispatch calls it as every call on the handle ends) evicts
 * the least recently used entries down to the capacity. Device memory a
 * value owns is freed with cudaFree (which waits for the device) and graphs
 * with cudaGraphExecDestroy (which lets a launch in flight finish). Plain C, no CUDA: tested in CI.
 * Not thread-safe: the handle's rule (one thread at a time, or its lock)
 * covers it. */
#ifndef ATTNPROF_SRC_ATTN_CACHE_H
#define ATTNPROF_SRC_ATTN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus /* the CUDA kernels' host sides (.cu) use it too */
extern "C" {
#endif

typedef struct attn_cache attn_cache;

/* What a key starts with: one byte per kind of value. */
typedef enum {
  ATTN_CACHE_CUDNN_PLAN = 1,
  ATTN_CACHE_CAUSAL_MASK,
  ATTN_CACHE_CUDA_GRAPH,
  ATTN_CACHE_TMA_DESC,
  ATTN_CACHE_OTHER
} attn_cache_kind;

/* Frees a value (called on eviction, clear and free). */
typedef void (*attn_cache_free_fn)(void *value);

typedef struct {
  size_t entries, capacity;
  uint64_t hits, misses, evictions;
} attn_cache_stats;

/* capacity is clamped to at least 1. NULL when out of memory. */
attn_cache *attn_cache_create(size_t capacity);
/* Frees every value still held, then the cache. NULL is fine. */
void attn_cache_free(attn_cache *c);

/* The value stored under (kind, key), made most recent; NULL (a miss) if none. */
void *attn_cache_find(attn_cache *c, attn_cache_kind kind, const void *key, size_t len);
/* Stores value under (kind, key), most recent; replaces (and frees) a value
 * already there. Returns 0, or -1 when out of memory (value freed then). */
int attn_cache_put(attn_cache *c, attn_cache_kind kind, const void *key, size_t len, void *value,
                   attn_cache_free_fn free_fn);
/* Evicts least recently used entries down to the capacity. */
void attn_cache_trim(attn_cache *c);
/* Frees every entry of `kind` for which keep(value, arg) is 0 (keep NULL: all
 * of that kind); kind 0: every kind. Not counted as evictions. */
void attn_cache_drop(attn_cache *c, int kind, int (*keep)(void *value, void *arg), void *arg);
/* Changes the bound (clamped to at least 1) and trims to it. */
void attn_cache_set_capacity(attn_cache *c, size_t capacity);

attn_cache_stats attn_cache_stats_of(const attn_cache *c);

#ifdef __cplusplus
}
#endif
#endif
