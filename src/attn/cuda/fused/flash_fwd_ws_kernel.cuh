// flash on Hopper, warp-specialized (sm_90a only; FlashAttention-3's design,
// written from the paper and the PTX ISA, no code copied).
//
// CTA: 1 + kCons warpgroups (384 threads; 512 for FA3's D64 tile), one CTA
// per SM, persistent. Tile shape: ws_shape (ws_tile.h), picked per (D, causal, Sq).
//  - warpgroup 0, the producer, gives its registers away (setmaxnreg); one
//    thread issues every TMA load: Q once per tile, K and V through
//    kStages-deep rings with full/empty mbarriers, in the order K0, Q, K1,
//    V0, K2, V1, ... so that S of tile j+1 can start before V j lands.
//  - warpgroups 1..kCons, the consumers, own 64 query rows each (wgmma M =
//    64). Per key tile j (reverse order: the tail and causal diagonal tiles
//    first, the only ones masked): issue S(j) = Q K(j)^T, issue O += P(j-1)
//    V(j-1) (P in registers), wait S, mask, softmax -> P(j), wait O, O *=
//    alpha (skipped by a warp whose rows all kept their max). So the softmax
//    runs under the previous P V, and the consumers take turns (named
//    barriers, round robin: ping-pong) so that one's softmax runs under the
//    others' products. At D64 and D128 the softmax is the stale-max form
//    (ws_softmax_stale), at D256 the online one with a lazy max (wg_softmax).
//  - epilogue: with two Q buffers O / l goes through this tile's Q buffer and
//    TMA stores while the next tile's Q loads into the other; with one, O / l
//    goes from registers to global memory (ws_store_out) and each warp hands
//    Q back after its last S product.
// Tiles: a static persistent schedule, grid = min(#SMs, tiles) (ws_sched).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_FLASH_FWD_WS_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_FLASH_FWD_WS_KERNEL_CUH

#include <limits.h>

#include "attn/cuda/fused/flash_fwd_wgmma_kernel.cuh"
#include "attn/cuda/fused/ws_sync.cuh"
#include "attn/cuda/fused/ws_tile.h"
#include "attn/cuda/fused/ws_tma.h"

template <int kD, int kTile>
struct ws_cfg : ws_shape<kD, kTile> {
  using S = ws_shape<kD, kTile>;
  static constexpr int kBM = S::kBM, kBN = S::kBN, kStages = S::kStages, kCons = S::kCons;
  static constexpr int kThreads = 128 * (1 + kCons);
  static constexpr uint32_t kQ = kBM * kD * 2, kKV = kBN * kD * 2;
  // Two Q buffers where they fit (Q of the next tile loads under this one's
  // loop and epilogue): D64 and D128's 128 x 128; one at D256 and D128 x 176.
  // Barriers: Q full/empty (two slots), per stage K/V full/empty.
  static constexpr int kBarBytes = 32 + 32 * kStages;
  static constexpr int kQBufs = 1024 + 2 * kQ + 2 * kStages * kKV + kBarBytes <= 227 * 1024 ? 2 : 1;
  static constexpr uint32_t kBars = kQBufs * kQ + 2 * kStages * kKV; // barrier block offset
  static constexpr int kSmem = 1024 + kBars + kBarBytes;
};

// A tile of the persistent schedule: m block, head, batch, and how many key
// tiles its rows may see (0: none, bottom-right causal with Sq > Sk).
struct ws_tile {
  int b, h, m0, n_blocks;
};

// The persistent schedule, one tile per CTA per round (G = gridDim.x CTAs).
// Non-causal: tile t = round r G + CTA k, m block fastest, so CTAs running
// together share one head's K and V in L2.
// Causal, long sequences: longest first over all heads (the last m block of
// every head, then the one before), odd rounds dealt in reverse CTA order (a
// snake) so that no CTA takes the longest of every round.
// Causal, short sequences (kBM G < 384 (batch x heads)) and more tiles than
// CTAs: each head's m blocks are paired, i with n_mb - 1 - i (the same work
// in every pair), pairs dealt head by head, CTA k taking pair (r / 2) G + k:
// its long tile in even rounds, its short one in odd rounds, so that a
// round's K and V come from few heads and stay in L2. With n_mb odd the
// middle m blocks pair with each other, two heads per pair, after the rest.
// With n_mb even, pairs run only for the rounds every CTA fills (F rounds,
// one less when the last would be under three quarters full); the rest's m
// blocks follow one per CTA and round, longest first, in a snake
// (ws_single_at), so that the schedule ends on short tiles.
struct ws_sched {
  int n_mb, bh_n, n_tiles, n_pairs; // n_pairs: 0 unless paired
  int n_pp, n_single;               // the end-short order's split; n_single 0: off
  int r_pp, bh0, i0;                // its rounds of pairs; the first single's head and pair
};

FUSED_DEV ws_sched ws_sched_of(const attn_fused_params &p, int kBM) {
  ws_sched s;
  const int g = (int)gridDim.x;
  s.n_mb = (p.sq + kBM - 1) / kBM, s.bh_n = p.b * p.hq, s.n_tiles = s.n_mb * s.bh_n;
  const bool pair = kBM * g < 384 * s.bh_n;
  s.n_pairs = 0, s.n_pp = 0, s.n_single = 0, s.r_pp = 0, s.bh0 = 0, s.i0 = 0;
  if (p.causal && pair && s.n_tiles > g)
    s.n_pairs = s.bh_n * (s.n_mb / 2) + (s.n_mb & 1 ? (s.bh_n + 1) / 2 : 0);
  if (s.n_pairs && !(s.n_mb & 1)) {
    const int f = s.n_pairs / g, rem = s.n_pairs - f * g;
    const int ff = f - (4 * rem < 3 * g ? 1 : 0);
    if (rem && ff >= 0) {
      s.n_pp = ff * g, s.n_single = 2 * (s.n_pairs - s.n_pp), s.r_pp = 2 * ff;
      s.bh0 = s.n_pp / (s.n_mb / 2), s.i0 = s.n_pp % (s.n_mb / 2);
    }
  }
  return s;
}

