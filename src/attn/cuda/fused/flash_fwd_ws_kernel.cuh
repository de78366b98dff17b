// flash on Hopper, warp-specialized (sm_90a only; FlashAttention-3's design,
// written from the paper and the PTX ISA, no code copied).
//
// CTA: 1 + kCons warpgroups (384 threads; 512 for FA3's D64 tile), one CTA
// per SM, persistent. Tile shape: ws_shape (ws_tile.h), picked per (D, causal).
//  - warpgroup 0, the producer, gives its registers away (setmaxnreg 24, 32
//    with three consumers); one thread issues every TMA load: Q once per
//    tile (kBM rows), K and V through kStages-deep rings with full/empty
//    mbarriers, in the order K0, Q, K1, V0, K2, V1, ... so that S of tile
//    j+1 can start before V j lands.
//  - warpgroups 1..kCons, the consumers (setmaxnreg 240; 160), own 64 query rows
//    each (wgmma M = 64). Per key tile j (reverse order: the tail and causal
//    diagonal tiles first, the only ones masked):
//      issue S(j) = Q K(j)^T  (SS wgmma, kD/16 steps of m64 n{kBN} k16)
//      issue O += P(j+1) V(j+1)   (RS wgmma, P in registers)
//      wait S, release K(j); mask; online softmax -> P(j), alpha (at D64
//      and D128 the stale-max softmax: exps against the running max, no
//      max of the tile, checked afterwards by the row sums; K(j) released
//      after P V then: ws_softmax_stale)
//      wait O, release V(j+1); O *= alpha, skipped by a warp whose rows all
//      kept their max (it moves only when it rose by more than 8 in log2
//      units: most key tiles after the first; bench/NOTES.md "lazy softmax")
//    The first key tile (the causal diagonal or the ragged last one) is
//    masked and exponentiated only where it can matter (ws_tile.h
//    kWsDiagHalfDefault: D64 and D128). A consumer whose 64 rows all see
//    none of the tile's second half runs the softmax on the first half only,
//    P's rest zero (consumer 0 on the diagonal when Sq = Sk). One whose rows
//    all see the first half masks the second only (consumer 1; not at FA3's
//    D64 tile, where ptxas then spilled) and, each row having seen 64 keys or
//    more, takes the second key tile's exps against its running max, not a
//    fresh max (ws_tile.h kWsFreshSkipDefault: the blog shape and D64 S1k
//    causal 2 % faster).
//    So the softmax of tile j runs under the P V product of the previous one
//    (intra-warpgroup overlap), and the consumers take turns issuing their
//    products (named barriers 1..kCons, round robin: ping-pong), so one's
//    softmax runs under the others' GEMMs. At the D64 base tile the turns
//    are taken around each softmax's exps instead (ws_tile.h
//    kWsTurnExpDefault, as cuDNN's kernel: two consumers' exps never share
//    the special-function unit, whose work there equals the tensor cores'),
//    and handed over on the exps' row sums and P's packs, the stale-max
//    check's vote after the arrival (ws_turn_pass_late, kWsLateDefault: D64
//    S1k causal and the blog shape 3 % faster, bench/NOTES.md "ws: the turn
//    on the sums and packs as default").
//  - epilogue, two Q buffers (D64, D128 128 x 128): O / l rounded into the
//    warpgroup's rows of the Q tile (same 128-byte swizzle as TMA's), one
//    TMA store per 64 columns (rows past Sq clipped by TMA); the next tile's
//    Q loads into the other buffer under this tile's loop and epilogue, and
//    the store's read of this buffer is waited for under the next tile's
//    first S product. One Q buffer (D256, D128 128 x 176): each warp hands Q
//    back right after its last S product and O / l goes from registers to
//    global memory (ws_store_out), so the next Q loads under the last P V
//    and the epilogue (bench/NOTES.md "ws: O from registers": +2 % mean over
//    those cells). lse from registers in both.
// Tiles: (m block, head, batch) walked by a static persistent schedule,
// grid = min(#SMs, tiles) (ws_sched, ws_tile_at): non-causal m block first;
// causal with few heads longest first, dealt in a snake; causal with many
// heads (short S) each head's m blocks paired long with short, head by head,
// so that a round's K and V stay in L2, for the rounds that every CTA fills;
// the rest's m blocks then one by one, longest first, so that the schedule
// ends on short tiles (ws_sched; ws_tile.h kWsEndShortDefault). Its
// divisions by run-time values go through host-made multipliers (ws_div):
// done plainly they took the XU pipe behind the other consumer's exps, ~700
// clocks of each tile's start at the D64 base tile (with end-short, D64 S1k
// causal 322 -> 337 TF/s, the blog shape 60.9 -> 58.7 us; bench/NOTES.md "ws:
// the schedule's divisions, end-short as default").
// Shapes (kBM x kBN, stages): base 128 x 128 (D64, D128), 128 x 64 (D256);
// FA3 192 x 128 (D64), 128 x 176 (D128), 128 x 80 (D256); 4 stages at D64, 2.
// Shared memory: kQBufs x Q kBM x kD + 2 x kStages x kBN x kD, 16-bit: base
// 160 / 192 / 192 KB (2, 2, 1 Q buffers), FA3 176 / 208 / 224 KB (2, 1, 1;
// D64 / D128 / D256). Registers: 168
// at launch (128 for the 512-thread D64 FA3 tile). No stack but 8 bytes in
// the D128 FA3 instance (one producer value, reloaded once a tile): on the
// FA3 tiles the stale-max fallback recomputes S in two key halves and Q's
// descriptors are rebuilt at each S, which took their spills away (56 and
// 48 bytes before; bench/NOTES.md "ws stale-max: the FA3 tiles' spills").
// Base shapes
// measured (H200, bf16, bench/NOTES.md "ws: result"): D128 S16k 681 TF/s
// (causal 613), D256 S4k 700, D64 S16k 442; 0.80-1.05x cuDNN, 1.26-2.32x FA2
// over the sweep grid. FA3 shapes: bench/NOTES.md "ws tiles: result". With
// the snake and the second Q buffer (bench/NOTES.md "ws schedule and Q
// buffers: result"): D128 S16k 696 TF/s (causal 671), D256 S4k 714 (causal
// 643), D64 S16k 518 (543); 0.79-1.31x cuDNN, 1.41-2.82x FA2 in that run.
// With causal tiles paired at short S (bench/NOTES.md "ws: causal tiles
// paired", run 2): D128 S16k 667 (causal 645), D256 S4k 675 (616), D64 S16k
// 521 (515); S1k causal D128 460, D256 469 (were 373, 372); 0.91-1.22x
// cuDNN, 1.44-2.74x FA2. With O from registers (bench/NOTES.md "ws: O from
// registers", run 2): D128 S16k 654 (642), D256 S4k 721 (651), D64 S16k 508
// (499); 0.88-1.30x cuDNN (27 of 31 cells at or above), 1.40-2.77x FA2.
// With the stale-max softmax at D64/D128 (bench/NOTES.md "ws softmax, fewer
// instructions per score", run 2): D128 S16k 712 TF/s (causal 666), D64 S16k
// 560 (545), 1.01-1.15x the plain softmax on those cells; 30 of 31 cells at or
// above cuDNN.
// Bench only (kFlags WS_CLUSTER): clusters of two CTAs sharing each K and V
// tile by TMA multicast, 0.63-0.83x this kernel there (same notes).
// Bench only (kFlags WS_SERIAL, D64 base tile): cuDNN's order per key tile,
// S issued and waited, the softmax, P V issued: half the code, but 3-5 %
// slower on D64 S1k causal and the blog shape (H200, bench/NOTES.md "ws: the
// D64 base tile in cuDNN's order").
// Bench only (kFlags WS_ROLLED, D64 and D128 base tiles): this order with
// one loop body for every key tile (ws_tile.h kWsRolledDefault): the exps in
// place in S, P packed after P V's wait into one P buffer, so one copy of the
// step and of the stale-max fallback (2888 SASS instructions against 6104 at
// D64), but ptxas packs P before that wait into a second register set and
// copies it back each key tile: 13 % more instructions, 3-5 % slower, and the
// no-instruction and branch stalls barely moved (H200, bench/NOTES.md "ws: a
// smaller D64 base tile"). With WS_PV_FIRST, P V is waited before the exps,
// which pack P into the one buffer themselves (no copies).
// Bench only (kFlags WS_SPLIT, D64 base tile): the row max and sum as 4
// partial chains per row half (ws_tile.h kWsSplitDefault): 1.00x, the exps
// are paced by the exp2 unit, not by the sum's chain (bench/NOTES.md "ws:
// the softmax's row max and sum as partial chains").
// Bench only (kFlags WS_STAMPS): clock stamps per CTA and tile, read by
// bench/fused/ws_phases.py; at S1k the loop is 78-89 % of busy time, the
// epilogue 4-7 %, the static rounds' tail 3.6-5.5 % of the span (bench/
// NOTES.md "ws: short S, where the time goes"); and per key tile (step
// records): S and the turn are there when waited for (14 and 10 clocks at
// the D64 base tile), the step is each consumer's exps plus its own ~1100
// clocks of issue, checks and rescale, and Q lands thousands of clocks before
// it is waited for (bench/NOTES.md "ws: per-step phase stamps ...").
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_FLASH_FWD_WS_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_FLASH_FWD_WS_KERNEL_CUH

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

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
  // Barriers: Q full/empty (two slots), per stage K/V full/empty; then two
  // tile slots (WS_AB_DYN: the tile each Q buffer's load belongs to).
  static constexpr int kBarBytes = 48 + 32 * kStages;
  static constexpr int kQBufs = 1024 + 2 * kQ + 2 * kStages * kKV + kBarBytes <= 227 * 1024 ? 2 : 1;
  static constexpr uint32_t kBars = kQBufs * kQ + 2 * kStages * kKV; // barrier block offset
  static constexpr int kSmem = 1024 + kBars + kBarBytes;
};

