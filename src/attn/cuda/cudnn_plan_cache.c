/* Bounded LRU plan cache: a chained hash table over the keys plus a doubly
 * linked recency list (head = most recent). See cudnn_plan_cache.h. */
#include "attn/cuda/cudnn_plan_cache.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
  struct entry *hash_next;
  struct entry *newer, *older;
  uint64_t hash;
  void *value;
  unsigned char key[];
} entry;

struct attn_plan_cache {
  size_t capacity, key_size, n_buckets, entries;
  entry **buckets;
  entry *newest, *oldest;
  attn_plan_build_fn build;
  attn_plan_destroy_fn destroy;
  void *ctx;
  uint64_t hits, misses, evictions;
};

/* FNV-1a over 8-byte words (then the tail bytes): keys are a few hundred
 * bytes of small integers, hashed on every call, so a word at a time keeps
 * it to a few dozen multiplies. */
static uint64_t key_hash(const unsigned char *k, size_t n) {
  uint64_t h = 1469598103934665603ull, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, k + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29; /* fold the high bits down: the multiply only carries upward */
  }
  for (; i < n; i++) h = (h ^ k[i]) * 1099511628211ull;
  return h;
}

/* Buckets: a power of two at least twice the capacity, so chains stay short. */
static size_t buckets_for(size_t capacity) {
  size_t n = 16;
  while (n < 2 * capacity) n *= 2;
  return n;
}

attn_plan_cache *attn_plan_cache_create(size_t capacity, size_t key_size,
                                        attn_plan_build_fn build, attn_plan_destroy_fn destroy,
                                        void *ctx) {
  attn_plan_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->capacity = capacity ? capacity : 1;
  c->key_size = key_size;
  c->n_buckets = buckets_for(c->capacity);
  c->buckets = calloc(c->n_buckets, sizeof *c->buckets);
  c->build = build, c->destroy = destroy, c->ctx = ctx;
  if (!c->buckets) {
    free(c);
    return NULL;
  }
  return c;
}

static void list_unlink(attn_plan_cache *c, entry *e) {
  if (e->newer) e->newer->older = e->older;
  else c->newest = e->older;
  if (e->older) e->older->newer = e->newer;
  else c->oldest = e->newer;
  e->newer = e->older = NULL;
}

static void list_push_newest(attn_plan_cache *c, entry *e) {
  e->older = c->newest;
  e->newer = NULL;
  if (c->newest) c->newest->newer = e;
  c->newest = e;
  if (!c->oldest) c->oldest = e;
}

static entry **bucket_of(attn_plan_cache *c, uint64_t hash) {
  return &c->buckets[hash & (c->n_buckets - 1)];
}

static entry *lookup(attn_plan_cache *c, const void *key, uint64_t hash) {
  for (entry *e = *bucket_of(c, hash); e; e = e->hash_next)
    if (e->hash == hash && memcmp(e->key, key, c->key_size) == 0) return e;
  return NULL;
}

/* Unlinks e from its bucket and the list, hands its value to destroy. */
static void drop(attn_plan_cache *c, entry *e) {
  entry **p = bucket_of(c, e->hash);
  while (*p != e) p = &(*p)->hash_next;
  *p = e->hash_next;
  list_unlink(c, e);
  c->entries--;
  if (c->destroy) c->destroy(e->value, c->ctx);
  free(e);
}

static void evict_to(attn_plan_cache *c, size_t limit) {
  while (c->entries > limit && c->oldest) {
    drop(c, c->oldest);
    c->evictions++;
  }
}

void *attn_plan_cache_find(attn_plan_cache *c, const void *key) {
  entry *e = lookup(c, key, key_hash(key, c->key_size));
  if (!e) return NULL;
  c->hits++;
  list_unlink(c, e);
  list_push_newest(c, e);
  return e->value;
}

void *attn_plan_cache_get(attn_plan_cache *c, const void *key, void *arg) {
  uint64_t hash = key_hash(key, c->key_size);
  entry *e = lookup(c, key, hash);
  if (e) {
    c->hits++;
    list_unlink(c, e);
    list_push_newest(c, e);
    return e->value;
  }
  c->misses++;
  void *value = c->build(key, c->ctx, arg);
  if (!value) return NULL;
  e = malloc(sizeof *e + c->key_size);
  if (!e) {
    if (c->destroy) c->destroy(value, c->ctx);
    return NULL;
  }
  memcpy(e->key, key, c->key_size);
  e->hash = hash, e->value = value;
  entry **b = bucket_of(c, hash);
  e->hash_next = *b;
  *b = e;
  list_push_newest(c, e);
  c->entries++;
  /* The new entry is the most recent, so eviction never takes it. */
  evict_to(c, c->capacity);
  return value;
}

/* Rebuilds the bucket array for a new capacity (entries keep their order). */
static void rehash(attn_plan_cache *c, size_t n_buckets) {
  entry **nb = calloc(n_buckets, sizeof *nb);
  if (!nb) return; /* keep the old table: longer chains, still correct */
  for (size_t i = 0; i < c->n_buckets; i++)
    for (entry *e = c->buckets[i], *next; e; e = next) {
      next = e->hash_next;
      e->hash_next = nb[e->hash & (n_buckets - 1)];
      nb[e->hash & (n_buckets - 1)] = e;
    }
  free(c->buckets);
  c->buckets = nb, c->n_buckets = n_buckets;
}

void attn_plan_cache_set_capacity(attn_plan_cache *c, size_t capacity) {
  c->capacity = capacity ? capacity : 1;
  evict_to(c, c->capacity);
  if (buckets_for(c->capacity) != c->n_buckets) rehash(c, buckets_for(c->capacity));
}

attn_plan_cache_stats attn_plan_cache_stats_of(const attn_plan_cache *c) {
  attn_plan_cache_stats s = {c->entries, c->capacity, c->hits, c->misses, c->evictions};
  return s;
}

void attn_plan_cache_free(attn_plan_cache *c) {
  if (!c) return;
  while (c->oldest) drop(c, c->oldest);
  free(c->buckets);
  free(c);
}