// Rounds of the persistent loop (a pair takes two).
FUSED_DEV int ws_rounds(const ws_sched &s) {
  const int g = (int)gridDim.x;
  if (s.n_single) return s.r_pp + (s.n_single + g - 1) / g;
  return s.n_pairs ? 2 * ((s.n_pairs + g - 1) / g) : (s.n_tiles + g - 1) / g;
}

// The end-short order's single u (0: the longest): m blocks from the last
// down, at each the heads that still have it (the pairs past n_pp: head
// n_pp / h2 from its pair n_pp % h2 on, every later head whole), in head
// order so that a round's K and V come from few heads.
FUSED_DEV void ws_single_at(const ws_sched &s, int u, int &bh, int &mb) {
  const int bh0 = s.bh0, i0 = s.i0;
  for (mb = s.n_mb - 1; mb > 0; --mb) {
    const int cnt = s.bh_n - bh0 - (i0 <= mb && mb <= s.n_mb - 1 - i0 ? 0 : 1);
    if (u < cnt) break;
    u -= cnt;
  }
  const int cnt = s.bh_n - bh0 - (i0 <= mb && mb <= s.n_mb - 1 - i0 ? 0 : 1);
  bh = s.bh_n - cnt + u;
}

// The divisors of the tile schedule, p.ws_div's rows: heads, the GQA group,
// batch x heads, m blocks, m blocks / 2.
enum { WS_DIV_HQ, WS_DIV_GRP, WS_DIV_BH, WS_DIV_MB, WS_DIV_H2, WS_DIV_N };

// Host: m and l such that n / d = (umulhi(m, n) + n) >> l for 0 <= n < 2^31
// (Granlund and Montgomery's round-up multiplier; d >= 1).
static inline void ws_div_set(unsigned int (&dv)[2], int d) {
  unsigned l = 0;
  while ((1ull << l) < (unsigned long long)d) ++l;
  dv[0] = (unsigned)(((1ull << 32) * ((1ull << l) - (unsigned long long)d)) / (unsigned long long)d + 1);
  dv[1] = l;
}

// n / d for the tile schedule (0 <= n < 2^31) by the multiplier and shift
// the host set in p.ws_div[k] (ws_div_set: one IMAD.HI, an add, a shift): a
// plain division by a run-time value goes through the XU pipe (I2F, MUFU.RCP,
// F2I), where it queues behind the other consumer's exps.
FUSED_DEV int ws_div(const attn_fused_params &p, int k, int n) {
  return (int)((__umulhi(p.ws_div[k][0], (uint32_t)n) + (uint32_t)n) >> p.ws_div[k][1]);
}

// The Q buffer of this CTA's tile tc and its phase parity, nq (1 or 2) buffers.
FUSED_DEV int ws_qbuf(uint32_t tc, int nq) { return nq > 1 ? (int)(tc & 1u) : 0; }
FUSED_DEV uint32_t ws_qpar(uint32_t tc, int nq) { return (nq > 1 ? tc >> 1 : tc) & 1u; }

// The tile of m block mb of head bh (b * hq + h).
template <int kBM, int kBN>
FUSED_DEV void ws_tile_fill(const attn_fused_params &p, int bh, int mb, ws_tile &w) {
  w.b = ws_div(p, WS_DIV_HQ, bh), w.h = bh - w.b * p.hq, w.m0 = mb * kBM;
  int n_end = p.sk;
  if (p.causal) n_end = min(n_end, w.m0 + min(kBM, p.sq - w.m0) + p.causal_off);
  w.n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
}

// The tile this CTA runs in round r; false: none this round.
template <int kBM, int kBN>
FUSED_DEV bool ws_tile_at(const attn_fused_params &p, const ws_sched &s, int r, ws_tile &w) {
  const int g = (int)gridDim.x, k = (int)blockIdx.x;
  int mb, bh;
  if (s.n_single && r >= s.r_pp) { // the end-short order's singles
    const int rr = r - s.r_pp, u = rr * g + ((rr & 1) ? g - 1 - k : k);
    if (u >= s.n_single) return false;
    ws_single_at(s, u, bh, mb);
  } else if (s.n_pairs) {
    const int pr = (r >> 1) * g + k, h2 = s.n_mb / 2, full = s.bh_n * h2;
    if (pr >= s.n_pairs) return false;
    if (pr < full) { // m blocks n_mb - 1 - i, then i, of one head
      bh = ws_div(p, WS_DIV_H2, pr);
      const int i = pr - bh * h2;
      mb = (r & 1) ? i : s.n_mb - 1 - i;
    } else { // the middle m block of two heads
      bh = 2 * (pr - full) + (r & 1), mb = h2;
      if (bh >= s.bh_n) return false;
    }
  } else {
    const bool snake = (r & 1) && p.causal;
    const int t = r * g + (snake ? g - 1 - k : k);
    if (t >= s.n_tiles) return false;
    if (p.causal) { // longest first: the last m blocks of every head, then the next
      const int q = ws_div(p, WS_DIV_BH, t);
      mb = s.n_mb - 1 - q, bh = t - q * s.bh_n;
    } else {
      bh = ws_div(p, WS_DIV_MB, t), mb = t - bh * s.n_mb;
    }
  }
  ws_tile_fill<kBM, kBN>(p, bh, mb, w);
  return true;
}

