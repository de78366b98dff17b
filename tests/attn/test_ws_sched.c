/* The Hopper flash kernel's host-side choices (CPU, runs in CI): the tile
 * shape per (D, causal, Sq) (ws_tile_pick), the schedule's divisions by
 * multiplier (ws_div), and the persistent tile order the kernel walks
 * (ws_sched_make, ws_tile_order: the same functions the kernel calls), over
 * grids of shapes: every tile exactly once, no empty last round, longest
 * first where causal, the snake, equal work in every pair, and an end on
 * short tiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/cuda/fused/hopper/ws_sched.h"
#include "attn/cuda/fused/ws_tile.h"

static void tile_pick_table(void **state) {
  (void)state;
  /* D64 and D256: the base tile only for causal S < 2k. */
  for (int d = 64; d <= 256; d += 192) {
    assert_int_equal(ws_tile_pick(d, 1, 1024), WS_TILE_BASE);
    assert_int_equal(ws_tile_pick(d, 1, 2047), WS_TILE_BASE);
    assert_int_equal(ws_tile_pick(d, 1, 2048), WS_TILE_FA3);
    assert_int_equal(ws_tile_pick(d, 0, 1024), WS_TILE_FA3);
    assert_int_equal(ws_tile_pick(d, 0, 16384), WS_TILE_FA3);
  }
  /* D128: the base tile below S 2k, and causal below S 16k. */
  assert_int_equal(ws_tile_pick(128, 0, 2047), WS_TILE_BASE);
  assert_int_equal(ws_tile_pick(128, 0, 2048), WS_TILE_FA3);
  assert_int_equal(ws_tile_pick(128, 1, 8192), WS_TILE_BASE);
  assert_int_equal(ws_tile_pick(128, 1, 16383), WS_TILE_BASE);
  assert_int_equal(ws_tile_pick(128, 1, 16384), WS_TILE_FA3);
}

static void div_is_exact(void **state) {
  (void)state;
  static const int ns[] = {0,   1,     2,     3,       127,        128,
                           129, 65535, 65536, 1000003, 0x7ffffffe, 0x7fffffff};
  for (int d = 1; d <= 3000; d++) {
    unsigned dv[2];
    ws_div_set(dv, d);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      assert_int_equal(ws_div(dv, ns[i]), ns[i] / d);
    for (int n = 0; n < 4 * d + 7; n++) assert_int_equal(ws_div(dv, n), n / d);
    for (long long n = 0x7fffffffLL - 2 * d; n <= 0x7fffffffLL; n += 3)
      assert_int_equal(ws_div(dv, (int)n), n / d);
  }
}

/* One shape's order: each CTA's (head, m block) per round, -1 for none. */
typedef struct {
  ws_sched s;
  int g, causal, rounds;
  int *bh, *mb; /* [rounds][g] */
} order;

static void order_make(order *o, int sq, int b, int hq, int causal, int bm, int sms) {
  const int n_mb = (sq + bm - 1) / bm, tiles = n_mb * b * hq;
  o->g = tiles < sms ? tiles : sms, o->causal = causal;
  ws_sched_make(&o->s, sq, b, hq, hq, causal, bm, o->g);
  o->rounds = o->s.rounds;
  o->bh = malloc(sizeof(int) * (size_t)o->rounds * (size_t)o->g);
  o->mb = malloc(sizeof(int) * (size_t)o->rounds * (size_t)o->g);
  assert_non_null(o->bh);
  assert_non_null(o->mb);
  for (int r = 0; r < o->rounds; r++)
    for (int k = 0; k < o->g; k++) {
      int bh = -1, mb = -1;
      if (!ws_tile_order(&o->s, causal, r, o->g, k, &bh, &mb)) bh = mb = -1;
      o->bh[r * o->g + k] = bh, o->mb[r * o->g + k] = mb;
    }
}

static void order_free(order *o) {
  free(o->bh);
  free(o->mb);
}

/* Every tile exactly once, the last round not empty, and each CTA's rounds
 * without a tile after its last tile only (the kernel numbers a CTA's tiles
 * by round: Q buffer r % 2). */
static void check_once(const order *o) {
  const int n = o->s.n_tiles;
  char *seen = calloc((size_t)n, 1);
  assert_non_null(seen);
  int count = 0, last = 0;
  for (int r = 0; r < o->rounds; r++)
    for (int k = 0; k < o->g; k++) {
      const int bh = o->bh[r * o->g + k], mb = o->mb[r * o->g + k];
      if (bh < 0) continue;
      assert_in_range(bh, 0, o->s.bh_n - 1);
      assert_in_range(mb, 0, o->s.n_mb - 1);
      assert_int_equal(seen[bh * o->s.n_mb + mb], 0);
      seen[bh * o->s.n_mb + mb] = 1, count++;
      if (r == o->rounds - 1) last++;
    }
  assert_int_equal(count, n);
  assert_true(last > 0);
  for (int k = 0; k < o->g; k++)
    for (int r = 1; r < o->rounds; r++)
      if (o->bh[r * o->g + k] >= 0) assert_true(o->bh[(r - 1) * o->g + k] >= 0);
  free(seen);
}

