// The softmax of the warp-specialized flash kernel, beside wg_softmax (the
// online softmax with a lazy max, flash_fwd_wgmma_kernel.cuh), which runs the
// first key tile everywhere and every tile at D256: the stale-max form of the
// later key tiles at D64 and D128, its fallback, and O's rescale.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_SOFTMAX_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_SOFTMAX_CUH

#include "attn/cuda/fused/flash_fwd_wgmma_kernel.cuh"

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
  for (int hh = 0; hh < 2; ++hh)
    sum[hh] = wg_exp_row<T>(s, pa, hh, c, m[hh] == -INFINITY ? 0.f : m[hh] * c);
}
FUSED_DEV bool ws_stale_keep(const float (&sum)[2], float (&l)[2], bool force) {
  if (!force && !__all_sync(0xffffffffu, sum[0] <= kWsStaleCap && sum[1] <= kWsStaleCap))
    return false;
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
        else ws_softmax_stale<T>(s, m, l, reinterpret_cast<uint32_t(&)[kH0][4]>(pa[0]), c, true);
      }
      {
        float s[8 * kH1];
        ws_warp_s<T, kD, kBM, kBN, kH0, kH1>(s, aQt, kv, wrow, lane);
        mask(s, 16 * kH0);
        if (pass == 0) ws_raise_max(s, m, l, alpha, c);
        else ws_softmax_stale<T>(s, m, l, reinterpret_cast<uint32_t(&)[kH1][4]>(pa[kH0]), c, true);
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

#endif