// WS_STAMPS' buffer (p.ws_stamps): per CTA (up to kWsStampCtas) and
// consumer (3 blocks a CTA) kWsStampBlock words: globaltimer and clock64
// at start, at end, tiles run; then per tile (up to kWsStampTiles) 8 words:
// key tiles, clock64 at loop top, Q landed, K(0) landed, first S issued
// (and the turn passed), last P V done, epilogue done; m0.
constexpr int kWsStampCtas = 160, kWsStampTiles = 64, kWsStampBlock = 8 + 8 * kWsStampTiles;

// WS_STAMPS' step records, after those words: 32-bit %clock stamps per CTA,
// block (consumers 0..2 by their thread 0; 3 the producer thread) and tile
// (up to kWsStampTiles), kWsStepRecs records of 8 words each: 0..15 the key
// tiles in loop order (0 the peeled first; later ones not stamped), 16 the
// last P V (finish), 17 the tile's head; the producer uses record 0.
// bench/fused/ws_phases.py STEP_WORDS names every word.
constexpr int kWsStepKeyRecs = 16, kWsStepRecs = kWsStepKeyRecs + 2;
constexpr size_t kWsStepBytes = (size_t)kWsStampCtas * 4 * kWsStampTiles * kWsStepRecs * 8 * 4;
FUSED_DEV uint32_t *ws_step_rec(const attn_fused_params &p, int blk, uint32_t tc) {
  if (blockIdx.x >= (unsigned)kWsStampCtas || tc >= (uint32_t)kWsStampTiles) return nullptr;
  uint32_t *b = (uint32_t *)(p.ws_stamps + (size_t)kWsStampCtas * 3 * kWsStampBlock);
  return b + ((blockIdx.x * 4u + (uint32_t)blk) * (uint32_t)kWsStampTiles + tc) * (uint32_t)(kWsStepRecs * 8);
}

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
// snake) so that no CTA takes the longest of every round; the CTAs on one
// head walk its keys together, so its K and V are read from HBM about once
// per kBM x (CTAs per head) query rows.
// Causal, short sequences (fewer than 384 query rows of a round per head:
// kBM G < 384 (batch x heads)) and more tiles than CTAs: there the order
// above puts each CTA on a head of its own, each m block re-reads its
// head's K and V from HBM, and the short causal cells were bound by that
// traffic (H200, bench/NOTES.md "ws: causal tiles paired"). Instead each
// head's m blocks are paired, i with n_mb - 1 - i (the same work in every
// pair), pairs dealt head by head, CTA k taking pair (r / 2) G + k: its long
// tile in even rounds, its short one in odd rounds. A round's CTAs then read
// the K and V of about 2 G / n_mb heads, which stay in L2. With n_mb odd the
// middle m blocks pair with each other, two heads per pair, after the rest.
// Bench only: WS_AB_LPT (and WS_AB_STRIDE, the plain stride) keep the first
// order everywhere, WS_AB_PAIR pairs wherever there are more tiles than CTAs.
// With clusters (cl = 2, non-causal only) the two CTAs of a cluster take
// m blocks 2c and 2c + 1 of one head in every round, so that they walk the
// same K and V tiles (an m block past Sq computes and stores nothing).
// Bench only (WS_AB_DYN, no clusters): a dynamic schedule. Each CTA's
// producer takes its first tile by CTA index, the next ones from a global
// counter (p.ws_ctr) as it starts loading a tile, and hands each tile's
// index to the consumers in a shared-memory slot beside its Q buffer
// (written before the Q load's arrival on q_full; -1: no more tiles). The
// order (ws_tile_of): non-causal m block fastest; causal head by head, each
// head's m blocks longest first, the last heads' (about two rounds of
// tiles) all together longest first, so the schedule ends on the shortest
// tiles. The last CTA to finish resets the counter (launches on one stream
// only: bench). Measured (bench/NOTES.md "ws: short S, where the time
// goes"): the tail 3.6-5.5 % of the span down to ~1.5 %, causal cells 1-3 %
// faster, the blog shape 2 % slower (the index's fetch lands on the tile
// start); racecheck reports the slot's write against the consumers' reads,
// which only the Q buffer's mbarriers order (it did not count them).
// The paired order's end (ws_tile.h kWsEndShortDefault; WS_AB_END_SHORT
// flips it): pairs [0, n_pp) run in 2 n_pp / G rounds as above (n_pp = F G,
// F the rounds of pairs that every CTA fills, one less when the last round
// would be under three quarters full); the n_single m blocks of the rest
// follow one per CTA and round, longest first, dealt in a snake
// (ws_single_at), so the schedule ends on short tiles. Even n_mb only.
// Counted in key-tile steps (bench/NOTES.md "ws: per-step phase stamps, a
// schedule that ends on short tiles"): the longest CTA at D64 S1k causal
// 144 -> 141 steps (32 -> 31 tiles), the blog shape 36 -> 35.
struct ws_sched {
  int n_mb, bh_n, n_tiles, n_pairs; // n_pairs: 0 unless paired
  int n_pp, n_single;               // the end-short order's split; n_single 0: off
  int r_pp, bh0, i0;                // its rounds of pairs; the first single's head and pair
  int cl;                           // CTAs per cluster: 1 or 2
  int dyn;                          // 1: tiles from p.ws_ctr (WS_AB_DYN)
};

