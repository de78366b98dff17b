/* Tile shapes of the warp-specialized flash kernel (flash_fwd_ws_kernel.cuh)
 * and the one function that picks one per (head dim, causal, Sq).
 * WS_TILE_BASE: 128 x 128 (128 x 64 at D256), two consumer warpgroups.
 * WS_TILE_FA3: FlashAttention-3's published choices: 192 query rows over
 * three consumer warpgroups at D64, 128 x 176 K/V tiles at D128, 128 x 80 at
 * D256. Plain C so that the host test (tests/attn) calls ws_tile_pick. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TILE_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TILE_H

enum { WS_TILE_BASE = 0, WS_TILE_FA3 = 1 };

/* The shape each (D, causal, Sq) runs: FA3's where it measured faster than
 * the base shape, else the base shape (docs/design holds the numbers).
 * D64: three consumers hide the softmax that two do not, but at causal S < 2k
 * 192-row tiles pad the rows and leave fewer tiles per SM. D128: 176-key tiles
 * pay the per-tile cost less often per key, non-causal from S 2k and causal
 * from S 16k (below, a wider tile wastes more masked keys on the diagonal).
 * D256: 80-key tiles except causal S < 2k. */
static inline int ws_tile_pick(int d, int causal, long long sq) {
  const int short_seq = sq < 2048;
  switch (d) {
  case 64: return causal && short_seq ? WS_TILE_BASE : WS_TILE_FA3;
  case 128: return short_seq || (causal && sq < 16384) ? WS_TILE_BASE : WS_TILE_FA3;
  default: return causal && short_seq ? WS_TILE_BASE : WS_TILE_FA3;
  }
}

#ifdef __cplusplus
/* kBM query rows (64 per consumer warpgroup), kBN keys per K/V tile, kStages
 * ring slots per K and V, kCons consumer warpgroups, the setmaxnreg split
 * (producer, consumer: 128 x (kProdRegs + kCons x kConsRegs) <= 64 K). */
template <int kD, int kTile>
struct ws_shape {
  static constexpr bool kFa3 = kTile == WS_TILE_FA3;
  static constexpr int kBM = kFa3 && kD == 64 ? 192 : 128;
  static constexpr int kBN = kFa3 ? (kD == 64 ? 128 : kD == 128 ? 176 : 80) : (kD == 256 ? 64 : 128);
  static constexpr int kStages = kD == 64 ? 4 : 2;
  static constexpr int kCons = kBM / 64;
  static constexpr int kProdRegs = kCons == 3 ? 32 : 24;
  static constexpr int kConsRegs = kCons == 3 ? 160 : 240;
};

/* The softmax: the stale-max form at D64 and D128, the online one with a
 * lazy max at D256 (where the stale form's FA3 instance spilled). */
template <int kD>
constexpr bool kWsStale = kD <= 128;
/* The lazy max: a row's running max moves only when it rose by more than
 * this (log2 units); P then stays <= 2^8. */
constexpr float kWsTau = 8.f;
/* The ping-pong's turns around each softmax's exps (the D64 base tile, where
 * the exps take the special-function unit as long as the products take the
 * tensor cores), else around the product issue. */
template <int kD, int kTile>
constexpr bool kWsTurnExp = kD == 64 && kTile == WS_TILE_BASE;
/* Where the turns sit around the exps, the turn passes on the stale-max
 * row sums and P's packs, before the check's vote (ws_turn_pass_late). */
template <int kD, int kTile>
constexpr bool kWsLate = kD == 64 && kTile == WS_TILE_BASE;
/* The first key tile's softmax on its first ws_diag_keep keys only where the
 * rest is masked for all of a consumer's rows (D64, D128; at D256 the code
 * cost more than it saved), and the second tile's fresh max skipped by a
 * consumer whose rows all saw those keys. */
template <int kD>
constexpr bool kWsDiagHalf = kD <= 128;
/* The keys kept by that softmax in a kBN-key tile (whole 16-key P fragments). */
template <int kBN>
constexpr int ws_diag_keep = kBN / 2 / 16 * 16;
#endif

#endif