// The stale-max softmax (D64, D128): past the first key tiles, exps are
// taken against the row's running max m as it stands, with no max of the
// tile (per score: FFMA, exp2, FADD, half an F2FP). The sums check it
// afterwards: a lane's sum over its P of a row half bounds each of them, so
// sums <= kWsStaleCap (2^8, the lazy rule's bound on P) in every lane of the
// warp keep P (in pa) and m, and l moves on. Else (a row's max rose by more
// than log2(kWsStaleCap / (kBN / 4)) >= 2.5 log2 units; inf or NaN sums) the
// caller computes S again (ws_warp_s), moves m to the max (ws_raise_max) and
// takes the exps with force (ws_stale_fallback; force is a constant at each
// call: a run-time one made ptxas serialize the wgmma). s is only read, so
// that it is dead after the call. A row with no key yet (m = -inf) takes
// base 0, as wg_row_base.
constexpr float kWsStaleCap = 256.f;
// Its two halves: P and this lane's row sums (ws_stale_exps), then the check
// and l (ws_stale_keep), so that the turn can pass between them.
template <typename T, int kSR>
FUSED_DEV void ws_stale_exps(const float (&s)[kSR], const float (&m)[2], uint32_t (&pa)[kSR / 8][4],
                             float c, float (&sum)[2]) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) sum[hh] = wg_exp_row<T>(s, pa, hh, c, m[hh] == -INFINITY ? 0.f : m[hh] * c);
}
FUSED_DEV bool ws_stale_keep(const float (&sum)[2], float (&l)[2], bool force) {
  if (!force && !__all_sync(0xffffffffu, sum[0] <= kWsStaleCap && sum[1] <= kWsStaleCap)) return false;
  l[0] += sum[0], l[1] += sum[1];
  return true;
}
template <typename T, int kSR>
FUSED_DEV bool ws_softmax_stale(const float (&s)[kSR], const float (&m)[2], float (&l)[2],
                                uint32_t (&pa)[kSR / 8][4], float c, bool force) {
  float sum[2];
  ws_stale_exps<T>(s, m, pa, c, sum);
  return ws_stale_keep(sum, l, force);
}

// The plain online softmax's max step for ws_softmax_stale (wg_row_base
// with tau = 0): m to the max of m and the tile's row (the quad's), l and
// alpha scaled by the move.
template <int kSR>
FUSED_DEV void ws_raise_max(const float (&s)[kSR], float (&m)[2], float (&l)[2], float (&alpha)[2],
                            float c) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float a;
    wg_row_base(wg_row_max(s, hh, m[hh]), m[hh], a, c, 0.f);
    alpha[hh] *= a, l[hh] *= a;
  }
}

// S of one warp's 16 rows again, by mma.sync from the Q and K tiles TMA
// wrote (aQt: kBM rows, kv: kBN keys; TMA's 128-byte swizzle is fused_swz's
// layout), for ws_softmax_stale's fallback: warp-local, where a wgmma would
// need all four warps. Keys 16 kG0 to 16 (kG0 + kN): kN 16-key groups. An
// m16n8 tile's d[2 hh + e] (row g + 8 hh, key 2 t4 + e) is wgmma's
// s[4 j + 2 hh + e] for 8-key group j.
template <typename T, int kD, int kBM, int kBN, int kG0, int kN>
FUSED_DEV void ws_warp_s(float (&s)[8 * kN], uint32_t aQt, uint32_t kv, int wrow, int lane) {
  // ldmatrix lanes as fused_fwd_body's: Q rows wrow + lane % 16, chunk
  // lane / 16; K keys 8 (lane / 16) + lane % 8, chunk (lane / 8) % 2.
  const uint32_t lq = fused_lane<kD>(aQt, wrow + (lane & 15), lane >> 4);
  const uint32_t lk = fused_lane<kD>(kv, (lane >> 4) * 8 + (lane & 7), (lane >> 3) & 1);
#pragma unroll
  for (int i = 0; i < 8 * kN; ++i) s[i] = 0.f;
#pragma unroll 1
  for (int kk = 0; kk < kD / 16; ++kk) {
    uint32_t a[4];
    fused_ldmatrix_x4(a, fused_lane_off<kBM, kD>(lq, 0, 2 * kk));
#pragma unroll
    for (int n2 = 0; n2 < kN; ++n2) {
      uint32_t b[4];
      fused_ldmatrix_x4(b, fused_lane_off<kBN, kD>(lk, (kG0 + n2) * 16, 2 * kk));
      fused_mma<T>(&s[8 * n2], a, b[0], b[1]);
      fused_mma<T>(&s[8 * n2 + 4], a, b[2], b[3]);
    }
  }
}