// kDyn: the instance has the dynamic schedule compiled in (kFlags WS_DYN or
// WS_STAMPS); elsewhere dyn is a constant 0 and its branches fold away.
template <bool kDyn>
FUSED_DEV ws_sched ws_sched_of(const attn_fused_params &p, int kBM, int cl) {
  ws_sched s;
  const int g = (int)gridDim.x;
  s.n_mb = (p.sq + kBM - 1) / kBM, s.bh_n = p.b * p.hq, s.n_tiles = s.n_mb * s.bh_n;
  s.cl = cl;
  s.dyn = kDyn && (p.ws_ab & WS_AB_DYN) && cl == 1 && p.ws_ctr;
  const bool lpt = (p.ws_ab & (WS_AB_LPT | WS_AB_STRIDE)) != 0;
  const bool pair = (p.ws_ab & WS_AB_PAIR) || (!lpt && kBM * g < 384 * s.bh_n);
  s.n_pairs = 0, s.n_pp = 0, s.n_single = 0, s.r_pp = 0, s.bh0 = 0, s.i0 = 0;
  if (p.causal && pair && s.n_tiles > g)
    s.n_pairs = s.bh_n * (s.n_mb / 2) + (s.n_mb & 1 ? (s.bh_n + 1) / 2 : 0);
  const bool end_short = ((p.ws_ab & WS_AB_END_SHORT) != 0) != kWsEndShortDefault;
  if (s.n_pairs && end_short && !(s.n_mb & 1) && s.cl == 1 && !s.dyn) {
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
  if (s.cl > 1) {
    const int gc = g / s.cl, n_ct = (s.n_mb + s.cl - 1) / s.cl * s.bh_n;
    return (n_ct + gc - 1) / gc;
  }
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

// n / d for the tile schedule (0 <= n < 2^31): by the multiplier and shift
// the host set in p.ws_div[k] (ws_div_set: one IMAD.HI, an add, a shift),
// or, kPlain (kFlags WS_DIVQ, bench), by the plain division. A division by a
// run-time value converts through the XU pipe (I2F, MUFU.RCP, F2I), which at
// the D64 base tile queues behind the other consumer's exps: the tile
// start's bookkeeping cost ~700 clocks there (bench/NOTES.md "ws: per-step
// phase stamps").
template <bool kPlain>
FUSED_DEV int ws_div(const attn_fused_params &p, int k, int n, int d) {
  if constexpr (kPlain) return n / d;
  else return (int)((__umulhi(p.ws_div[k][0], (uint32_t)n) + (uint32_t)n) >> p.ws_div[k][1]);
}

// The Q buffer of this CTA's tile tc and its phase parity, nq (1 or 2)
// buffers; kPlain: by the division, as before.
template <bool kPlain>
FUSED_DEV int ws_qbuf(uint32_t tc, int nq) {
  if constexpr (kPlain) return (int)(tc % (uint32_t)nq);
  else return nq > 1 ? (int)(tc & 1u) : 0;
}
template <bool kPlain>
FUSED_DEV uint32_t ws_qpar(uint32_t tc, int nq) {
  if constexpr (kPlain) return (tc / (uint32_t)nq) & 1u;
  else return (nq > 1 ? tc >> 1 : tc) & 1u;
}

// The tile of m block mb of head bh (b * hq + h).
template <int kBM, int kBN, bool kPlain = false>
FUSED_DEV void ws_tile_fill(const attn_fused_params &p, int bh, int mb, ws_tile &w) {
  w.b = ws_div<kPlain>(p, WS_DIV_HQ, bh, p.hq), w.h = bh - w.b * p.hq, w.m0 = mb * kBM;
  int n_end = p.sk;
  if (p.causal) n_end = min(n_end, w.m0 + min(kBM, p.sq - w.m0) + p.causal_off);
  w.n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
}

// The tile this CTA runs in round r; false: none this round.
template <int kBM, int kBN, bool kPlain = false>
FUSED_DEV bool ws_tile_at(const attn_fused_params &p, const ws_sched &s, int r, ws_tile &w) {
  const int g = (int)gridDim.x, k = (int)blockIdx.x;
  int mb, bh;
  if (s.cl > 1) { // cluster c of round r: cluster tile r (g / cl) + c, m block fastest
    const int n_cmb = (s.n_mb + s.cl - 1) / s.cl, ct = r * (g / s.cl) + k / s.cl;
    if (ct >= n_cmb * s.bh_n) return false;
    mb = s.cl * (ct % n_cmb) + k % s.cl, bh = ct / n_cmb;
  } else if (s.n_single && r >= s.r_pp) { // the end-short order's singles
    const int rr = r - s.r_pp, u = rr * g + ((rr & 1) ? g - 1 - k : k);
    if (u >= s.n_single) return false;
    ws_single_at(s, u, bh, mb);
  } else if (s.n_pairs) {
    const int pr = (r >> 1) * g + k, h2 = s.n_mb / 2, full = s.bh_n * h2;
    if (pr >= s.n_pairs) return false;
    if (pr < full) { // m blocks n_mb - 1 - i, then i, of one head
      bh = ws_div<kPlain>(p, WS_DIV_H2, pr, h2);
      const int i = pr - bh * h2;
      mb = (r & 1) ? i : s.n_mb - 1 - i;
    } else { // the middle m block of two heads
      bh = 2 * (pr - full) + (r & 1), mb = h2;
      if (bh >= s.bh_n) return false;
    }
  } else {
    const bool snake = (r & 1) && p.causal && !(p.ws_ab & WS_AB_STRIDE);
    const int t = r * g + (snake ? g - 1 - k : k);
    if (t >= s.n_tiles) return false;
    if (p.causal) { // longest first: the last m blocks of every head, then the next
      const int q = ws_div<kPlain>(p, WS_DIV_BH, t, s.bh_n);
      mb = s.n_mb - 1 - q, bh = t - q * s.bh_n;
    } else {
      bh = ws_div<kPlain>(p, WS_DIV_MB, t, s.n_mb), mb = t - bh * s.n_mb;
    }
  }
  ws_tile_fill<kBM, kBN, kPlain>(p, bh, mb, w);
  return true;
}

// Tile t of the dynamic order (WS_AB_DYN; ws_sched above).
template <int kBM, int kBN>
FUSED_DEV void ws_tile_of(const attn_fused_params &p, const ws_sched &s, int t, ws_tile &w) {
  int mb, bh;
  if (!p.causal) {
    mb = t % s.n_mb, bh = t / s.n_mb;
  } else {
    const int g = (int)gridDim.x;
    const int tail = min(s.bh_n, (2 * g + s.n_mb - 1) / s.n_mb), head = (s.bh_n - tail) * s.n_mb;
    if (t < head) {
      bh = t / s.n_mb, mb = s.n_mb - 1 - t % s.n_mb;
    } else {
      const int u = t - head;
      bh = s.bh_n - tail + u % tail, mb = s.n_mb - 1 - u / tail;
    }
  }
  ws_tile_fill<kBM, kBN, true>(p, bh, mb, w);
}

// P's register fragments from floats in S's layout (wg_exp_row's packing).
template <typename T, int kSR>
FUSED_DEV void ws_pack_p(const float (&s)[kSR], uint32_t (&pa)[kSR / 8][4]) {
#pragma unroll
  for (int j = 0; j < kSR / 4; ++j)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh)
      pa[j / 2][2 * (j % 2) + hh] = fused_pack2<T>(s[4 * j + 2 * hh], s[4 * j + 2 * hh + 1]);
}

// Bench only (WS_NO_SOFTMAX): S rounded straight into P, no max, no exp, no
// mask: what is left is the tensor-core and copy time of the tile loop.
template <typename T, int kSR>
FUSED_DEV void ws_no_softmax(const float (&s)[kSR], uint32_t (&pa)[kSR / 8][4], float (&alpha)[2]) {
  ws_pack_p<T>(s, pa);
  alpha[0] = alpha[1] = 1.f;
}

// wg_softmax with short dependency chains (WS_TREE; bench/NOTES.md "ws:
// softmax trees"): wg_softmax's row max and row sum are each one chain of
// kSR / 4 dependent FMNMX / FADD per row half, and each exp2 waits for the
// FFMA just before it (ncu: the consumers stall on fixed latency). Here each
// row half keeps kA = 4 partial maxima and sums (8-key group j into partial
// j % kA; 8 would hold 8 more registers for one step less), folded as a tree,
// and every FFMA of the tile is issued before the first exp2, in place in s
// (no extra registers). The max is exact in any order; the sum is rounded in
// another order within fp32 (the fp64 checks' tolerance is unchanged).
template <typename T, int kSR>
FUSED_DEV void ws_softmax_tree(float (&s)[kSR], float (&m)[2], float (&l)[2], uint32_t (&pa)[kSR / 8][4],
                               float (&alpha)[2], float c, float tau) {
  constexpr int kG = kSR / 4, kA = 4; // 8-key groups per row half; partials
  static_assert(kG >= kA, "every partial takes at least one group");
  const auto add2 = [](float x, float y) { return x + y; };
  float base[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) base[hh] = wg_row_base(wg_row_max<kA>(s, hh, m[hh]), m[hh], alpha[hh], c, tau);
#pragma unroll
  for (int i = 0; i < kSR; ++i) s[i] = fmaf(s[i], c, -base[(i >> 1) & 1]);
#pragma unroll
  for (int i = 0; i < kSR; ++i) s[i] = fused_exp2(s[i]);
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float a[kA];
#pragma unroll
    for (int j = 0; j < kG; ++j) {
      const float v = s[4 * j + 2 * hh] + s[4 * j + 2 * hh + 1];
      a[j % kA] = j < kA ? v : a[j % kA] + v;
      pa[j / 2][2 * (j % 2) + hh] = fused_pack2<T>(s[4 * j + 2 * hh], s[4 * j + 2 * hh + 1]);
    }
    l[hh] = l[hh] * alpha[hh] + wg_fold(a, add2);
  }
}

// The per-tile softmax step, or its bench-only stand-in. WS_TREE runs the
// other of the two softmax forms than kWsTreeDefault (ws_tile.h) names. kA:
// wg_softmax's partial maxima and sums (ws_tile.h kWsSplitDefault).
template <typename T, int kFlags, int kA = 1, int kSR>
FUSED_DEV void ws_soft(float (&s)[kSR], float (&m)[2], float (&l)[2], uint32_t (&pa)[kSR / 8][4],
                       float (&alpha)[2], float c, float tau) {
  if constexpr ((kFlags & WS_NO_SOFTMAX) != 0)
    ws_no_softmax<T>(s, pa, alpha), l[0] = l[1] = 1.f;
  else if constexpr (((kFlags & WS_TREE) != 0) != kWsTreeDefault)
    ws_softmax_tree<T>(s, m, l, pa, alpha, c, tau);
  else
    wg_softmax<T, kA>(s, m, l, pa, alpha, c, tau);
}

// The stale-max softmax (ws_tile.h kWsStaleDefault; bench/NOTES.md "ws
// softmax, fewer instructions per score"): past the first key tile, exps are taken against the row's running max m as it
// stands, with no max of the tile and no wait for one (per score: FFMA,
// exp2, FADD, half an F2FP; wg_softmax adds an FMNMX and puts the max chain
// and its shuffles before the first exp2). The sums check it afterwards: a
// lane's sum over its P of a row half bounds each of them, so sums <=
// kWsStaleCap (2^8, the lazy rule's bound on P) in every lane of the warp
// keep P (in pa) and m, and l moves on. Else (a row's max rose by more than
// log2(kWsStaleCap / (kBN / 4)) >= 2.5 log2 units; inf or NaN sums) it
// returns false with l as it was; the caller computes S again (ws_warp_s),
// moves m to the max (ws_raise_max) and calls it with force (ws_stale_fallback) (no check:
// every P <= 1 then; a constant at each call: a run-time force made ptxas
// serialize the wgmma). s is only read, so that it is dead after the call
// whichever way it goes. A row with no key yet (m = -inf) takes base 0, as
// wg_row_base. kFma, kA: wg_exp_row's (WS_EXP_FMA8 / 4: 8, 4; else 0;
// kA partial sums per row half, ws_tile.h kWsSplitDefault).
constexpr float kWsStaleCap = 256.f;
// ws_softmax_stale's two halves: P and this lane's row sums (ws_stale_exps),
// then the check and l (ws_stale_keep), so that the turn can pass between
// them (ws_turn_pass_late).
template <typename T, int kFma = 0, int kA = 1, int kSR>
FUSED_DEV void ws_stale_exps(const float (&s)[kSR], const float (&m)[2], uint32_t (&pa)[kSR / 8][4],
                             float c, float (&sum)[2]) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh)
    sum[hh] = wg_exp_row<T, kFma, kA>(s, pa, hh, c, m[hh] == -INFINITY ? 0.f : m[hh] * c);
}
FUSED_DEV bool ws_stale_keep(const float (&sum)[2], float (&l)[2], bool force) {
  if (!force && !__all_sync(0xffffffffu, sum[0] <= kWsStaleCap && sum[1] <= kWsStaleCap)) return false;
  l[0] += sum[0], l[1] += sum[1];
  return true;
}
template <typename T, int kFma = 0, int kA = 1, int kSR>
FUSED_DEV bool ws_softmax_stale(const float (&s)[kSR], const float (&m)[2], float (&l)[2],
                                uint32_t (&pa)[kSR / 8][4], float c, bool force) {
  float sum[2];
  ws_stale_exps<T, kFma, kA>(s, m, pa, c, sum);
  return ws_stale_keep(sum, l, force);
}

// ws_softmax_stale for the rolled loop (kWsRolledDefault): P = 2^(s c - m c)
// in place in s, packed later (ws_pack_p) once P V(i-1) no longer reads the
// one P buffer; the same check and l.
template <int kFma = 0, int kSR>
FUSED_DEV bool ws_softmax_stale_f(float (&s)[kSR], const float (&m)[2], float (&l)[2], float c) {
  float sum[2] = {0.f, 0.f};
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float base = m[hh] == -INFINITY ? 0.f : m[hh] * c;
#pragma unroll
    for (int j = 0; j < kSR / 4; ++j) {
      float &p0 = s[4 * j + 2 * hh], &p1 = s[4 * j + 2 * hh + 1];
      p0 = wg_exp2_mix<kFma>(fmaf(p0, c, -base), 2 * j);
      p1 = wg_exp2_mix<kFma>(fmaf(p1, c, -base), 2 * j + 1);
      sum[hh] += p0 + p1;
    }
  }
  if (!__all_sync(0xffffffffu, sum[0] <= kWsStaleCap && sum[1] <= kWsStaleCap)) return false;
  l[0] += sum[0], l[1] += sum[1];
  return true;
}

