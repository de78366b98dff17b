/* The engine handle's LRU cache with a fake builder (CPU, runs in CI): hits
 * build nothing, the least recently used entry goes first, failed builds are
 * cached like any other result, the bound holds over a long stream of
 * distinct keys, eviction waits for attn_cache_trim, kinds never collide,
 * and every value built is freed exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/cache.h"

/* Keys shaped like the real one: a few int64 fields, most equal. */
typedef struct {
  int64_t b, h, s, d;
  int32_t causal, device;
} fake_key;

typedef struct {
  int64_t id; /* the key's s, so a value can be traced to its key */
  int failed; /* a cached refusal, as cudnn_state.c keeps them */
} fake_plan;

typedef struct {
  int builds, destroys, live;
  int64_t last_destroyed;
  int64_t fail_s; /* builds for this s "fail" (a refusal is still a value) */
} fake_ctx;

/* One counter set per test (the free function has no context argument). */
static fake_ctx *counters;

static fake_plan *fake_build(const fake_key *k) {
  fake_plan *p = malloc(sizeof *p);
  p->id = k->s, p->failed = k->s == counters->fail_s;
  counters->builds++, counters->live++;
  return p;
}

static void fake_destroy(void *value) {
  counters->destroys++, counters->live--;
  counters->last_destroyed = ((fake_plan *)value)->id;
  free(value);
}

/* The backends' pattern: find, else build and put, then trim before the
 * next call (dispatch does it before each forward). */
static fake_plan *get_key(attn_cache *c, const fake_key *k) {
  fake_plan *p = attn_cache_find(c, ATTN_CACHE_CUDNN_PLAN, k, sizeof *k);
  if (p) return p;
  p = fake_build(k);
  assert_int_equal(attn_cache_put(c, ATTN_CACHE_CUDNN_PLAN, k, sizeof *k, p, fake_destroy), 0);
  attn_cache_trim(c);
  return p;
}

static attn_cache *make(size_t cap, fake_ctx *ctx) {
  counters = ctx;
  return attn_cache_create(cap);
}

static void *find(attn_cache *c, const fake_key *k) {
  return attn_cache_find(c, ATTN_CACHE_CUDNN_PLAN, k, sizeof *k);
}

static fake_key key_of(int64_t s) {
  fake_key k;
  memset(&k, 0, sizeof k);
  k.b = 8, k.h = 16, k.s = s, k.d = 64;
  return k;
}

static fake_plan *get(attn_cache *c, int64_t s) {
  fake_key k = key_of(s);
  return get_key(c, &k);
}

static void hit_builds_nothing(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(4, &ctx);
  fake_plan *first = get(c, 1024);
  assert_int_equal(first->id, 1024);
  assert_ptr_equal(get(c, 1024), first);
  assert_int_equal(ctx.builds, 1);
  attn_cache_stats st = attn_cache_stats_of(c);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 1);
  attn_cache_free(c);
  assert_int_equal(ctx.destroys, 1);
}

static void least_recent_goes_first(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(3, &ctx);
  get(c, 1), get(c, 2), get(c, 3);
  get(c, 1); /* 2 is now the least recently used */
  get(c, 4);
  assert_int_equal(ctx.destroys, 1);
  assert_int_equal(ctx.last_destroyed, 2);
  fake_key k2 = key_of(2), k1 = key_of(1);
  assert_null(find(c, &k2));
  assert_non_null(find(c, &k1));
  get(c, 2); /* rebuilt; 3 was the oldest now */
  assert_int_equal(ctx.builds, 5);
  assert_int_equal(ctx.last_destroyed, 3);
  assert_int_equal(attn_cache_stats_of(c).evictions, 2);
  attn_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

static void refusals_are_cached(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = 77};
  attn_cache *c = make(8, &ctx);
  assert_true(get(c, 77)->failed);
  assert_true(get(c, 77)->failed);
  assert_false(get(c, 78)->failed);
  assert_int_equal(ctx.builds, 2);
  attn_cache_free(c);
}

