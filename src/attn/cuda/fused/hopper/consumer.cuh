// The consumers of the warp-specialized flash kernel: each warpgroup owns 64
// query rows (wgmma M = 64) of the tile and walks its key tiles from the last
// (the tail and the causal diagonal first, the only ones masked). Per key
// tile j: issue S(j) = Q K(j)^T, issue O += P(j-1) V(j-1) (P in registers),
// wait S, mask, softmax -> P(j), wait O, O *= alpha. So the softmax runs
// under the previous P V (intra-warpgroup overlap), and the consumers take
// turns issuing (ping-pong), so that one's softmax runs under the others'
// products.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_CONSUMER_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_CONSUMER_CUH

#include "attn/cuda/fused/hopper/mask.cuh"
#include "attn/cuda/fused/hopper/pipeline.cuh"
#include "attn/cuda/fused/hopper/softmax.cuh"
#include "attn/cuda/fused/hopper/tile_traits.cuh"

// Ping-pong: turns go round the kCons consumers (cw waits on barrier 1 + cw,
// passes to the next one's), taken where kHere says: around the product
// issue (a consumer waits for its turn, issues S and P V, hands it over), or
// around each softmax's exps (tile_traits.cuh kWsTurnExp: the D64 base tile), as
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

// The hand-over after the stale-max exps (tile_traits.cuh kWsLate: the
// D64 base tile): the arrival's count goes through the row sums and P's packs
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

// One consumer thread's key loop over one tile: the CTA's barriers and K/V
// rings, its warpgroup cw and lane, the tile's rows (rw), the key tiles run
// before it (it: ring position), its Q buffer, and O, m, l.
template <typename T, int kD, int kTile>
struct ws_consumer {
  using C = ws_cfg<kD, kTile>;
  static constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages, kCons = C::kCons;
  static constexpr int kSR = C::kSR, kOR = C::kOR, kKeep = ws_diag_keep<kBN>;
  static constexpr bool kStale = kWsStale<kD>, kTurnExp = kWsTurnExp<kD, kTile>;
  static constexpr bool kLate = kWsLate<kD, kTile>, kDiagHalf = kWsDiagHalf<kD>;
  // Only the rest masked where keys 0..kKeep-1 are visible in all rows: not
  // at FA3's D64 tile (128 registers: that third mask made ptxas spill).
  static constexpr bool kLowMask = kDiagHalf && !(kD == 64 && kTile == WS_TILE_FA3);
  static constexpr bool kQEarly = C::kQBufs == 1;  // each warp hands Q back after its last S
  using P = uint32_t[kSR / 8][4];                  // P as wgmma's register A fragments

  const attn_fused_params &p;
  const ws_bars br;
  const uint32_t aK, aV, aQt, it;
  const int cw, lane, qb;
  const ws_rows rw;
  const float c;
  float (&o)[kOR];
  float (&m)[2];
  float (&l)[2];

  // After S of tile index i: Q's last reader done when i is the last.
  __device__ __forceinline__ void q_done(int i) const {
    if (kQEarly && i == rw.n - 1) ws_release(br.q_empty(qb), lane);
  }