// The plain online softmax's max step for ws_softmax_stale (wg_row_base
// with tau = 0): m to the max of m and the tile's row (the quad's), l and
// alpha scaled by the move. kA: wg_row_max's partial maxima.
template <int kA = 1, int kSR>
FUSED_DEV void ws_raise_max(const float (&s)[kSR], float (&m)[2], float (&l)[2], float (&alpha)[2],
                            float c) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float a;
    wg_row_base(wg_row_max<kA>(s, hh, m[hh]), m[hh], a, c, 0.f);
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

// O *= alpha after a tile's softmax. When lazy, a warp skips it when none
// of its 16 rows moved its max (every alpha exactly 1): with tau = 8 that is
// most key tiles after the first, and the multiplies are kD / 2 per thread
// against kBN / 2 softmax elements (4 per element at D256 128 x 64).
template <int kOR>
FUSED_DEV void ws_rescale(float (&o)[kOR], const float (&alpha)[2], bool lazy) {
  if (!lazy || __any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) wg_rescale(o, alpha);
}

// Shared-memory barrier addresses: Q full/empty per Q buffer (two slots),
// then per stage K full, K empty, V full, V empty; then the tile slots.
struct ws_bars {
  uint32_t base, slots;
  __device__ __forceinline__ uint32_t slot(int b) const { return slots + 4 * b; }
  __device__ __forceinline__ uint32_t q_full(int b) const { return base + 16 * b; }
  __device__ __forceinline__ uint32_t q_empty(int b) const { return base + 16 * b + 8; }
  __device__ __forceinline__ uint32_t k_full(int s) const { return base + 32 + 32 * s; }
  __device__ __forceinline__ uint32_t k_empty(int s) const { return base + 40 + 32 * s; }
  __device__ __forceinline__ uint32_t v_full(int s) const { return base + 48 + 32 * s; }
  __device__ __forceinline__ uint32_t v_empty(int s) const { return base + 56 + 32 * s; }
};

// Q buffers in use: kQBufs, or one under WS_AB_ONE_Q (bench only).
template <int kQBufs>
FUSED_DEV int ws_q_bufs(const attn_fused_params &p) {
  return (p.ws_ab & WS_AB_ONE_Q) ? 1 : kQBufs;
}

// WS_AB_DYN, the producer after its last tile: the consumers' next Q slot
// says -1 (no tile; a plain arrival completes the Q barrier's phase), and
// the last CTA to get here zeroes the counter for the next launch (every
// CTA's last fetch is ordered before its count by the fence).
FUSED_DEV void ws_dyn_end(const attn_fused_params &p, ws_bars br, int nq, uint32_t tc) {
  const int qb = ws_qbuf<true>(tc, nq);
  ws_bar_wait(br.q_empty(qb), ws_qpar<true>(tc, nq) ^ 1);
  ws_st_shared(br.slot(qb), -1);
  ws_bar_arrive(br.q_full(qb));
  __threadfence();
  if (atomicAdd(p.ws_ctr + 1, 1u) == gridDim.x - 1) atomicExch(p.ws_ctr, 0u), atomicExch(p.ws_ctr + 1, 0u);
}

// The producer thread: every load of every tile of this CTA. kStamp
// (WS_STAMPS): record 0 of block 3 per tile, words 0 tile start, 1 Q
// buffer's empty wait done, 2 Q issued, 3 K0 slot waited, 4 K0 issued, 5
// last V slot waited, 6 last V issued, 7 key tiles.
template <int kD, int kTile, bool kStamp = false, bool kPlain = false>
FUSED_DEV void ws_produce(const attn_fused_params &p, const attn_ws_maps &mp, ws_bars br,
                          uint32_t aQ, uint32_t aK, uint32_t aV, const ws_sched &sc) {
  using C = ws_cfg<kD, kTile>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages;
  const int nq = ws_q_bufs<C::kQBufs>(p), rounds = ws_rounds(sc);
  // In a cluster of two, each CTA loads kBN / 2 rows (its rank's half) of
  // every K and V tile into both CTAs; each CTA's full barrier expects the
  // whole tile, its empty barrier the consumers of both CTAs.
  const int half = sc.cl > 1 ? kBN / 2 : 0, rank = sc.cl > 1 ? (int)ws_cluster_rank() : 0;
  uint32_t it = 0, tc = 0; // key tiles and CTA tiles so far
  int t_cur = (int)blockIdx.x; // WS_AB_DYN: this tile's index
  for (int r = 0; sc.dyn || r < rounds; ++r) {
    ws_tile w;
    if (sc.dyn) {
      if (t_cur >= sc.n_tiles) {
        ws_dyn_end(p, br, nq, tc);
        break;
      }
      ws_tile_of<kBM, kBN>(p, sc, t_cur, w);
    } else if (!ws_tile_at<kBM, kBN, kPlain>(p, sc, r, w)) {
      continue;
    }
    // The record's address again at each stamp: the producer has 24 registers.
    auto pst = [&](int k) { // k 7: the key tiles, else the clock
      if constexpr (kStamp)
        if (uint32_t *q = ws_step_rec(p, 3, tc)) q[k] = k == 7 ? (uint32_t)w.n_blocks : ws_clock32();
    };
    pst(0);
    const int qb = ws_qbuf<kPlain>(tc, nq);
    const int hk = ws_div<kPlain>(p, WS_DIV_GRP, w.h, p.hq / p.hkv), n = w.n_blocks;
    auto load_kv = [&](const CUtensorMap *map, uint32_t dst, uint32_t bar, int key) {
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk) {
        const uint32_t d = dst + (uint32_t)(blk * kBN * 128);
        if (half)
          ws_tma_load_mc(d + (uint32_t)(rank * half * 128), map, bar, blk * 64, key + rank * half, hk,
                         w.b, (uint16_t)3);
        else
          ws_tma_load(d, map, bar, blk * 64, key, hk, w.b);
      }
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
      ws_bar_wait(br.q_empty(qb), ws_qpar<kPlain>(tc, nq) ^ 1);
      pst(1);
      if (sc.dyn) ws_st_shared(br.slot(qb), t_cur);
      ws_bar_expect(br.q_full(qb), C::kQ);
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk)
        ws_tma_load(aQ + qb * C::kQ + blk * kBM * 128, &mp.q, br.q_full(qb), blk * 64, w.m0, w.h, w.b);
      pst(2);
    };
    pst(7);
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
    // The next tile: fetched after this one's loads are issued (its latency
    // runs under the ring's tiles; held across the loads, the index cost
    // the producer's 24 registers a spill at D256).
    if (sc.dyn) t_cur = (int)gridDim.x + (int)atomicAdd(p.ws_ctr, 1u);
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
// around each softmax's exps (ws_tile.h kWsTurnExpDefault: the D64 base
// tile), as cuDNN's D64 kernel does (bench/NOTES.md "ws against cuDNN's
// kernel under ncu"): at D64 a consumer's exps take the special-function
// unit as long as its two products take the tensor cores, and each SM
// sub-partition holds one warp of every consumer, so turns over the exps
// keep two softmaxes off one unit. Either way each consumer takes one turn
// per product issue or softmax, the same count per tile, so the round robin
// stays in step.
template <int kFlags, bool kHere = true>
FUSED_DEV void ws_turn_wait(int cw) {
  if ((kFlags & WS_PINGPONG) && kHere) ws_named_sync(1 + cw, 256);
}
template <int kFlags, int kCons, bool kHere = true>
FUSED_DEV void ws_turn_pass(int cw) {
  if ((kFlags & WS_PINGPONG) && kHere) ws_named_arrive(1 + (cw + 1) % kCons, 256);
}
// The hand-over after the exps. ptxas moves register-only work across
// bar.arrive (it put every exp after it), so the arrival's thread count
// goes through the row sums l, which need every exp: l is never negative (a
// sum of exps times alphas), so 0 is added, and NaN adds 0 too.
template <int kFlags, int kCons, bool kHere>
FUSED_DEV void ws_turn_pass_exp(int cw, const float (&l)[2]) {
  if ((kFlags & WS_PINGPONG) && kHere) {
    const uint32_t z = __any_sync(0xffffffffu, l[0] < 0.f || l[1] < 0.f) ? 32u : 0u;
    ws_named_arrive(1 + (cw + 1) % kCons, 256 + z);
  }
}

// The hand-over after the stale-max exps (ws_tile.h kWsLateDefault: the D64
// base tile; measured 2-3 % faster there): the arrival's count goes through the row sums
// and P's packs instead of l, with no vote: min(sum, 0) is +0 for sums of
// exps (never negative; NaN gives 0 too), so its bits and-ed with the packs'
// or are 0 in every lane, and the exps and the packs stay before the arrival
// while the stale-max check's vote and l come after it.
template <int kFlags, int kCons, bool kHere, int kG>
FUSED_DEV void ws_turn_pass_late(int cw, const float (&sum)[2], const uint32_t (&pa)[kG][4]) {
  if ((kFlags & WS_PINGPONG) && kHere) {
    uint32_t o = 0;
#pragma unroll
    for (int g = 0; g < kG; ++g) o |= pa[g][0] | pa[g][1] | pa[g][2] | pa[g][3];
    const uint32_t z = __float_as_uint(fminf(sum[0] + sum[1], 0.f)) & o;
    ws_named_arrive(1 + (cw + 1) % kCons, 256 + z);
  }
}