// ws_softmax_stale's fallback for one warp's rows: S again (ws_warp_s), m to
// the row max (ws_raise_max), then P with force. kHalves (the FA3 tiles): in
// two halves of the keys, each computed twice (max, then exps), so that only
// half of S is live next to O: a whole second S made them spill. mask(s, k0)
// masks a part whose first key is k0 in the tile.
template <typename T, int kD, int kBM, int kBN, bool kHalves, class Mask>
FUSED_DEV void ws_stale_fallback(uint32_t (&pa)[kBN / 16][4], float (&m)[2], float (&l)[2],
                                 float (&alpha)[2], float c, uint32_t aQt, uint32_t kv, int wrow,
                                 int lane, Mask mask) {
  constexpr int kG = kBN / 16, kH0 = (kG + 1) / 2, kH1 = kG - kH0;
  if constexpr (!kHalves) {
    float s[8 * kG];
    ws_warp_s<T, kD, kBM, kBN, 0, kG>(s, aQt, kv, wrow, lane);
    mask(s, 0);
    ws_raise_max(s, m, l, alpha, c);
    ws_softmax_stale<T>(s, m, l, pa, c, true);
  } else {
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass) {
      {
        float s[8 * kH0];
        ws_warp_s<T, kD, kBM, kBN, 0, kH0>(s, aQt, kv, wrow, lane);
        mask(s, 0);
        if (pass == 0) ws_raise_max(s, m, l, alpha, c);
        else ws_softmax_stale<T>(s, m, l, reinterpret_cast<uint32_t (&)[kH0][4]>(pa[0]), c, true);
      }
      {
        float s[8 * kH1];
        ws_warp_s<T, kD, kBM, kBN, kH0, kH1>(s, aQt, kv, wrow, lane);
        mask(s, 16 * kH0);
        if (pass == 0) ws_raise_max(s, m, l, alpha, c);
        else ws_softmax_stale<T>(s, m, l, reinterpret_cast<uint32_t (&)[kH1][4]>(pa[kH0]), c, true);
      }
    }
  }
}

// O *= alpha after a tile's softmax; a warp skips it when none of its 16
// rows moved its max (every alpha exactly 1): with the lazy max that is most
// key tiles after the first.
template <int kOR>
FUSED_DEV void ws_rescale(float (&o)[kOR], const float (&alpha)[2]) {
  if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) wg_rescale(o, alpha);
}

// Shared-memory barrier addresses: Q full/empty per Q buffer (two slots),
// then per stage K full, K empty, V full, V empty.
struct ws_bars {
  uint32_t base;
  __device__ __forceinline__ uint32_t q_full(int b) const { return base + 16 * b; }
  __device__ __forceinline__ uint32_t q_empty(int b) const { return base + 16 * b + 8; }
  __device__ __forceinline__ uint32_t k_full(int s) const { return base + 32 + 32 * s; }
  __device__ __forceinline__ uint32_t k_empty(int s) const { return base + 40 + 32 * s; }
  __device__ __forceinline__ uint32_t v_full(int s) const { return base + 48 + 32 * s; }
  __device__ __forceinline__ uint32_t v_empty(int s) const { return base + 56 + 32 * s; }
};

// The producer thread: every load of every tile of this CTA.
template <int kD, int kTile>
FUSED_DEV void ws_produce(const attn_fused_params &p, const attn_ws_maps &mp, ws_bars br,
                          uint32_t aQ, uint32_t aK, uint32_t aV, const ws_sched &sc) {
  using C = ws_cfg<kD, kTile>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages, nq = C::kQBufs;
  const int rounds = ws_rounds(sc);
  uint32_t it = 0, tc = 0; // key tiles and CTA tiles so far
  for (int r = 0; r < rounds; ++r) {
    ws_tile w;
    if (!ws_tile_at<kBM, kBN>(p, sc, r, w)) continue;
    const int qb = ws_qbuf(tc, nq);
    const int hk = ws_div(p, WS_DIV_GRP, w.h), n = w.n_blocks;
    auto load_kv = [&](const CUtensorMap *map, uint32_t dst, uint32_t bar, int key) {
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk) ws_tma_load(dst + (uint32_t)(blk * kBN * 128), map, bar, blk * 64, key, hk, w.b);
    };
    auto load_k = [&](int i) {
      const uint32_t j = it + i, s = j % kS;
      ws_bar_wait<true>(br.k_empty(s), ((j / kS) & 1) ^ 1);
      ws_bar_expect(br.k_full(s), C::kKV);
      load_kv(&mp.k, aK + s * C::kKV, br.k_full(s), (n - 1 - i) * kBN);
    };
    auto load_v = [&](int i) {
      const uint32_t j = it + i, s = j % kS;
      ws_bar_wait<true>(br.v_empty(s), ((j / kS) & 1) ^ 1);
      ws_bar_expect(br.v_full(s), C::kKV);
      load_kv(&mp.v, aV + s * C::kKV, br.v_full(s), (n - 1 - i) * kBN);
    };
    auto load_q = [&]() {
      ws_bar_wait(br.q_empty(qb), ws_qpar(tc, nq) ^ 1);
      ws_bar_expect(br.q_full(qb), C::kQ);
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk)
        ws_tma_load(aQ + qb * C::kQ + blk * kBM * 128, &mp.q, br.q_full(qb), blk * 64, w.m0, w.h, w.b);
    };
    // One Q buffer: K0 first (Q waits for the last tile's epilogue). Two: Q
    // first, its slot is free and it then lands under the last tile's loop.
    if (nq > 1) load_q();
    if (n > 0) load_k(0);
    if (nq == 1) load_q();
    for (int i = 1; i < n; ++i) {
      load_k(i);
      load_v(i - 1);
    }
    if (n > 0) load_v(n - 1);
    it += (uint32_t)n;
    ++tc;
  }
}