  // S(j) into s: SS wgmma, kD / 16 steps of m64 n{kBN} k16. Q's address
  // passes through an empty asm in the FA3 tiles' stale form: Q's
  // descriptors held across the key loop were what ptxas spilled there.
  __device__ __forceinline__ void issue_s(float (&s)[kSR], uint32_t j) const {
    const uint32_t kv = aK + (j % kS) * C::kKV;
    uint32_t q = aQt;
    if constexpr (kStale && kTile == WS_TILE_FA3) asm volatile("" : "+r"(q));
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t off = (uint32_t)((kk % 4) * 32);
      const uint64_t da =
          wg_desc(q + (uint32_t)((kk / 4) * kBM * 128 + cw * 64 * 128) + off, 16, 1024);
      const uint64_t db = wg_desc(kv + (uint32_t)((kk / 4) * kBN * 128) + off, 16, 1024);
      wgmma_op<T, kBN>::ss(s, da, db, kk > 0);
    }
    wg_commit();
  }

  // O += P V(j): RS wgmma, kBN / 16 steps of m64 n{kD} k16, V read N-major.
  __device__ __forceinline__ void issue_pv(const P &pa, uint32_t j) {
    const uint32_t vv = aV + (j % kS) * C::kKV;
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
      wgmma_op<T, kD>::rs(o, pa[kk], wg_desc(vv + (uint32_t)(kk * 16 * 128), kBN * 128, 1024));
    wg_commit();
  }

  __device__ __forceinline__ void mask(float (&s)[kSR], int i) const { ws_mask<kBN>(s, p, rw, i); }

  // The first key tile (the causal diagonal or the ragged last one): S
  // waited at once, the softmax with a fresh max. With kDiagHalf, on its
  // first kKeep keys only where the rest is masked in every row of this
  // consumer (P's rest zero), and only the rest masked where the first
  // kKeep are visible in every row; masked keys add exp2(-inf) = 0 to l and
  // P, so m, l and P are the whole tile's. Returns low (each row has seen
  // kKeep keys or more).
  __device__ __forceinline__ bool first(P &pa, float (&alpha)[2], int &q_held, int ctid) {
    float s[kSR];
    ws_bar_wait(br.k_full(it % kS), (it / kS) & 1);
    ws_turn_wait<!kTurnExp>(cw);
    wg_fence();
    issue_s(s, it);
    ws_turn_pass<kCons, !kTurnExp>(cw);
    ws_q_release(br, q_held, ctid);  // the last tile's Q buffer, under this S
    wg_wait_all();
    wg_hold(s);
    ws_release(br.k_empty(it % kS), lane);
    q_done(0);
    auto &sh = reinterpret_cast<float(&)[kKeep / 2]>(s);
    auto &su = reinterpret_cast<float(&)[kSR - kKeep / 2]>(s[kKeep / 2]);
    auto &ph = reinterpret_cast<uint32_t(&)[kKeep / 16][4]>(pa);
    bool part = false, low = false;
    if constexpr (kDiagHalf) ws_diag_votes<kBN, kKeep>(p, rw, part, low);
    if (part) ws_mask<kBN>(sh, p, rw, 0);
    else if (kLowMask && low) ws_mask<kBN>(su, p, rw, 0, kKeep);
    else mask(s, 0);
    ws_turn_wait<kTurnExp>(cw);
    if (part) {
      wg_softmax<T>(sh, m, l, ph, alpha, c, kWsTau);
#pragma unroll
      for (int f = kKeep / 16; f < kSR / 8; ++f) pa[f][0] = pa[f][1] = pa[f][2] = pa[f][3] = 0u;
    } else {
      wg_softmax<T>(s, m, l, pa, alpha, c, kWsTau);
    }
    ws_turn_pass_exp<kCons, kTurnExp>(cw, l);
    return low;
  }

  // The stale-max softmax of key tile index i (D64, D128; S waited): its max
  // first (fresh) in the first two key tiles when causal (the diagonal tile
  // gives the top rows a few keys; not at the second in a consumer whose rows
  // all saw kKeep keys of the first: low) and while a row has none (m =
  // -inf); the exps against the running max, checked by the row sums after
  // P V(i-1) is waited; a failed check computes S again, from K and Q still
  // held, by this warp alone (mma.sync).
  __device__ __forceinline__ void step_stale(int i, bool low, float (&s)[kSR], P &pn,
                                             float (&a2)[2]) {
    const uint32_t j = it + i, jv = j - 1;
    const bool fresh = __any_sync(0xffffffffu, (i <= p.causal && !(kDiagHalf && low)) ||
                                                   m[0] == -INFINITY || m[1] == -INFINITY);
    a2[0] = a2[1] = 1.f;
    mask(s, i);
    if (fresh) ws_raise_max(s, m, l, a2, c);
    ws_turn_wait<kTurnExp>(cw);
    bool ok;  // P <= 1 if fresh
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
    if (!ok) {
      const int wrow = rw.wrow;
      ws_stale_fallback<T, kD, kBM, kBN, kTile == WS_TILE_FA3>(
          pn, m, l, a2, c, aQt, aK + (j % kS) * C::kKV, wrow, lane,
          [&](auto &sp, int k0) { ws_mask<kBN>(sp, p, rw, i, k0); });
    }
    ws_release(br.k_empty(j % kS), lane);
    q_done(i);
  }

  // The online softmax with a lazy max of key tile index i (D256): K and Q
  // are free once S is waited.
  __device__ __forceinline__ void step_online(int i, float (&s)[kSR], P &pn, float (&a2)[2]) {
    const uint32_t j = it + i, jv = j - 1;
    ws_release(br.k_empty(j % kS), lane);
    q_done(i);
    mask(s, i);
    ws_turn_wait<kTurnExp>(cw);
    wg_softmax<T>(s, m, l, pn, a2, c, kWsTau);
    ws_turn_pass_exp<kCons, kTurnExp>(cw, l);
    wg_wait_all();
    wg_hold(o);
    ws_release(br.v_empty(jv % kS), lane);
  }

  // Key tile index i >= 1: S(i) and P(i-1) V(i-1) issued together, P(i)
  // into pn, then O *= alpha.
  __device__ __forceinline__ void step(int i, bool low, const P &pc, P &pn) {
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
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // S done, P V may run on
    wg_hold(s);
    if constexpr (kStale) step_stale(i, low, s, pn, a2);
    else step_online(i, s, pn, a2);
    ws_rescale(o, a2);
  }

  // The last key tile's P V, after the loop.
  __device__ __forceinline__ void finish(const P &pc) {
    const uint32_t jv = it + rw.n - 1;
    ws_bar_wait(br.v_full(jv % kS), (jv / kS) & 1);
    ws_turn_wait<!kTurnExp>(cw);
    wg_hold(o);
    wg_fence();
    issue_pv(pc, jv);
    ws_turn_pass<kCons, !kTurnExp>(cw);
    wg_wait_all();
    wg_hold(o);
    ws_release(br.v_empty(jv % kS), lane);
  }

  // Every key tile of the tile (n >= 1): the first, then the steps unrolled
  // by two so that P(i-1) and P(i) never share registers (a wgmma still
  // reading its A registers must not see them rewritten), then the last P V.
  __device__ __forceinline__ void run(int &q_held, int ctid) {
    P pa, pb;
    float alpha[2];
    const bool low = first(pa, alpha, q_held, ctid);
    int i = 1;
    for (; i + 1 < rw.n; i += 2) {
      step(i, low, pa, pb);
      step(i + 1, low, pb, pa);
    }
    if (i < rw.n) {
      step(i, low, pa, pb);
      finish(pb);
    } else {
      finish(pa);
    }
  }
};

#endif