// wg_desc(addr + off) from d = wg_desc(addr): off / 16 added to the low word
// (the start address field, bits 0-13). Exact with no carry while addr + off
// stays in shared memory's window (under 256 KB: 14 bits of 16-byte units),
// so a k step's descriptor costs one add instead of wg_desc's masks and
// shifts (kWsDescStepDefault, ws_tile.h).
FUSED_DEV uint64_t ws_desc_step(uint64_t d, uint32_t off) {
  return ((d >> 32) << 32) | (uint32_t)((uint32_t)d + (off >> 4));
}

// Releases a slot: one arrival per warp once its wgmma are done.
FUSED_DEV void ws_release(uint32_t bar, int lane) {
  __syncwarp();
  if (lane == 0) ws_bar_arrive(bar);
}

// Releases a K or V ring slot, in the other CTA of the cluster too (its
// producer writes half of the next tile into this CTA's slot).
template <int kFlags>
FUSED_DEV void ws_release_kv(uint32_t bar, int lane) {
  __syncwarp();
  if (lane == 0) {
    ws_bar_arrive(bar);
    if (kFlags & WS_CLUSTER) ws_bar_arrive_peer(bar, ws_cluster_rank() ^ 1u);
  }
}

template <typename T, int kD, int kFlags, int kTile>
__global__ void __launch_bounds__(ws_cfg<kD, kTile>::kThreads, 1)
    flash_fwd_ws_kernel(const __grid_constant__ attn_fused_params p,
                        const __grid_constant__ attn_ws_maps mp) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = ws_cfg<kD, kTile>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages, kCons = C::kCons;
  constexpr int kSR = kBN / 2, kOR = kD / 2;
  // The stale-max softmax (ws_tile.h kWsStaleDefault; WS_STALE flips it):
  // in the overlap path only, not in the tree and floor instances.
  constexpr bool kStale = (kFlags & WS_OVERLAP) && !(kFlags & (WS_TREE | WS_NO_SOFTMAX)) &&
                          (((kFlags & WS_STALE) != 0) != kWsStaleDefault<kD>);
  // Its exp2 share on the FMA pipe (WS_EXP_FMA8 / 4; the first key tile and
  // the fallback keep the special-function unit).
  constexpr int kFma = (kFlags & WS_EXP_FMA8) ? 8 : (kFlags & WS_EXP_FMA4) ? 4 : 0;
  // wgmma descriptors stepped by ws_desc_step (ws_tile.h kWsDescStepDefault;
  // WS_DESC flips it).
  constexpr bool kDescStep = ((kFlags & WS_DESC) != 0) != kWsDescStepDefault;
  // The ping-pong's turns around the exps, not the product issue (ws_tile.h
  // kWsTurnExpDefault; WS_TURN_EXP flips it): in the overlap path only, not
  // in the floor instances (their turns stay where they were measured).
  constexpr bool kTurnExp = (kFlags & WS_OVERLAP) && !(kFlags & WS_NO_SOFTMAX) &&
                            (((kFlags & WS_TURN_EXP) != 0) != kWsTurnExpDefault<kD, kTile>);
  static_assert(kFma == 0 || kStale, "WS_EXP_FMA8 / 4 act on the stale-max softmax");
  // cuDNN's order per key tile (WS_SERIAL, bench: the loop below); built on
  // the stale-max softmax with the turns around its exps.
  constexpr bool kSerial = (kFlags & WS_SERIAL) != 0, kPvWait = (kFlags & WS_SERIAL_WAIT) != 0;
  static_assert(!kSerial || (kStale && kTurnExp && kFma == 0 && !(kFlags & WS_STAMPS)),
                "WS_SERIAL is the stale-max softmax with the turns around the exps");
  // One loop body for every key tile (ws_tile.h kWsRolledDefault; WS_ROLLED
  // flips it): the stale-max softmax's overlap path only.
  constexpr bool kRolled = kStale && !kSerial && (((kFlags & WS_ROLLED) != 0) != kWsRolledDefault<kD, kTile>);
  // In that loop, P V(i-1) waited before the exps (WS_PV_FIRST, bench), which
  // then pack P straight into the one P buffer; else after them.
  constexpr bool kPvFirst = (kFlags & WS_PV_FIRST) != 0;
  // Partial row maxima and sums in the softmax of the unrolled loop (the
  // first key tile, the fresh max, the stale-max exps; ws_tile.h
  // kWsSplitDefault; WS_SPLIT flips it): kWsSplit chains, or one.
  constexpr int kSplit = (((kFlags & WS_SPLIT) != 0) != kWsSplitDefault<kD, kTile>) ? kWsSplit : 1;
  // The tile schedule's divisions as plain / and % (WS_DIVQ, bench: the
  // kernel before ws_div), else by the host's multipliers.
  constexpr bool kPlain = (kFlags & WS_DIVQ) != 0;
  // The stale-max steps pass the turn on their sums and packs, the check's
  // vote and l after it (ws_turn_pass_late; ws_tile.h kWsLateDefault; WS_LATE
  // flips it), or through l after the check (ws_turn_pass_exp).
  constexpr bool kLate = ((kFlags & WS_LATE) != 0) != kWsLateDefault<kD, kTile>;
  // WS_RSKIP (bench): a stale-max step that neither took its max fresh nor
  // fell back leaves alpha exactly 1, so it skips O's rescale and its vote.
  constexpr bool kRsSkip = (kFlags & WS_RSKIP) != 0;
  // The first key tile's softmax on its first kKeep keys only where the rest
  // is masked for all of this consumer's rows (ws_tile.h kWsDiagHalfDefault;
  // WS_DIAG_FULL flips it): the unrolled loop's first tile.
  constexpr bool kDiagHalf = !(kFlags & WS_NO_SOFTMAX) &&
                             (((kFlags & WS_DIAG_FULL) != 0) != kWsDiagHalfDefault<kD, kTile>);
  constexpr int kKeep = ws_diag_keep<kBN>;
  // And where keys 0..kKeep-1 are visible in all its rows, only the rest
  // masked: not at FA3's D64 tile (128 registers: that third mask made
  // ptxas spill 52 bytes).
  constexpr bool kLowMask = kDiagHalf && !(kD == 64 && kTile == WS_TILE_FA3);
  // The second key tile's forced fresh max (causal) skipped by a consumer
  // whose rows all saw kKeep keys or more of the first (ws_tile.h
  // kWsFreshSkipDefault; WS_FRESH_SKIP flips it; needs kDiagHalf's votes).
  constexpr bool kFreshSkip = kDiagHalf && (((kFlags & WS_FRESH_SKIP) != 0) != kWsFreshSkipDefault<kD, kTile>);
  static_assert(C::kQBufs <= 2, "ws_qbuf takes one or two Q buffers");
  extern __shared__ __align__(1024) char smem[];
  char *base = smem + ((1024u - (fused_smem_addr(smem) & 1023u)) & 1023u);
  const uint32_t aQ = fused_smem_addr(base), aK = aQ + C::kQBufs * C::kQ, aV = aK + kS * C::kKV;
  const ws_bars br{aQ + C::kBars, aQ + C::kBars + 32 + 32 * kS};
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  // The dynamic schedule's code (WS_AB_DYN) in the WS_DYN and stamps
  // instances, and in FA3's D64 tile, where without it ptxas spilled 40 bytes
  // (nvcc 13.0; bench/NOTES.md "ws: a smaller D64 base tile").
  constexpr bool kDyn = (kFlags & (WS_DYN | WS_STAMPS)) || (kD == 64 && kTile == WS_TILE_FA3);
  const ws_sched sc = ws_sched_of<kDyn>(p, kBM, (kFlags & WS_CLUSTER) ? 2 : 1);

  if (tid == 0) {
    for (int b = 0; b < 2; ++b) ws_bar_init(br.q_full(b), 1), ws_bar_init(br.q_empty(b), 4 * kCons);
    for (int s = 0; s < kS; ++s) {
      ws_bar_init(br.k_full(s), 1), ws_bar_init(br.v_full(s), 1);
      ws_bar_init(br.k_empty(s), 4 * kCons * sc.cl), ws_bar_init(br.v_empty(s), 4 * kCons * sc.cl);
    }
    ws_bar_init_fence();
  }
  // In a cluster, no arrival or multicast may reach the other CTA before
  // its barriers are initialised, nor after it has exited.
  if (sc.cl > 1) ws_cluster_sync();
  else __syncthreads();

  if (wg == 0) { // producer
    if (!(kFlags & WS_NO_SETMAXNREG)) ws_regs_dec<C::kProdRegs>();
    if (tid == 0) {
      ws_tma_prefetch_map(&mp.q), ws_tma_prefetch_map(&mp.k), ws_tma_prefetch_map(&mp.v);
      ws_produce<kD, kTile, (kFlags & WS_STAMPS) != 0, kPlain>(p, mp, br, aQ, aK, aV, sc);
    }
    __syncwarp();
    if (sc.cl > 1) ws_cluster_sync();
    return;
  }

  if (!(kFlags & WS_NO_SETMAXNREG)) ws_regs_inc<C::kConsRegs>();
  const int cw = wg - 1, ctid = tid & 127, g = lane >> 2, t4 = lane & 3;
  const int wrow = cw * 64 + (ctid >> 5) * 16; // this warp's first row in the tile
  const float c = p.scale_log2;
  // Lazy softmax: a row's max moves only by more than 8 (log2 units), and
  // warps whose rows all kept theirs skip O's rescale (D256 +5-8 %, D64 +0-3
  // %, D128 within noise). Bench switch WS_AB_EAGER: every tile's, as before.
  const bool lazy = (p.ws_ab & WS_AB_EAGER) == 0;
  const float tau = lazy ? 8.f : 0.f;
  if ((kFlags & WS_PINGPONG) && cw == kCons - 1) ws_named_arrive(1, 256); // consumer 0 goes first
  const int nq = ws_q_bufs<C::kQBufs>(p), rounds = ws_rounds(sc);
  uint32_t it = 0, tc = 0;
  int q_held = -1; // a Q buffer whose O store may still be reading it
  // One Q buffer: O goes out from registers (ws_store_out) and each warp
  // hands Q back as soon as its last S product is done.
  const bool q_early = nq == 1 && !(p.ws_ab & WS_AB_O_SMEM);
  // WS_STAMPS (bench): thread 0 of each consumer records clock64 at six
  // points of each tile and the CTA's start and end (kWsStampBlock; every
  // word the host reads is written by each launch, so no clearing).
  unsigned long long *stp = nullptr;
  if constexpr ((kFlags & WS_STAMPS) != 0)
    if (ctid == 0 && blockIdx.x < kWsStampCtas) {
      stp = p.ws_stamps + ((size_t)blockIdx.x * 3 + cw) * kWsStampBlock;
      stp[0] = ws_globaltimer(), stp[1] = ws_clock();
    }
  auto stamp = [&](int k) {
    if constexpr ((kFlags & WS_STAMPS) != 0)
      if (stp && tc < (uint32_t)kWsStampTiles) stp[8 + 8 * tc + k] = ws_clock();
  };
  for (int r = 0; sc.dyn || r < rounds; ++r) {
    ws_tile w;
    stamp(1);
    if (sc.dyn) { // the producer's slot says which tile (-1: none left)
      const int qb = ws_qbuf<true>(tc, nq);
      ws_bar_wait(br.q_full(qb), ws_qpar<true>(tc, nq));
      const int t = ws_ld_shared(br.slot(qb));
      if (t < 0) break;
      ws_tile_of<kBM, kBN>(p, sc, t, w);
    } else if (!ws_tile_at<kBM, kBN, kPlain>(p, sc, r, w)) {
      continue;
    }
    const int qb = ws_qbuf<kPlain>(tc, nq);
    const uint32_t aQt = aQ + (uint32_t)qb * C::kQ; // this tile's Q (then O)
    // WS_STAMPS: this tile's step records (kWsStepRecs), thread 0 only;
    // sst(i, k): word k of key tile i's record; sfx(r, k) of record r
    // (kWsStepKeyRecs: the finish; kWsStepKeyRecs + 1: the head, words 0 Q
    // wait start, 1 Q landed, 2 epilogue start, 3 its end).
    // The record's address once a tile (computed at each stamp, its
    // arithmetic by every thread made the stamped kernel 24 % slower).
    uint32_t *rec = nullptr;
    if constexpr ((kFlags & WS_STAMPS) != 0)
      if (ctid == 0) rec = ws_step_rec(p, cw, tc);
    auto sfx = [&](int r, int k) {
      if constexpr ((kFlags & WS_STAMPS) != 0)
        if (rec) rec[8 * r + k] = ws_clock32();
    };
    auto sst = [&](int i, int k) {
      if constexpr ((kFlags & WS_STAMPS) != 0)
        if (i < kWsStepKeyRecs) sfx(i, k);
    };
    constexpr int kFin = kWsStepKeyRecs, kHead = kWsStepKeyRecs + 1;
    float o[kOR], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < kOR; ++i) o[i] = 0.f;
    sfx(kHead, 0);
    ws_bar_wait(br.q_full(qb), ws_qpar<kPlain>(tc, nq));
    sfx(kHead, 1);
    // ws_tile.h kWsQPrefetchDefault: the Q of this CTA's tile after next
    // into L2, a tile before the producer loads it (at the next tile's first
    // S, when this tile's Q buffer is free); here, where the consumer has
    // registers to spare (in the producer's 24 it spilled).
    if constexpr (((kFlags & WS_QPF) != 0) != kWsQPrefetchDefault)
      if (cw == 0 && ctid == 0 && !sc.dyn) {
        ws_tile w2;
        if (ws_tile_at<kBM, kBN, kPlain>(p, sc, r + 2, w2))
#pragma unroll
          for (int blk = 0; blk < kD / 64; ++blk) ws_tma_prefetch_l2(&mp.q, blk * 64, w2.m0, w2.h, w2.b);
      }
    const int n = w.n_blocks;
    stamp(2);
    if constexpr ((kFlags & WS_STAMPS) != 0)
      if (stp && tc < (uint32_t)kWsStampTiles) stp[8 + 8 * tc] = (unsigned)n, stp[8 + 8 * tc + 7] = (unsigned)w.m0;
    const int mrow0 = w.m0 + cw * 64; // first row of this warpgroup
    // After S of tile index i: Q's last reader done when i is the last.
    auto q_done = [&](int i) {
      if (q_early && i == n - 1) ws_release(br.q_empty(qb), lane);
    };
    if (n == 0) q_done(-1);
    // S(j) into s: the product of tile index i (key tile n - 1 - i).
    auto issue_s = [&](float (&s)[kSR], uint32_t j) {
      const uint32_t kv = aK + (j % kS) * C::kKV;
      // Q's descriptors again at each S: in the FA3 tiles' stale form, held
      // across the key loop they were what ptxas spilled (bench/NOTES.md).
      uint32_t q = aQt;
      if constexpr (kStale && kTile == WS_TILE_FA3) asm volatile("" : "+r"(q));
      // kDescStep: Q's and K's descriptors once, each k step an add; the
      // warpgroup's rows through a lane-0 broadcast, so that ptxas keeps
      // them in uniform registers (cw comes from threadIdx).
      const uint64_t qd = kDescStep ? wg_desc(q + (uint32_t)(__shfl_sync(0xffffffffu, cw, 0) * 64 * 128), 16, 1024) : 0;
      const uint64_t kd = kDescStep ? wg_desc(kv, 16, 1024) : 0;
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const uint32_t off = (uint32_t)((kk % 4) * 32);
        uint64_t da, db;
        if constexpr (kDescStep) {
          da = ws_desc_step(qd, (uint32_t)((kk / 4) * kBM * 128) + off);
          db = ws_desc_step(kd, (uint32_t)((kk / 4) * kBN * 128) + off);
        } else {
          da = wg_desc(q + (uint32_t)((kk / 4) * kBM * 128 + cw * 64 * 128) + off, 16, 1024);
          db = wg_desc(kv + (uint32_t)((kk / 4) * kBN * 128) + off, 16, 1024);
        }
        wgmma_op<T, kBN>::ss(s, da, db, kk > 0);
      }
      wg_commit();
    };
    auto issue_pv = [&](const uint32_t (&pa)[kSR / 8][4], uint32_t j) {
      const uint32_t vv = aV + (j % kS) * C::kKV;
      const uint64_t vd = wg_desc(vv, kBN * 128, 1024);
#pragma unroll
      for (int kk = 0; kk < kBN / 16; ++kk)
        wgmma_op<T, kD>::rs(o, pa[kk], kDescStep ? ws_desc_step(vd, (uint32_t)(kk * 16 * 128))
                                                 : wg_desc(vv + (uint32_t)(kk * 16 * 128), kBN * 128, 1024));
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
      sfx(kFin, 0);
      ws_bar_wait(br.v_full(jv % kS), (jv / kS) & 1);
      sfx(kFin, 1);
      ws_turn_wait<kFlags, !kTurnExp>(cw);
      wg_hold(o);
      wg_fence();
      issue_pv(pc, jv);
      ws_turn_pass<kFlags, kCons, !kTurnExp>(cw);
      sfx(kFin, 2);
      wg_wait_all();
      wg_hold(o);
      sfx(kFin, 3);
      ws_release_kv<kFlags>(br.v_empty(jv % kS), lane);
    };

    if (kSerial && n > 0) {
      // cuDNN's order (WS_SERIAL): per key tile S issued and waited, the
      // softmax with its exps in this consumer's turn, P V issued and left in
      // flight until the next S's wait (kPvWait: waited at once). No S of the
      // next tile runs under the softmax: the other consumer's products fill
      // the tensor cores meanwhile. One P buffer (the wait before each
      // softmax ends the P V reading it) and a loop that is not unrolled:
      // a smaller kernel (fewer instruction-fetch and branch stalls).
      uint32_t pa[kSR / 8][4];
#pragma unroll 1
      for (int i = 0; i < n; ++i) {
        const uint32_t j = it + i;
        float s[kSR], a2[2] = {1.f, 1.f};
        ws_bar_wait(br.k_full(j % kS), (j / kS) & 1);
        wg_hold(o);
        wg_fence();
        issue_s(s, j);
        ws_q_release(br, q_held, ctid); // the last tile's Q buffer, under the first S
        wg_wait_all(); // S(j), and P(j-1) V(j-1) if still in flight
        wg_hold(s);
        wg_hold(o);
        if (!kPvWait && i > 0) ws_release_kv<kFlags>(br.v_empty((j - 1) % kS), lane);
        mask(s, i);
        // The max first (fresh) in the first two key tiles when causal and
        // while a row has no key yet, as the unrolled loop's steps.
        if (__any_sync(0xffffffffu, i <= p.causal || m[0] == -INFINITY || m[1] == -INFINITY))
          ws_raise_max(s, m, l, a2, c);
        ws_turn_wait<kFlags>(cw);
        const bool ok = ws_softmax_stale<T>(s, m, l, pa, c, false);
        ws_turn_pass_exp<kFlags, kCons, true>(cw, l);
        if (!ok)
          ws_stale_fallback<T, kD, kBM, kBN, false>(pa, m, l, a2, c, aQt, aK + (j % kS) * C::kKV, wrow,
                                                    lane, [&](auto &sp, int k0) { mask(sp, i, k0); });
        ws_release_kv<kFlags>(br.k_empty(j % kS), lane);
        q_done(i);
        ws_rescale(o, a2, lazy);
        ws_bar_wait(br.v_full(j % kS), (j / kS) & 1);
        wg_hold(o); // the rescale's writes, before the fence
        wg_fence();
        issue_pv(pa, j);
        if (kPvWait) {
          wg_wait_all();
          wg_hold(o);
          ws_release_kv<kFlags>(br.v_empty(j % kS), lane);
        }
      }
      if (!kPvWait) {
        wg_wait_all();
        wg_hold(o);
        ws_release_kv<kFlags>(br.v_empty((it + n - 1) % kS), lane);
      }
    } else if (kRolled && n > 0) {
      // One body for every key tile (kWsRolledDefault), the default's order:
      // S(i) issued, then P(i-1) V(i-1) (none at i = 0), S waited; mask, the
      // max where fresh (as the step's), the stale-max exps in place in s in
      // this consumer's turn; P V waited, P packed into the one P buffer it
      // read (or the fallback's P), K released, O *= alpha. Not unrolled:
      // one copy of the step and of the fallback.
      uint32_t pa[kSR / 8][4];
#pragma unroll 1
      for (int i = 0; i < n; ++i) {
        const uint32_t j = it + i, jv = j - 1;
        float s[kSR], a2[2] = {1.f, 1.f};
        ws_bar_wait(br.k_full(j % kS), (j / kS) & 1);
        if (i > 0) ws_bar_wait(br.v_full(jv % kS), (jv / kS) & 1);
        ws_turn_wait<kFlags, !kTurnExp>(cw);
        wg_hold(o);
        wg_fence();
        issue_s(s, j);
        if (i > 0) issue_pv(pa, jv);
        else wg_commit(); // an empty group: S is always the second newest
        ws_turn_pass<kFlags, kCons, !kTurnExp>(cw);
        ws_q_release(br, q_held, ctid); // the last tile's Q buffer, under the first S
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        wg_hold(s);
        mask(s, i);
        if (__any_sync(0xffffffffu, i <= p.causal || m[0] == -INFINITY || m[1] == -INFINITY))
          ws_raise_max(s, m, l, a2, c);
        bool ok;
        if constexpr (kPvFirst) { // P V waited before the exps, which pack P as the step's
          wg_wait_all();
          wg_hold(o);
          if (i > 0) ws_release_kv<kFlags>(br.v_empty(jv % kS), lane);
          ws_turn_wait<kFlags, kTurnExp>(cw);
          ok = ws_softmax_stale<T, kFma>(s, m, l, pa, c, false);
          ws_turn_pass_exp<kFlags, kCons, kTurnExp>(cw, l);
        } else {
          ws_turn_wait<kFlags, kTurnExp>(cw);
          ok = ws_softmax_stale_f<kFma>(s, m, l, c);
          ws_turn_pass_exp<kFlags, kCons, kTurnExp>(cw, l);
          wg_wait_all();
          wg_hold(o);
          wg_hold(s); // the pack below rewrites pa: only after P V's wait
          if (i > 0) ws_release_kv<kFlags>(br.v_empty(jv % kS), lane);
          ws_pack_p<T>(s, pa);
        }
        if (!ok)
          ws_stale_fallback<T, kD, kBM, kBN, kTile == WS_TILE_FA3>(pa, m, l, a2, c, aQt, aK + (j % kS) * C::kKV,
                                                                   wrow, lane, [&](auto &sp, int k0) { mask(sp, i, k0); });
        ws_release_kv<kFlags>(br.k_empty(j % kS), lane);
        q_done(i);
        ws_rescale(o, a2, lazy);
      }
      finish(pa);
    } else if (n > 0) {
      uint32_t pa[kSR / 8][4];
      float alpha[2];
      // kDiagHalf: the first key tile's keys 0..kKeep-1 visible in all of
      // this consumer's rows (so each row's max is of kKeep keys or more).
      bool low = false;
      {
        float s[kSR];
        sst(0, 0);
        ws_bar_wait(br.k_full(it % kS), (it / kS) & 1);
        stamp(3);
        sst(0, 1);
        ws_turn_wait<kFlags, !kTurnExp>(cw);
        wg_fence();
        issue_s(s, it);
        ws_turn_pass<kFlags, kCons, !kTurnExp>(cw);
        stamp(4);
        sst(0, 2);
        ws_q_release(br, q_held, ctid); // the last tile's Q buffer, under this S
        wg_wait_all();
        wg_hold(s);
        sst(0, 3);
        ws_release_kv<kFlags>(br.k_empty(it % kS), lane);
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
        else if (!(kFlags & WS_NO_SOFTMAX)) mask(s, 0);
        sst(0, 4);
        ws_turn_wait<kFlags, kTurnExp>(cw);
        sst(0, 5);
        if (part) {
          ws_soft<T, kFlags, kSplit>(sh, m, l, ph, alpha, c, tau);
#pragma unroll
          for (int f = kKeep / 16; f < kSR / 8; ++f) pa[f][0] = pa[f][1] = pa[f][2] = pa[f][3] = 0u;
        } else {
          ws_soft<T, kFlags, kSplit>(s, m, l, pa, alpha, c, tau);
        }
        ws_turn_pass_exp<kFlags, kCons, kTurnExp>(cw, l);
        sst(0, 6);
      }
      // Key tile i: S(i) and P(i-1) V(i-1) issued together; P(i) lands in pn.
      // Unrolled by two so that P(i-1) and P(i) never share registers (a
      // wgmma still reading its A registers must not see them rewritten).
      auto step = [&](int i, const uint32_t (&pc)[kSR / 8][4], uint32_t (&pn)[kSR / 8][4]) {
        const uint32_t j = it + i, jv = j - 1;
        float s[kSR];
        sst(i, 0);
        ws_bar_wait(br.k_full(j % kS), (j / kS) & 1);
        ws_bar_wait(br.v_full(jv % kS), (jv / kS) & 1);
        sst(i, 1);
        ws_turn_wait<kFlags, !kTurnExp>(cw);
        wg_hold(o);
        wg_fence();
        issue_s(s, j);
        float a2[2];
        bool moved = true; // false: a2 is exactly 1 (WS_RSKIP: no vote before the rescale)
        if (!(kFlags & WS_OVERLAP)) {
          ws_turn_pass<kFlags, kCons, !kTurnExp>(cw);
          wg_wait_all();
          wg_hold(s);
          ws_release_kv<kFlags>(br.k_empty(j % kS), lane);
          q_done(i);
          wg_fence();
          issue_pv(pc, jv);
          wg_wait_all();
          wg_hold(o);
          ws_release_kv<kFlags>(br.v_empty(jv % kS), lane);
          if (!(kFlags & WS_NO_SOFTMAX)) mask(s, i);
          ws_turn_wait<kFlags, kTurnExp>(cw);
          ws_soft<T, kFlags>(s, m, l, pn, a2, c, tau);
          ws_turn_pass_exp<kFlags, kCons, kTurnExp>(cw, l);
        } else {
          issue_pv(pc, jv);
          ws_turn_pass<kFlags, kCons, !kTurnExp>(cw);
          sst(i, 2);
          asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
          wg_hold(s);
          sst(i, 3);
          if constexpr (kStale) {
            // The stale-max softmax, its max first (fresh) in the first two
            // key tiles when causal (the diagonal tile gives the top rows a
            // few keys; kFreshSkip: not at the second in a consumer whose rows
            // all saw kKeep keys of the first) and while a row has none
            // (m = -inf).
            const bool fresh = __any_sync(0xffffffffu, (i <= p.causal && !(kFreshSkip && low)) ||
                                                           m[0] == -INFINITY || m[1] == -INFINITY);
            a2[0] = a2[1] = 1.f;
            mask(s, i);
            if (fresh) ws_raise_max<kSplit>(s, m, l, a2, c);
            sst(i, 4);
            ws_turn_wait<kFlags, kTurnExp>(cw);
            sst(i, 5);
            bool ok; // P <= 1 if fresh
            if constexpr (kLate) {
              float sum[2];
              ws_stale_exps<T, kFma, kSplit>(s, m, pn, c, sum);
              ws_turn_pass_late<kFlags, kCons, kTurnExp>(cw, sum, pn);
              sst(i, 6);
              ok = ws_stale_keep(sum, l, false);
            } else {
              ok = ws_softmax_stale<T, kFma, kSplit>(s, m, l, pn, c, false);
              ws_turn_pass_exp<kFlags, kCons, kTurnExp>(cw, l);
              sst(i, 6);
            }
            wg_wait_all();
            wg_hold(o);
            sst(i, 7);
            ws_release_kv<kFlags>(br.v_empty(jv % kS), lane);
            // A failed check: S again, from K and Q still held, by this
            // warp alone (mma.sync), now that P V is done.
            if (!ok) {
              ws_stale_fallback<T, kD, kBM, kBN, kTile == WS_TILE_FA3>(pn, m, l, a2, c, aQt, aK + (j % kS) * C::kKV, wrow,
                                                 lane, [&](auto &sp, int k0) { mask(sp, i, k0); });
            }
            ws_release_kv<kFlags>(br.k_empty(j % kS), lane);
            q_done(i);
            moved = fresh || !ok; // warp-uniform: both come from votes
          } else {
            ws_release_kv<kFlags>(br.k_empty(j % kS), lane);
            q_done(i);
            if (!(kFlags & WS_NO_SOFTMAX)) mask(s, i);
            ws_turn_wait<kFlags, kTurnExp>(cw);
            ws_soft<T, kFlags, kSplit>(s, m, l, pn, a2, c, tau);
            ws_turn_pass_exp<kFlags, kCons, kTurnExp>(cw, l);
            wg_wait_all();
            wg_hold(o);
            ws_release_kv<kFlags>(br.v_empty(jv % kS), lane);
          }
        }
        if (!kRsSkip || moved) ws_rescale(o, a2, lazy);
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
      stamp(5);
    }
    it += (uint32_t)n;

    // Epilogue: O / l into this warpgroup's rows of its Q buffer (its
    // products are done with them), then TMA stores of 64 x 64 boxes. The
    // buffer goes back to the producer once they have read it: here with
    // one Q buffer (the next tile's Q needs it), else under the next S.
    sfx(kHead, 2);
    ws_q_release(br, q_held, ctid); // still held only when this tile had no key tile
    float *lse = p.lse ? p.lse + ((int64_t)w.b * p.hq + w.h) * p.sq + w.m0 : nullptr;
    if (q_early) {
      T *og = (T *)p.o + w.b * p.o_sb + w.h * p.o_sh + (int64_t)w.m0 * p.o_ss;
      ws_store_out<T, kD>(og, p.o_ss, o, m, l, wrow + g, t4, c, lse, p.sq - w.m0);
      stamp(6);
      sfx(kHead, 3);
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
    if (nq == 1 || (p.ws_ab & WS_AB_STORE_WAIT)) ws_q_release(br, q_held, ctid);
    stamp(6);
    sfx(kHead, 3);
    ++tc;
  }
  if constexpr ((kFlags & WS_STAMPS) != 0)
    if (stp) stp[2] = ws_globaltimer(), stp[3] = ws_clock(), stp[4] = tc;
  ws_q_release(br, q_held, ctid);
  // The last hand-over of the ping-pong has no taker: consume it so that no
  // named barrier is left half-arrived at exit.
  if ((kFlags & WS_PINGPONG) && cw == 0) ws_named_sync(1, 256);
  if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  __syncwarp();
  if (sc.cl > 1) ws_cluster_sync();
#else
  __trap(); // built for sm_90a only; flash_cuda.cu never launches it elsewhere
#endif
}