// Transposes 4 x 4 words across a quad of lanes (lane t4 ends with word t4
// of each lane's a, in lane order), in two xor-shuffle stages: 2 x 2 blocks
// inside lane pairs, then the pairs' off-diagonal blocks.
FUSED_DEV void ws_quad_transpose(uint32_t (&a)[4], int t4) {
  const bool p1 = t4 & 1, p2 = t4 & 2;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint32_t r = __shfl_xor_sync(0xffffffffu, p1 ? a[2 * k] : a[2 * k + 1], 1);
    if (p1) a[2 * k] = r; else a[2 * k + 1] = r;
  }
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const uint32_t r = __shfl_xor_sync(0xffffffffu, p2 ? a[e] : a[e + 2], 2);
    if (p2) a[e] = r; else a[e + 2] = r;
  }
}

// Epilogue where one Q buffer fits: O / l from the accumulators straight to
// global memory (og: this tile's row 0, ss: the row stride; rows: rows left
// in the tensor), so that the Q buffer is not needed to stage O and the next
// tile's Q loads under this tile's last products. A quad's lanes hold 2
// columns of each 8-column block; after ws_quad_transpose each lane holds 8
// consecutive columns, one 16-byte store (a warp writes 8 rows x 64 bytes).
template <typename T, int kD>
FUSED_DEV void ws_store_out(T *og, int64_t ss, const float (&o)[kD / 2], const float (&m)[2],
                            const float (&l)[2], int r0, int t4, float c, float *lse, int rows) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float sum = wg_row_sum(l[hh]), inv = sum == 0.f ? 0.f : __fdividef(1.f, sum);
    const int r = r0 + 8 * hh;
#pragma unroll
    for (int jj = 0; jj < kD / 32; ++jj) {
      uint32_t a[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int j = 4 * jj + q;
        a[q] = fused_pack2<T>(o[4 * j + 2 * hh] * inv, o[4 * j + 2 * hh + 1] * inv);
      }
      ws_quad_transpose(a, t4);
      if (r < rows) *(uint4 *)(og + (int64_t)r * ss + 32 * jj + 8 * t4) = make_uint4(a[0], a[1], a[2], a[3]);
    }
    wg_put_lse(lse, m[hh], sum, c, r, t4, rows);
  }
}

// Hands the Q buffer whose O this warpgroup stored back to the producer,
// once the TMA store has read it (thread 0 of the warpgroup issued it).
// Called as late as the next tile's first S issue where two Q buffers let
// the next tile start meanwhile, so the store's read runs under that S.
FUSED_DEV void ws_q_release(ws_bars br, int &q_held, int ctid) {
  if (q_held < 0) return;
  if (ctid == 0) {
    ws_tma_store_wait_read();
    ws_bar_arrive_n(br.q_empty(q_held), 4); // for the warpgroup's 4 warps
  }
  q_held = -1;
}

// Ping-pong: turns go round the kCons consumers (cw waits on barrier 1 + cw,
// passes to the next one's), taken where kHere says: around the product
// issue (a consumer waits for its turn, issues S and P V, hands it over), or
// around each softmax's exps (ws_tile.h kWsTurnExp: the D64 base tile), as
// cuDNN's D64 kernel does: at D64 a consumer's exps take the special-function
// unit as long as its two products take the tensor cores, and each SM
// sub-partition holds one warp of every consumer, so turns over the exps
// keep two softmaxes off one unit. Either way each consumer takes one turn
// per product issue or softmax, the same count per tile, so the round robin
// stays in step.
template <bool kHere = true>
FUSED_DEV void ws_turn_wait(int cw) {
  if (kHere) ws_named_sync(1 + cw, 256);
}
template <int kCons, bool kHere = true>
FUSED_DEV void ws_turn_pass(int cw) {
  if (kHere) ws_named_arrive(1 + (cw + 1) % kCons, 256);
}
// The hand-over after the exps. ptxas moves register-only work across
// bar.arrive (it put every exp after it), so the arrival's thread count
// goes through the row sums l, which need every exp: l is never negative (a
// sum of exps times alphas), so 0 is added, and NaN adds 0 too.
template <int kCons, bool kHere>
FUSED_DEV void ws_turn_pass_exp(int cw, const float (&l)[2]) {
  if (kHere) {
    const uint32_t z = __any_sync(0xffffffffu, l[0] < 0.f || l[1] < 0.f) ? 32u : 0u;
    ws_named_arrive(1 + (cw + 1) % kCons, 256 + z);
  }
}

// The hand-over after the stale-max exps (ws_tile.h kWsLate: the D64 base
// tile): the arrival's count goes through the row sums and P's packs
// instead of l, with no vote: min(sum, 0) is +0 for sums of exps (never
// negative; NaN gives 0 too), so its bits and-ed with the packs' or are 0 in
// every lane, and the exps and the packs stay before the arrival while the
// stale-max check's vote and l come after it.
template <int kCons, bool kHere, int kG>
FUSED_DEV void ws_turn_pass_late(int cw, const float (&sum)[2], const uint32_t (&pa)[kG][4]) {
  if (kHere) {
    uint32_t o = 0;
#pragma unroll
    for (int g = 0; g < kG; ++g) o |= pa[g][0] | pa[g][1] | pa[g][2] | pa[g][3];
    const uint32_t z = __float_as_uint(fminf(sum[0] + sum[1], 0.f)) & o;
    ws_named_arrive(1 + (cw + 1) % kCons, 256 + z);
  }
}