/* A stream of distinct shapes: never more than `cap` values alive. */
static void bound_holds_over_a_stream(void **state) {
  (void)state;
  enum { CAP = 5, N = 1000 };
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(CAP, &ctx);
  for (int64_t s = 0; s < N; s++) {
    assert_int_equal(get(c, s)->id, s);
    assert_true(ctx.live <= CAP);
  }
  attn_cache_stats st = attn_cache_stats_of(c);
  assert_int_equal(st.entries, CAP);
  assert_int_equal(st.evictions, N - CAP);
  assert_int_equal(ctx.destroys, N - CAP);
  /* The last CAP are the ones kept. */
  for (int64_t s = N - CAP; s < N; s++) {
    fake_key k = key_of(s);
    assert_non_null(find(c, &k));
  }
  attn_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

/* Keys one byte apart (the device field) are different entries. */
static void keys_differ_in_any_byte(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(8, &ctx);
  fake_key a = key_of(5), b = key_of(5);
  b.device = 1;
  void *va = get_key(c, &a), *vb = get_key(c, &b);
  assert_ptr_not_equal(va, vb);
  assert_ptr_equal(get_key(c, &a), va);
  assert_int_equal(ctx.builds, 2);
  attn_cache_free(c);
}

static void shrinking_evicts_now(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(16, &ctx);
  for (int64_t s = 0; s < 16; s++) get(c, s);
  attn_cache_set_capacity(c, 2);
  assert_int_equal(ctx.live, 2);
  fake_key k15 = key_of(15), k0 = key_of(0);
  assert_non_null(find(c, &k15));
  assert_null(find(c, &k0));
  attn_cache_set_capacity(c, 0); /* clamped to 1: the most recent stays */
  assert_int_equal(ctx.live, 1);
  assert_non_null(find(c, &k15));
  attn_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

/* A put never frees: what a forward found stays valid until trim. */
static void eviction_waits_for_trim(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(2, &ctx);
  fake_key k[4];
  for (int i = 0; i < 4; i++) {
    k[i] = key_of(i);
    attn_cache_put(c, ATTN_CACHE_CUDNN_PLAN, &k[i], sizeof k[i], fake_build(&k[i]), fake_destroy);
  }
  assert_int_equal(ctx.live, 4);
  assert_int_equal(attn_cache_stats_of(c).entries, 4);
  attn_cache_trim(c);
  assert_int_equal(ctx.live, 2);
  assert_int_equal(ctx.last_destroyed, 1);
  assert_int_equal(attn_cache_stats_of(c).evictions, 2);
  attn_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

/* The same key bytes under two kinds are two entries; drop by kind. */
static void kinds_never_collide(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_cache *c = make(8, &ctx);
  fake_key k = key_of(9);
  fake_plan *plan = fake_build(&k), *mask = fake_build(&k);
  attn_cache_put(c, ATTN_CACHE_CUDNN_PLAN, &k, sizeof k, plan, fake_destroy);
  attn_cache_put(c, ATTN_CACHE_CAUSAL_MASK, &k, sizeof k, mask, fake_destroy);
  assert_ptr_equal(attn_cache_find(c, ATTN_CACHE_CUDNN_PLAN, &k, sizeof k), plan);
  assert_ptr_equal(attn_cache_find(c, ATTN_CACHE_CAUSAL_MASK, &k, sizeof k), mask);
  assert_null(attn_cache_find(c, ATTN_CACHE_CUDA_GRAPH, &k, sizeof k));
  /* A shorter key with the same prefix is another key too. */
  assert_null(attn_cache_find(c, ATTN_CACHE_CUDNN_PLAN, &k, sizeof k - 1));
  attn_cache_drop(c, ATTN_CACHE_CAUSAL_MASK, NULL, NULL);
  assert_int_equal(ctx.live, 1);
  assert_ptr_equal(attn_cache_find(c, ATTN_CACHE_CUDNN_PLAN, &k, sizeof k), plan);
  /* Putting over an existing key frees the old value. */
  attn_cache_put(c, ATTN_CACHE_CUDNN_PLAN, &k, sizeof k, fake_build(&k), fake_destroy);
  assert_int_equal(ctx.live, 1);
  attn_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hit_builds_nothing),      cmocka_unit_test(least_recent_goes_first),
      cmocka_unit_test(refusals_are_cached),     cmocka_unit_test(bound_holds_over_a_stream),
      cmocka_unit_test(keys_differ_in_any_byte), cmocka_unit_test(shrinking_evicts_now),
      cmocka_unit_test(eviction_waits_for_trim), cmocka_unit_test(kinds_never_collide),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