// Clusters of two CTAs (kFlags WS_CLUSTER, non-causal): how many fit at
// once by cudaOccupancyMaxActiveClusters, asked once per instance and
// printed to stderr (bench-only instances; the H200 said 66 for every one).
template <typename T, int kD, int kFlags, int kTile>
static int ws_cluster_slots(cudaLaunchConfig_t cfg) {
  static int slots = -1;
  if (slots < 0) {
    int n = 0;
    cfg.gridDim = dim3(2, 1, 1);
    if (cudaOccupancyMaxActiveClusters(&n, flash_fwd_ws_kernel<T, kD, kFlags, kTile>, &cfg) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 0;
    }
    slots = n;
    fprintf(stderr, "flash ws (D%d, tile %d): cudaOccupancyMaxActiveClusters says %d clusters of 2\n",
            kD, kTile, n);
  }
  return slots;
}

// Bench only: WS_AB_DYN's counter (two zeroed words) and WS_STAMPS' buffer,
// one each per instance and device, allocated at first use.
template <typename T, int kD, int kFlags, int kTile>
static attn_status ws_bench_bufs(attn_fused_params &q) {
  static unsigned int *ctr[64];
  static unsigned long long *stamps[64];
  int dev = 0;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return ATTN_STATUS_OK;
  if ((q.ws_ab & WS_AB_DYN) && !ctr[dev]) {
    ATTN_CUDA_TRY(cudaMalloc((void **)&ctr[dev], 2 * sizeof(unsigned)));
    ATTN_CUDA_TRY(cudaMemset(ctr[dev], 0, 2 * sizeof(unsigned)));
  }
  const size_t sb = (size_t)kWsStampCtas * 3 * kWsStampBlock * sizeof(unsigned long long) + kWsStepBytes;
  if ((kFlags & WS_STAMPS) && !stamps[dev]) ATTN_CUDA_TRY(cudaMalloc((void **)&stamps[dev], sb));
  q.ws_ctr = (q.ws_ab & WS_AB_DYN) ? ctr[dev] : nullptr;
  q.ws_stamps = stamps[dev];
  return ATTN_STATUS_OK;
}