// Releases a slot: one arrival per warp once its wgmma are done.
FUSED_DEV void ws_release(uint32_t bar, int lane) {
  __syncwarp();
  if (lane == 0) ws_bar_arrive(bar);
}

template <typename T, int kD, int kTile>
__global__ void __launch_bounds__(ws_cfg<kD, kTile>::kThreads, 1)
    flash_fwd_ws_kernel(const __grid_constant__ attn_fused_params p,
                        const __grid_constant__ attn_ws_maps mp) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = ws_cfg<kD, kTile>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages, kCons = C::kCons;
  constexpr int kSR = kBN / 2, kOR = kD / 2, nq = C::kQBufs;
  constexpr bool kStale = kWsStale<kD>, kTurnExp = kWsTurnExp<kD, kTile>, kLate = kWsLate<kD, kTile>;
  constexpr bool kDiagHalf = kWsDiagHalf<kD>;
  constexpr int kKeep = ws_diag_keep<kBN>;
  // Where keys 0..kKeep-1 are visible in all its rows, only the rest
  // masked: not at FA3's D64 tile (128 registers: that third mask made
  // ptxas spill).
  constexpr bool kLowMask = kDiagHalf && !(kD == 64 && kTile == WS_TILE_FA3);
  static_assert(C::kQBufs <= 2, "ws_qbuf takes one or two Q buffers");
  extern __shared__ __align__(1024) char smem[];
  char *base = smem + ((1024u - (fused_smem_addr(smem) & 1023u)) & 1023u);
  const uint32_t aQ = fused_smem_addr(base), aK = aQ + C::kQBufs * C::kQ, aV = aK + kS * C::kKV;
  const ws_bars br{aQ + C::kBars};
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  const ws_sched sc = ws_sched_of(p, kBM);

  if (tid == 0) {
    for (int b = 0; b < 2; ++b) ws_bar_init(br.q_full(b), 1), ws_bar_init(br.q_empty(b), 4 * kCons);
    for (int s = 0; s < kS; ++s) {
      ws_bar_init(br.k_full(s), 1), ws_bar_init(br.v_full(s), 1);
      ws_bar_init(br.k_empty(s), 4 * kCons), ws_bar_init(br.v_empty(s), 4 * kCons);
    }
    ws_bar_init_fence();
  }
  __syncthreads();

  if (wg == 0) { // producer
    ws_regs_dec<C::kProdRegs>();
    if (tid == 0) {
      ws_tma_prefetch_map(&mp.q), ws_tma_prefetch_map(&mp.k), ws_tma_prefetch_map(&mp.v);
      ws_produce<kD, kTile>(p, mp, br, aQ, aK, aV, sc);
    }
    __syncwarp();
    return;
  }

  ws_regs_inc<C::kConsRegs>();
  const int cw = wg - 1, ctid = tid & 127, g = lane >> 2, t4 = lane & 3;
  const int wrow = cw * 64 + (ctid >> 5) * 16; // this warp's first row in the tile
  const float c = p.scale_log2;
  // Lazy softmax: a row's max moves only by more than kWsTau (log2 units).
  const float tau = kWsTau;
  if (cw == kCons - 1) ws_named_arrive(1, 256); // consumer 0 goes first
  const int rounds = ws_rounds(sc);
  uint32_t it = 0, tc = 0;
  int q_held = -1; // a Q buffer whose O store may still be reading it
  // One Q buffer: O goes out from registers (ws_store_out) and each warp
  // hands Q back as soon as its last S product is done.
  constexpr bool q_early = nq == 1;
  for (int r = 0; r < rounds; ++r) {
    ws_tile w;
    if (!ws_tile_at<kBM, kBN>(p, sc, r, w)) continue;
    const int qb = ws_qbuf(tc, nq);
    const uint32_t aQt = aQ + (uint32_t)qb * C::kQ; // this tile's Q (then O)
    float o[kOR], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < kOR; ++i) o[i] = 0.f;
    ws_bar_wait(br.q_full(qb), ws_qpar(tc, nq));
    const int n = w.n_blocks;
    const int mrow0 = w.m0 + cw * 64; // first row of this warpgroup
    // After S of tile index i: Q's last reader done when i is the last.
    auto q_done = [&](int i) {
      if (q_early && i == n - 1) ws_release(br.q_empty(qb), lane);
    };
    if (n == 0) q_done(-1);
    // S(j) into s: the product of tile index i (key tile n - 1 - i).
    auto issue_s = [&](float (&s)[kSR], uint32_t j) {
      const uint32_t kv = aK + (j % kS) * C::kKV;
      // Q's address again at each S: in the FA3 tiles' stale form, Q's
      // descriptors held across the key loop were what ptxas spilled.
      uint32_t q = aQt;
      if constexpr (kStale && kTile == WS_TILE_FA3) asm volatile("" : "+r"(q));
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const uint32_t off = (uint32_t)((kk % 4) * 32);
        const uint64_t da = wg_desc(q + (uint32_t)((kk / 4) * kBM * 128 + cw * 64 * 128) + off, 16, 1024);
        const uint64_t db = wg_desc(kv + (uint32_t)((kk / 4) * kBN * 128) + off, 16, 1024);
        wgmma_op<T, kBN>::ss(s, da, db, kk > 0);
      }
      wg_commit();
    };
    auto issue_pv = [&](const uint32_t (&pa)[kSR / 8][4], uint32_t j) {
      const uint32_t vv = aV + (j % kS) * C::kKV;
#pragma unroll
      for (int kk = 0; kk < kBN / 16; ++kk)
        wgmma_op<T, kD>::rs(o, pa[kk], wg_desc(vv + (uint32_t)(kk * 16 * 128), kBN * 128, 1024));
      wg_commit();
    };
    // k0: the first key of s in the tile (a part of it, in the stale fallback).
    auto mask = [&](auto &s, int i, int k0 = 0) {
      const int n0 = (n - 1 - i) * kBN;
      if (n0 + kBN > p.sk || (p.causal && n0 + kBN - 1 > mrow0 + p.causal_off))
        wg_mask(s, p, w.m0 + wrow + g, n0 + k0, t4);
    };

    // The last key tile's P V, after the loop.
    auto finish = [&](const uint32_t (&pc)[kSR / 8][4]) {
      const uint32_t jv = it + n - 1;
      ws_bar_wait(br.v_full(jv % kS), (jv / kS) & 1);
      ws_turn_wait<!kTurnExp>(cw);
      wg_hold(o);
      wg_fence();
      issue_pv(pc, jv);
      ws_turn_pass<kCons, !kTurnExp>(cw);
      wg_wait_all();
      wg_hold(o);
      ws_release(br.v_empty(jv % kS), lane);
    };

    if (n > 0) {
      uint32_t pa[kSR / 8][4];
      float alpha[2];
      // kDiagHalf: the first key tile's keys 0..kKeep-1 visible in all of
      // this consumer's rows (so each row's max is of kKeep keys or more).
      bool low = false;
      {
        float s[kSR];
        ws_bar_wait(br.k_full(it % kS), (it / kS) & 1);
        ws_turn_wait<!kTurnExp>(cw);
        wg_fence();
        issue_s(s, it);
        ws_turn_pass<kCons, !kTurnExp>(cw);
        ws_q_release(br, q_held, ctid); // the last tile's Q buffer, under this S
        wg_wait_all();
        wg_hold(s);
        ws_release(br.k_empty(it % kS), lane);
        q_done(0);
        // kDiagHalf: are keys kKeep.. of this tile masked in every row of
        // this consumer (part: its last row within Sq), or keys 0..kKeep-1
        // visible in every row (low: its first row's limit)? Uniform over the
        // warpgroup, taken by votes so that ptxas knows it (else it adds a
        // divergent copy of the shuffles); only the mask and softmax are
        // under them, never a wgmma. Masked keys add exp2(-inf) = 0 to l and
        // P, so m, l and P are the whole tile's; the visible ones need no mask.
        auto &sh = reinterpret_cast<float (&)[kKeep / 2]>(s);
        auto &su = reinterpret_cast<float (&)[kSR - kKeep / 2]>(s[kKeep / 2]);
        auto &ph = reinterpret_cast<uint32_t (&)[kKeep / 16][4]>(pa);
        bool part = false;
        if constexpr (kDiagHalf) {
          const int last = min(mrow0 + 63, p.sq - 1), n0 = (n - 1) * kBN;
          const int lim0 = min(p.sk - 1, p.causal ? mrow0 + p.causal_off : INT_MAX);
          part = __all_sync(0xffffffffu, min(p.sk - 1, p.causal ? last + p.causal_off : INT_MAX) < n0 + kKeep);
          low = __all_sync(0xffffffffu, lim0 >= n0 + kKeep - 1);
        }
        if (part) mask(sh, 0);
        else if (kLowMask && low) mask(su, 0, kKeep);
        else mask(s, 0);
        ws_turn_wait<kTurnExp>(cw);
        if (part) {
          wg_softmax<T>(sh, m, l, ph, alpha, c, tau);
#pragma unroll
          for (int f = kKeep / 16; f < kSR / 8; ++f) pa[f][0] = pa[f][1] = pa[f][2] = pa[f][3] = 0u;
        } else {
          wg_softmax<T>(s, m, l, pa, alpha, c, tau);
        }
        ws_turn_pass_exp<kCons, kTurnExp>(cw, l);
      }
      // Key tile i: S(i) and P(i-1) V(i-1) issued together; P(i) lands in pn.
      // Unrolled by two so that P(i-1) and P(i) never share registers (a
      // wgmma still reading its A registers must not see them rewritten).
      auto step = [&](int i, const uint32_t (&pc)[kSR / 8][4], uint32_t (&pn)[kSR / 8][4]) {
        const uint32_t j = it + i, jv = j - 1;
        float s[kSR];
        ws_bar_wait(br.k_full(j % kS), (j / kS) & 1);
        ws_bar_wait(br.v_full(jv % kS), (jv / kS) & 1);
        ws_turn_wait<!kTurnExp>(cw);
        wg_hold(o);
        wg_fence();
        issue_s(s, j);
        float a2[2];
        issue_pv(pc, jv);
        ws_turn_pass<kCons, !kTurnExp>(cw);
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        wg_hold(s);
        if constexpr (kStale) {
          // The stale-max softmax, its max first (fresh) in the first two
          // key tiles when causal (the diagonal tile gives the top rows a
          // few keys; not at the second in a consumer whose rows all saw
          // kKeep keys of the first) and while a row has none (m = -inf).
          const bool fresh = __any_sync(0xffffffffu, (i <= p.causal && !(kDiagHalf && low)) ||
                                                         m[0] == -INFINITY || m[1] == -INFINITY);
          a2[0] = a2[1] = 1.f;
          mask(s, i);
          if (fresh) ws_raise_max(s, m, l, a2, c);
          ws_turn_wait<kTurnExp>(cw);
          bool ok; // P <= 1 if fresh
          if constexpr (kLate) {
            float sum[2];
            ws_stale_exps<T>(s, m, pn, c, sum);
            ws_turn_pass_late<kCons, kTurnExp>(cw, sum, pn);
            ok = ws_stale_keep(sum, l, false);
          } else {
            ok = ws_softmax_stale<T>(s, m, l, pn, c, false);
            ws_turn_pass_exp<kCons, kTurnExp>(cw, l);
          }
          wg_wait_all();
          wg_hold(o);
          ws_release(br.v_empty(jv % kS), lane);
          // A failed check: S again, from K and Q still held, by this
          // warp alone (mma.sync), now that P V is done.
          if (!ok) {
            ws_stale_fallback<T, kD, kBM, kBN, kTile == WS_TILE_FA3>(pn, m, l, a2, c, aQt, aK + (j % kS) * C::kKV, wrow,
                                               lane, [&](auto &sp, int k0) { mask(sp, i, k0); });
          }
          ws_release(br.k_empty(j % kS), lane);
          q_done(i);
        } else {
          ws_release(br.k_empty(j % kS), lane);
          q_done(i);
          mask(s, i);
          ws_turn_wait<kTurnExp>(cw);
          wg_softmax<T>(s, m, l, pn, a2, c, tau);
          ws_turn_pass_exp<kCons, kTurnExp>(cw, l);
          wg_wait_all();
          wg_hold(o);
          ws_release(br.v_empty(jv % kS), lane);
        }
        ws_rescale(o, a2);
      };
      uint32_t pb[kSR / 8][4];
      int i = 1;
      for (; i + 1 < n; i += 2) {
        step(i, pa, pb);
        step(i + 1, pb, pa);
      }
      if (i < n) {
        step(i, pa, pb);
        finish(pb);
      } else {
        finish(pa);
      }
    }
    it += (uint32_t)n;

    // Epilogue: O / l into this warpgroup's rows of its Q buffer (its
    // products are done with them), then TMA stores of 64 x 64 boxes. The
    // buffer goes back to the producer once they have read it: here with
    // one Q buffer (the next tile's Q needs it), else under the next S.
    ws_q_release(br, q_held, ctid); // still held only when this tile had no key tile
    float *lse = p.lse ? p.lse + ((int64_t)w.b * p.hq + w.h) * p.sq + w.m0 : nullptr;
    if (q_early) {
      T *og = (T *)p.o + w.b * p.o_sb + w.h * p.o_sh + (int64_t)w.m0 * p.o_ss;
      ws_store_out<T, kD>(og, p.o_ss, o, m, l, wrow + g, t4, c, lse, p.sq - w.m0);
      ++tc;
      continue;
    }
    wg_stage_out<T, kBM, kD>((T *)(base + qb * C::kQ), o, m, l, wrow + g, t4, c, lse, p.sq - w.m0);
    wg_fence_smem(); // the generic-proxy writes, before TMA reads them
    ws_named_sync(1 + kCons + cw, 128);
    if (ctid == 0 && mrow0 < p.sq) {
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk)
        ws_tma_store(&mp.o, aQt + (uint32_t)(blk * kBM * 128 + cw * 64 * 128), blk * 64, mrow0, w.h,
                     w.b);
      ws_tma_store_commit();
    }
    q_held = qb;
    if (nq == 1) ws_q_release(br, q_held, ctid);
    ++tc;
  }
  ws_q_release(br, q_held, ctid);
  // The last hand-over of the ping-pong has no taker: consume it so that no
  // named barrier is left half-arrived at exit.
  if (cw == 0) ws_named_sync(1, 256);
  if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  __syncwarp();
