/* The cudnn backend's plan cache with a fake builder (CPU, runs in CI):
 * hits build nothing, the least recently used entry goes first, failed
 * builds are cached like any other result, the bound holds over a long
 * stream of distinct keys, and every value built is destroyed exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/cuda/cudnn_plan_cache.h"

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

static void *fake_build(const void *key, void *ctx, void *arg) {
  const fake_key *k = key;
  fake_ctx *c = ctx;
  (void)arg;
  fake_plan *p = malloc(sizeof *p);
  p->id = k->s, p->failed = k->s == c->fail_s;
  c->builds++, c->live++;
  return p;
}

static void fake_destroy(void *value, void *ctx) {
  fake_ctx *c = ctx;
  c->destroys++, c->live--;
  c->last_destroyed = ((fake_plan *)value)->id;
  free(value);
}

static fake_key key_of(int64_t s) {
  fake_key k;
  memset(&k, 0, sizeof k);
  k.b = 8, k.h = 16, k.s = s, k.d = 64;
  return k;
}

static fake_plan *get(attn_plan_cache *c, int64_t s) {
  fake_key k = key_of(s);
  return attn_plan_cache_get(c, &k, NULL);
}

static void hit_builds_nothing(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_plan_cache *c = attn_plan_cache_create(4, sizeof(fake_key), fake_build, fake_destroy, &ctx);
  fake_plan *first = get(c, 1024);
  assert_int_equal(first->id, 1024);
  assert_ptr_equal(get(c, 1024), first);
  assert_int_equal(ctx.builds, 1);
  attn_plan_cache_stats st = attn_plan_cache_stats_of(c);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 1);
  attn_plan_cache_free(c);
  assert_int_equal(ctx.destroys, 1);
}

static void least_recent_goes_first(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_plan_cache *c = attn_plan_cache_create(3, sizeof(fake_key), fake_build, fake_destroy, &ctx);
  get(c, 1), get(c, 2), get(c, 3);
  get(c, 1); /* 2 is now the least recently used */
  get(c, 4);
  assert_int_equal(ctx.destroys, 1);
  assert_int_equal(ctx.last_destroyed, 2);
  fake_key k2 = key_of(2), k1 = key_of(1);
  assert_null(attn_plan_cache_find(c, &k2));
  assert_non_null(attn_plan_cache_find(c, &k1));
  get(c, 2); /* rebuilt; 3 was the oldest now */
  assert_int_equal(ctx.builds, 5);
  assert_int_equal(ctx.last_destroyed, 3);
  assert_int_equal(attn_plan_cache_stats_of(c).evictions, 2);
  attn_plan_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

static void refusals_are_cached(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = 77};
  attn_plan_cache *c = attn_plan_cache_create(8, sizeof(fake_key), fake_build, fake_destroy, &ctx);
  assert_true(get(c, 77)->failed);
  assert_true(get(c, 77)->failed);
  assert_false(get(c, 78)->failed);
  assert_int_equal(ctx.builds, 2);
  attn_plan_cache_free(c);
}

/* A stream of distinct shapes: never more than `cap` values alive. */
static void bound_holds_over_a_stream(void **state) {
  (void)state;
  enum { CAP = 5, N = 1000 };
  fake_ctx ctx = {.fail_s = -1};
  attn_plan_cache *c = attn_plan_cache_create(CAP, sizeof(fake_key), fake_build, fake_destroy,
                                              &ctx);
  for (int64_t s = 0; s < N; s++) {
    assert_int_equal(get(c, s)->id, s);
    assert_true(ctx.live <= CAP);
  }
  attn_plan_cache_stats st = attn_plan_cache_stats_of(c);
  assert_int_equal(st.entries, CAP);
  assert_int_equal(st.evictions, N - CAP);
  assert_int_equal(ctx.destroys, N - CAP);
  /* The last CAP are the ones kept. */
  for (int64_t s = N - CAP; s < N; s++) {
    fake_key k = key_of(s);
    assert_non_null(attn_plan_cache_find(c, &k));
  }
  attn_plan_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

/* Keys one byte apart (the device field) are different entries. */
static void keys_differ_in_any_byte(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_plan_cache *c = attn_plan_cache_create(8, sizeof(fake_key), fake_build, fake_destroy, &ctx);
  fake_key a = key_of(5), b = key_of(5);
  b.device = 1;
  void *va = attn_plan_cache_get(c, &a, NULL), *vb = attn_plan_cache_get(c, &b, NULL);
  assert_ptr_not_equal(va, vb);
  assert_ptr_equal(attn_plan_cache_get(c, &a, NULL), va);
  assert_int_equal(ctx.builds, 2);
  attn_plan_cache_free(c);
}

static void shrinking_evicts_now(void **state) {
  (void)state;
  fake_ctx ctx = {.fail_s = -1};
  attn_plan_cache *c = attn_plan_cache_create(16, sizeof(fake_key), fake_build, fake_destroy,
                                              &ctx);
  for (int64_t s = 0; s < 16; s++) get(c, s);
  attn_plan_cache_set_capacity(c, 2);
  assert_int_equal(ctx.live, 2);
  fake_key k15 = key_of(15), k0 = key_of(0);
  assert_non_null(attn_plan_cache_find(c, &k15));
  assert_null(attn_plan_cache_find(c, &k0));
  attn_plan_cache_set_capacity(c, 0); /* clamped to 1: the most recent stays */
  assert_int_equal(ctx.live, 1);
  assert_non_null(attn_plan_cache_find(c, &k15));
  attn_plan_cache_free(c);
  assert_int_equal(ctx.live, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hit_builds_nothing),      cmocka_unit_test(least_recent_goes_first),
      cmocka_unit_test(refusals_are_cached),     cmocka_unit_test(bound_holds_over_a_stream),
      cmocka_unit_test(keys_differ_in_any_byte), cmocka_unit_test(shrinking_evicts_now),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
