/* Bounded LRU cache: a chained hash table over (kind, key) plus a doubly
 * linked recency list (newest first). See cache.h. */
#include "attn/cache.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
  struct entry *hash_next;
  struct entry *newer, *older;
  uint64_t hash;
  void *value;
  attn_cache_free_fn free_fn;
  size_t len;
  unsigned char key[]; /* kind byte, then the caller's key */
} entry;

struct attn_cache {
  size_t capacity, n_buckets, entries;
  entry **buckets;
  entry *newest, *oldest;
  uint64_t hits, misses, evictions;
};

/* FNV-1a over 8-byte words (then the tail bytes): keys are a few hundred
 * bytes of small integers, hashed on every call, so a word at a time keeps
 * it to a few dozen multiplies. */
static uint64_t key_hash(unsigned char kind, const unsigned char *k, size_t n) {
  uint64_t h = (1469598103934665603ull ^ kind) * 1099511628211ull, w;
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

attn_cache *attn_cache_create(size_t capacity) {
  attn_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->capacity = capacity ? capacity : 1;
  c->n_buckets = buckets_for(c->capacity);
  c->buckets = calloc(c->n_buckets, sizeof *c->buckets);
  if (!c->buckets) {
    free(c);
    return NULL;
  }
  return c;
}

static void list_unlink(attn_cache *c, entry *e) {
  if (e->newer) e->newer->older = e->older;
  else c->newest = e->older;
  if (e->older) e->older->newer = e->newer;
  else c->oldest = e->newer;
  e->newer = e->older = NULL;
}

static void list_push_newest(attn_cache *c, entry *e) {
  e->older = c->newest;
  e->newer = NULL;
  if (c->newest) c->newest->newer = e;
  c->newest = e;
  if (!c->oldest) c->oldest = e;
}

static entry **bucket_of(attn_cache *c, uint64_t hash) {
  return &c->buckets[hash & (c->n_buckets - 1)];
}

static entry *lookup(attn_cache *c, unsigned char kind, const void *key, size_t len,
                     uint64_t hash) {
  for (entry *e = *bucket_of(c, hash); e; e = e->hash_next)
    if (e->hash == hash && e->len == len && e->key[0] == kind && memcmp(e->key + 1, key, len) == 0)
      return e;
  return NULL;
}

/* Unlinks e from its bucket and the list and frees its value. */
static void drop(attn_cache *c, entry *e) {
  entry **p = bucket_of(c, e->hash);
  while (*p != e) p = &(*p)->hash_next;
  *p = e->hash_next;
  list_unlink(c, e);
  c->entries--;
  if (e->free_fn) e->free_fn(e->value);
  free(e);
}

static void evict_to(attn_cache *c, size_t limit) {
  while (c->entries > limit && c->oldest) {
    drop(c, c->oldest);
    c->evictions++;
  }
}

void *attn_cache_find(attn_cache *c, attn_cache_kind kind, const void *key, size_t len) {
  entry *e = lookup(c, (unsigned char)kind, key, len, key_hash((unsigned char)kind, key, len));
  if (!e) {
    c->misses++;
    return NULL;
  }
  c->hits++;
  list_unlink(c, e);
  list_push_newest(c, e);
  return e->value;
}

int attn_cache_put(attn_cache *c, attn_cache_kind kind, const void *key, size_t len, void *value,
                   attn_cache_free_fn free_fn) {
  uint64_t hash = key_hash((unsigned char)kind, key, len);
  entry *old = lookup(c, (unsigned char)kind, key, len, hash);
  if (old) drop(c, old);
  entry *e = malloc(sizeof *e + 1 + len);
  if (!e) {
    if (free_fn) free_fn(value);
    return -1;
  }
  e->key[0] = (unsigned char)kind;
  memcpy(e->key + 1, key, len);
  e->len = len, e->hash = hash, e->value = value, e->free_fn = free_fn;
  entry **b = bucket_of(c, hash);
  e->hash_next = *b;
  *b = e;
  list_push_newest(c, e);
  c->entries++;
  return 0;
}

void attn_cache_trim(attn_cache *c) {
  if (c) evict_to(c, c->capacity);
}

void attn_cache_drop(attn_cache *c, int kind, int (*keep)(void *value, void *arg), void *arg) {
  if (!c) return;
  for (entry *e = c->oldest, *newer; e; e = newer) {
    newer = e->newer;
    if ((kind == 0 || e->key[0] == kind) && !(keep && keep(e->value, arg))) drop(c, e);
  }
}

/* Rebuilds the bucket array for a new capacity (entries keep their order). */
static void rehash(attn_cache *c, size_t n_buckets) {
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

void attn_cache_set_capacity(attn_cache *c, size_t capacity) {
  c->capacity = capacity ? capacity : 1;
  evict_to(c, c->capacity);
  if (buckets_for(c->capacity) != c->n_buckets) rehash(c, buckets_for(c->capacity));
}

attn_cache_stats attn_cache_stats_of(const attn_cache *c) {
  attn_cache_stats s = {c->entries, c->capacity, c->hits, c->misses, c->evictions};
  return s;
}

void attn_cache_free(attn_cache *c) {
  if (!c) return;
  while (c->oldest) drop(c, c->oldest);
  free(c->buckets);
  free(c);
}