#else
  __trap(); // built for sm_90a only; flash_cuda.cu never launches it elsewhere
#endif
}

template <typename T, int kD, int kTile>
static attn_status ws_launch(const attn_fused_params &p0, cudaStream_t stream) {
  attn_fused_params p = p0;
  using C = ws_cfg<kD, kTile>;
  const int n_mb = (p.sq + C::kBM - 1) / C::kBM;
  const int dv[WS_DIV_N] = {p.hq, p.hkv > 0 ? p.hq / p.hkv : 1, p.b * p.hq, n_mb, n_mb / 2};
  for (int k = 0; k < WS_DIV_N; ++k) ws_div_set(p.ws_div[k], dv[k] > 0 ? dv[k] : 1);
  void (*kernel)(const attn_fused_params, const attn_ws_maps) = flash_fwd_ws_kernel<T, kD, kTile>;
  attn_status st = attn_launch_smem_limit(p.ctx, (const void *)kernel, C::kSmem);
  if (st) return st;
  int dev = 0, sms = 132;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  const struct cudaDeviceProp *pr = attn_cuda_props(dev);
  if (pr) sms = pr->multiProcessorCount;
  const int64_t tiles = (int64_t)n_mb * p.hq * p.b;
  const attn_ws_maps *mp = nullptr;
  st = attn_ws_maps_get(&p, __is_same(T, __nv_bfloat16), C::kBM, C::kBN, 64, &mp);
  if (st) return st;
  const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
  kernel<<<grid, C::kThreads, C::kSmem, stream>>>(p, *mp);
  ATTN_CUDA_CHECK_LAUNCH("flash_fwd_ws_kernel");
  return ATTN_STATUS_OK;
}

template <typename T, int kD, int kTile>
attn_status ws_run(const attn_fused_params &p, cudaStream_t stream) {
  return ws_launch<T, kD, kTile>(p, stream);
}

#endif
