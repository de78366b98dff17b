/* A bounded LRU cache of built plans, keyed by a fixed-size byte key.
 *
 * The cudnn backend keeps one entry per problem (shape, strides, dtype,
 * causal, lse, device): building a cuDNN plan costs milliseconds, executing
 * one costs microseconds. Failed builds are cached too (the value says why),
 * so a shape no engine takes is refused without asking cuDNN again. Memory
 * stays bounded: past `capacity` entries the least recently used one is
 * handed to `destroy`.
 *
 * Plain C with no CUDA or cuDNN, so the eviction logic is tested in CI with a
 * fake builder. Not thread-safe: the caller holds its own lock. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_PLAN_CACHE_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_PLAN_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct attn_plan_cache attn_plan_cache;

/* Builds the value for `key` (ctx: the cache's, arg: the caller's of
 * attn_plan_cache_get). NULL means "could not even record a result" (out of
 * memory): nothing is cached then. */
typedef void *(*attn_plan_build_fn)(const void *key, void *ctx, void *arg);
typedef void (*attn_plan_destroy_fn)(void *value, void *ctx);

typedef struct {
  size_t entries, capacity;
  uint64_t hits, misses, evictions;
} attn_plan_cache_stats;

/* capacity is clamped to at least 1. NULL when out of memory. */
attn_plan_cache *attn_plan_cache_create(size_t capacity, size_t key_size,
                                        attn_plan_build_fn build, attn_plan_destroy_fn destroy,
                                        void *ctx);
/* Destroys every value still held, then the cache. NULL is fine. */
void attn_plan_cache_free(attn_plan_cache *c);

/* The value for key: found (and made most recent) or built and inserted,
 * evicting the least recently used entry past capacity. The pointer stays
 * valid until the next call that may evict (get, set_capacity, free). */
void *attn_plan_cache_get(attn_plan_cache *c, const void *key, void *arg);

/* The value for key if cached (made most recent), else NULL; never builds. */
void *attn_plan_cache_find(attn_plan_cache *c, const void *key);

/* Changes the bound (clamped to at least 1), evicting down to it now. */
void attn_plan_cache_set_capacity(attn_plan_cache *c, size_t capacity);

attn_plan_cache_stats attn_plan_cache_stats_of(const attn_plan_cache *c);

#endif