/* The largest and smallest m block of round r (-1, n_mb when empty). */
static void round_span(const order *o, int r, int *lo, int *hi) {
  *lo = o->s.n_mb, *hi = -1;
  for (int k = 0; k < o->g; k++) {
    const int mb = o->mb[r * o->g + k];
    if (mb < 0) continue;
    if (mb < *lo) *lo = mb;
    if (mb > *hi) *hi = mb;
  }
}

static const int kSq[] = {128, 1000, 1024, 1152, 2048, 4096, 8192};
static const int kBh[][2] = {{1, 1}, {1, 3}, {2, 8}, {4, 16}, {8, 16}, {16, 16}, {3, 40}};
static const int kBm[] = {128, 192};
static const int kSms[] = {132, 13, 8};
#define N_OF(a) (int)(sizeof(a) / sizeof((a)[0]))

/* Runs fn over every shape of the grid; causal: 0 or 1. */
static void each_shape(int causal, void (*fn)(const order *)) {
  for (int a = 0; a < N_OF(kSq); a++)
    for (int h = 0; h < N_OF(kBh); h++)
      for (int m = 0; m < N_OF(kBm); m++)
        for (int g = 0; g < N_OF(kSms); g++) {
          order o;
          order_make(&o, kSq[a], kBh[h][0], kBh[h][1], causal, kBm[m], kSms[g]);
          check_once(&o);
          fn(&o);
          order_free(&o);
        }
}

/* Non-causal: tile r G + k, m block fastest. */
static void check_stride(const order *o) {
  for (int r = 0; r < o->rounds; r++)
    for (int k = 0; k < o->g; k++) {
      const int t = r * o->g + k, i = r * o->g + k;
      if (t >= o->s.n_tiles) assert_int_equal(o->bh[i], -1);
      else assert_int_equal(o->bh[i] * o->s.n_mb + o->mb[i], t);
    }
}

static void non_causal_order(void **state) {
  (void)state;
  each_shape(0, check_stride);
}

/* Causal: longest first round by round (without pairs, and in the singles
 * that end a paired order), the snake in odd rounds, and equal work (m
 * blocks summing to n_mb - 1, the long one first) in each CTA's pair. */
static void check_causal(const order *o) {
  const ws_sched *s = &o->s;
  const int r0 = s->n_pairs ? (s->n_single ? s->r_pp : o->rounds) : 0;
  for (int r = r0; r + 1 < o->rounds; r++) {
    int lo, hi, lo2, hi2;
    round_span(o, r, &lo, &hi);
    round_span(o, r + 1, &lo2, &hi2);
    if (hi2 >= 0) assert_true(hi2 <= lo);
  }
  if (!s->n_pairs)
    for (int r = 1; r < o->rounds; r += 2) /* the snake: CTA g - 1 takes the round's first tile */
      for (int k = 0; k + 1 < o->g; k++)
        if (o->mb[r * o->g + k] >= 0) assert_true(o->mb[r * o->g + k] <= o->mb[r * o->g + k + 1]);
  const int pair_rounds = s->n_single ? s->r_pp : (s->n_pairs ? o->rounds : 0);
  for (int r = 0; r + 1 < pair_rounds; r += 2)
    for (int k = 0; k < o->g; k++) {
      const int i = r * o->g + k, j = (r + 1) * o->g + k;
      if (o->bh[i] < 0 || (o->mb[i] == s->n_mb / 2 && (s->n_mb & 1)))
        continue; /* the middle blocks */
      assert_int_equal(o->bh[i], o->bh[j]);
      assert_int_equal(o->mb[i] + o->mb[j], s->n_mb - 1);
      assert_true(o->mb[i] >= o->mb[j]);
    }
}

static void causal_order(void **state) {
  (void)state;
  each_shape(1, check_causal);
}

/* The modes each happen in the grid above (else their checks test nothing):
 * pairs with an odd n_mb, pairs that end in singles, and plain longest-first. */
static void modes_are_covered(void **state) {
  (void)state;
  order o;
  order_make(&o, 1152, 16, 16, 1, 128, 132); /* 9 m blocks, 256 heads */
  assert_true(o.s.n_pairs > 0 && o.s.n_single == 0);
  order_free(&o);
  order_make(&o, 1024, 3, 40, 1, 128, 132); /* 8 m blocks, 120 heads: 480 pairs */
  assert_true(o.s.n_pairs > 0 && o.s.n_single > 0);
  order_free(&o);
  order_make(&o, 8192, 1, 3, 1, 128, 132);
  assert_true(o.s.n_pairs == 0);
  order_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(tile_pick_table),   cmocka_unit_test(div_is_exact),
      cmocka_unit_test(non_causal_order),  cmocka_unit_test(causal_order),
      cmocka_unit_test(modes_are_covered),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