// Bench only (WS_STAMPS): after the launch, the stamps of its first grid
// CTAs to the file ATTNPROF_FLASH_WS_STAMPS (8 int32: magic "WSTP", grid,
// kCons, kBM, kBN, kD, kWsStampTiles, kWsStampBlock; then the words; then
// 4 int32: magic "WSSR", kWsStepRecs, 8 words, 4 blocks; then the step
// records of those CTAs, 32-bit).
template <int kD, int kCons, int kBM, int kBN>
static attn_status ws_stamps_write(const attn_fused_params &q, unsigned grid, cudaStream_t stream) {
  const char *path = getenv("ATTNPROF_FLASH_WS_STAMPS");
  if (!path || !*path || !q.ws_stamps) return ATTN_STATUS_OK;
  const unsigned g = grid < (unsigned)kWsStampCtas ? grid : (unsigned)kWsStampCtas;
  const size_t n = (size_t)g * 3 * kWsStampBlock, n_all = (size_t)kWsStampCtas * 3 * kWsStampBlock;
  const size_t ns = (size_t)g * 4 * kWsStampTiles * kWsStepRecs * 8; // 32-bit words
  unsigned long long *h = (unsigned long long *)malloc(n * sizeof *h + ns * 4);
  if (!h) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "flash (ws): no host memory for the stamps");
  uint32_t *hs = (uint32_t *)(h + n);
  ATTN_CUDA_TRY(cudaStreamSynchronize(stream));
  cudaError_t e = cudaMemcpy(h, q.ws_stamps, n * sizeof *h, cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(hs, q.ws_stamps + n_all, ns * 4, cudaMemcpyDeviceToHost);
  FILE *f = e == cudaSuccess ? fopen(path, "wb") : nullptr;
  const int32_t hd[8] = {0x50545357, (int32_t)g, kCons, kBM, kBN, kD, kWsStampTiles, kWsStampBlock};
  const int32_t hs_hd[4] = {0x52535357, kWsStepRecs, 8, 4};
  const bool ok = f && fwrite(hd, sizeof hd, 1, f) == 1 && fwrite(h, sizeof *h, n, f) == n &&
                  fwrite(hs_hd, sizeof hs_hd, 1, f) == 1 && fwrite(hs, 4, ns, f) == ns;
  if (f) fclose(f);
  free(h);
  if (!ok) return attn_fail(ATTN_STATUS_IO_ERROR, "flash (ws): could not write the stamps to %s", path);
  return ATTN_STATUS_OK;
}

