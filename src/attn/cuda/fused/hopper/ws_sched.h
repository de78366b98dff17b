/* The tile schedule of the warp-specialized flash kernel: which (m block,
 * head) each CTA runs in each round of its persistent loop. Plain C, made on
 * the host (ws_sched_make, per launch) and walked by the kernel (ws_tile_order
 * per round, through scheduler.cuh); tests/attn/test_ws_sched.c runs the same
 * functions on the host.
 *
 * One tile per CTA per round, G CTAs (grid = min(#SMs, tiles)):
 *  - non-causal: tile t = r G + k, m block fastest, so CTAs running together
 *    share one head's K and V in L2;
 *  - causal, long sequences: longest first over all heads (the last m block
 *    of every head, then the one before), odd rounds dealt in reverse CTA
 *    order (a snake) so that no CTA takes the longest tile of every round;
 *  - causal, short sequences (bm G < 384 (batch x heads)) and more tiles than
 *    CTAs: each head's m blocks paired, i with n_mb - 1 - i (the same work in
 *    every pair), pairs dealt head by head, CTA k taking pair (r / 2) G + k,
 *    its long tile in even rounds and its short one in odd rounds, so that a
 *    round's K and V come from few heads and stay in L2. With n_mb odd the
 *    middle m blocks pair with each other, two heads per pair, after the
 *    rest. With n_mb even, pairs run only for the rounds every CTA fills (one
 *    less when the last would be under three quarters full); the rest's m
 *    blocks follow one per CTA and round, longest first, in a snake
 *    (ws_single_at): the schedule ends on short tiles. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_WS_SCHED_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_WS_SCHED_H

#include <stdint.h>

#ifdef __CUDACC__
#define WS_HD static __host__ __device__ __forceinline__
#else
#define WS_HD static inline
#endif

/* The divisors of the schedule, rows of ws_sched.div: heads, the GQA group,
 * batch x heads, m blocks, m blocks / 2. */
enum { WS_DIV_HQ, WS_DIV_GRP, WS_DIV_BH, WS_DIV_MB, WS_DIV_H2, WS_DIV_N };

typedef struct {
  int n_mb, bh_n, n_tiles, n_pairs; /* n_pairs: 0 unless paired */
  int n_pp, n_single;               /* the end-short split: pairs, then singles (0: none) */
  int r_pp, bh0, i0;                /* its rounds of pairs; the first single's head and pair */
  int rounds;                       /* rounds of the persistent loop (a pair takes two) */
  unsigned int div[WS_DIV_N][2];    /* n / d as a multiply and shift (ws_div_set) */
} ws_sched;

/* m and l such that n / d = (umulhi(m, n) + n) >> l for 0 <= n < 2^31
 * (Granlund and Montgomery's round-up multiplier; d >= 1). */
static inline void ws_div_set(unsigned int dv[2], int d) {
  unsigned l = 0;
  while ((1ull << l) < (unsigned long long)d) ++l;
  dv[0] =
      (unsigned)(((1ull << 32) * ((1ull << l) - (unsigned long long)d)) / (unsigned long long)d +
                 1);
  dv[1] = l;
}

/* n / d by the multiplier: one IMAD.HI, an add, a shift on the device, where
 * a division by a run-time value goes through the XU pipe and queues behind
 * the other consumer's exps. */
WS_HD int ws_div(const unsigned int dv[2], int n) {
#ifdef __CUDA_ARCH__
  const uint32_t hi = __umulhi(dv[0], (uint32_t)n);
#else
  const uint32_t hi = (uint32_t)(((uint64_t)dv[0] * (uint32_t)n) >> 32);
#endif
  return (int)((hi + (uint32_t)n) >> dv[1]);
}

/* The schedule of sq query rows in bm-row m blocks over b x hq heads (hkv K/V
 * heads), causal or not, on g CTAs. */
static inline void ws_sched_make(ws_sched *s, int sq, int b, int hq, int hkv, int causal, int bm,
                                 int g) {
  s->n_mb = (sq + bm - 1) / bm, s->bh_n = b * hq, s->n_tiles = s->n_mb * s->bh_n;
  s->n_pairs = 0, s->n_pp = 0, s->n_single = 0, s->r_pp = 0, s->bh0 = 0, s->i0 = 0;
  if (causal && bm * g < 384 * s->bh_n && s->n_tiles > g)
    s->n_pairs = s->bh_n * (s->n_mb / 2) + (s->n_mb & 1 ? (s->bh_n + 1) / 2 : 0);
  if (s->n_pairs && !(s->n_mb & 1)) {
    const int f = s->n_pairs / g, rem = s->n_pairs - f * g;
    const int ff = f - (4 * rem < 3 * g ? 1 : 0);
    if (rem && ff >= 0) {
      s->n_pp = ff * g, s->n_single = 2 * (s->n_pairs - s->n_pp), s->r_pp = 2 * ff;
      s->bh0 = s->n_pp / (s->n_mb / 2), s->i0 = s->n_pp % (s->n_mb / 2);
    }
  }
  if (s->n_single) s->rounds = s->r_pp + (s->n_single + g - 1) / g;
  else s->rounds = s->n_pairs ? 2 * ((s->n_pairs + g - 1) / g) : (s->n_tiles + g - 1) / g;
  const int dv[WS_DIV_N] = {hq, hkv > 0 ? hq / hkv : 1, b * hq, s->n_mb, s->n_mb / 2};
  for (int k = 0; k < WS_DIV_N; ++k) ws_div_set(s->div[k], dv[k] > 0 ? dv[k] : 1);
}

/* The end-short order's single u (0: the longest): m blocks from the last
 * down, at each the heads that still have it (the pairs past n_pp: head bh0
 * from its pair i0 on, every later head whole), in head order so that a
 * round's K and V come from few heads. */
WS_HD void ws_single_at(const ws_sched *s, int u, int *bh, int *mb) {
  const int bh0 = s->bh0, i0 = s->i0;
  int m;
  for (m = s->n_mb - 1; m > 0; --m) {
    const int cnt = s->bh_n - bh0 - (i0 <= m && m <= s->n_mb - 1 - i0 ? 0 : 1);
    if (u < cnt) break;
    u -= cnt;
  }
  const int cnt = s->bh_n - bh0 - (i0 <= m && m <= s->n_mb - 1 - i0 ? 0 : 1);
  *mb = m, *bh = s->bh_n - cnt + u;
}

/* The tile of CTA k (of g) in round r: head bh (b * hq + h) and m block mb;
 * 0: none this round. */
WS_HD int ws_tile_order(const ws_sched *s, int causal, int r, int g, int k, int *bh, int *mb) {
  if (s->n_single && r >= s->r_pp) { /* the end-short order's singles */
    const int rr = r - s->r_pp, u = rr * g + ((rr & 1) ? g - 1 - k : k);
    if (u >= s->n_single) return 0;
    ws_single_at(s, u, bh, mb);
  } else if (s->n_pairs) {
    const int pr = (r >> 1) * g + k, h2 = s->n_mb / 2, full = s->bh_n * h2;
    if (pr >= s->n_pairs) return 0;
    if (pr < full) { /* m blocks n_mb - 1 - i, then i, of one head */
      *bh = ws_div(s->div[WS_DIV_H2], pr);
      const int i = pr - *bh * h2;
      *mb = (r & 1) ? i : s->n_mb - 1 - i;
    } else { /* the middle m block of two heads */
      *bh = 2 * (pr - full) + (r & 1), *mb = h2;
      if (*bh >= s->bh_n) return 0;
    }
  } else {
    const int snake = (r & 1) && causal;
    const int t = r * g + (snake ? g - 1 - k : k);
    if (t >= s->n_tiles) return 0;
    if (causal) { /* longest first: the last m blocks of every head, then the next */
      const int q = ws_div(s->div[WS_DIV_BH], t);
      *mb = s->n_mb - 1 - q, *bh = t - q * s->bh_n;
    } else {
      *bh = ws_div(s->div[WS_DIV_MB], t), *mb = t - *bh * s->n_mb;
    }
  }
  return 1;
}

#endif