template <typename T, int kD, int kFlags, int kTile>
static attn_status ws_launch(const attn_fused_params &p0, cudaStream_t stream) {
  attn_fused_params p = p0;
  if ((p.ws_ab & WS_AB_DYN) || (kFlags & WS_STAMPS)) {
    const attn_status bs = ws_bench_bufs<T, kD, kFlags, kTile>(p);
    if (bs) return bs;
  }
  using C = ws_cfg<kD, kTile>;
  {
    const int n_mb = (p.sq + C::kBM - 1) / C::kBM;
    const int dv[WS_DIV_N] = {p.hq, p.hkv > 0 ? p.hq / p.hkv : 1, p.b * p.hq, n_mb, n_mb / 2};
    for (int k = 0; k < WS_DIV_N; ++k) ws_div_set(p.ws_div[k], dv[k] > 0 ? dv[k] : 1);
  }
  void (*kernel)(const attn_fused_params, const attn_ws_maps) = flash_fwd_ws_kernel<T, kD, kFlags, kTile>;
  attn_status st = attn_launch_smem_limit(p.ctx, (const void *)kernel, C::kSmem);
  if (st) return st;
  int dev = 0, sms = 132;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  const struct cudaDeviceProp *pr = attn_cuda_props(dev);
  if (pr) sms = pr->multiProcessorCount;
  const int64_t n_mb = (p.sq + C::kBM - 1) / C::kBM, tiles = n_mb * p.hq * p.b;
  cudaLaunchAttribute at[1];
  cudaLaunchConfig_t cfg = {};
  cfg.blockDim = dim3(C::kThreads, 1, 1), cfg.dynamicSmemBytes = C::kSmem, cfg.stream = stream;
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 2, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
  cfg.attrs = at, cfg.numAttrs = 1;
  const int slots = (kFlags & WS_CLUSTER) ? ws_cluster_slots<T, kD, kFlags, kTile>(cfg) : 0;
  if ((kFlags & WS_CLUSTER) && (p.causal || slots == 0))
    return attn_fail(ATTN_STATUS_UNSUPPORTED, "flash (ws): clusters of two CTAs are for non-causal "
                     "attention on a device that fits them (%d fit)", slots);
  const attn_ws_maps *mp = nullptr;
  st = attn_ws_maps_get(&p, __is_same(T, __nv_bfloat16), C::kBM, slots ? C::kBN / 2 : C::kBN, 64, &mp);
  if (st) return st;
  if (slots) {
    // One cluster per two SMs, whatever the occupancy answer (clusters that
    // do not fit at once wait for a free pair; the loop stays correct).
    const int64_t n_ct = (n_mb + 1) / 2 * p.hq * p.b, per = sms / 2;
    cfg.gridDim = dim3((unsigned)(2 * (n_ct < per ? n_ct : per)), 1, 1);
    ATTN_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, p, *mp));
  } else {
    const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
    kernel<<<grid, C::kThreads, C::kSmem, stream>>>(p, *mp);
    ATTN_CUDA_CHECK_LAUNCH("flash_fwd_ws_kernel");
    if (kFlags & WS_STAMPS) return ws_stamps_write<kD, C::kCons, C::kBM, C::kBN>(p, grid, stream);
  }
  ATTN_CUDA_CHECK_LAUNCH("flash_fwd_ws_kernel");
  return ATTN_STATUS_OK;
}

template <typename T, int kD, int kFlags, int kTile>
attn_status ws_run(const attn_fused_params &p, cudaStream_t stream) {
  return ws_launch<T, kD, kFlags, kTile>(p, stream);
}

#endif
