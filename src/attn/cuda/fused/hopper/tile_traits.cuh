// Tile traits of the warp-specialized flash kernel: the shape of each
// (D, tile) pair, its shared-memory layout and the forms the kernel runs
// there (decided by measurement: docs/design).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_TILE_TRAITS_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_TILE_TRAITS_CUH

#include <stdint.h>

#include "attn/cuda/fused/ws_tile.h"

// kBM query rows (64 per consumer warpgroup), kBN keys per K/V tile, kStages
// ring slots per K and V, kCons consumer warpgroups, the setmaxnreg split
// (producer, consumer: 128 x (kProdRegs + kCons x kConsRegs) <= 64 K).
template <int kD, int kTile>
struct ws_shape {
  static constexpr bool kFa3 = kTile == WS_TILE_FA3;
  static constexpr int kBM = kFa3 && kD == 64 ? 192 : 128;
  static constexpr int kBN = kFa3 ? (kD == 64    ? 128
                                     : kD == 128 ? 176
                                                 : 80)
                                  : (kD == 256 ? 64 : 128);
  static constexpr int kStages = kD == 64 ? 4 : 2;
  static constexpr int kCons = kBM / 64;
  static constexpr int kProdRegs = kCons == 3 ? 32 : 24;
  static constexpr int kConsRegs = kCons == 3 ? 160 : 240;
};

// The softmax: the stale-max form at D64 and D128, the online one with a
// lazy max at D256 (where the stale form's FA3 instance spilled).
template <int kD>
constexpr bool kWsStale = kD <= 128;
// The lazy max: a row's running max moves only when it rose by more than
// this (log2 units); P then stays <= 2^8.
constexpr float kWsTau = 8.f;
// The ping-pong's turns around each softmax's exps (the D64 base tile, where
// the exps take the special-function unit as long as the products take the
// tensor cores), else around the product issue.
template <int kD, int kTile>
constexpr bool kWsTurnExp = kD == 64 && kTile == WS_TILE_BASE;
// Where the turns sit around the exps, the turn passes on the stale-max
// row sums and P's packs, before the check's vote (ws_turn_pass_late).
template <int kD, int kTile>
constexpr bool kWsLate = kD == 64 && kTile == WS_TILE_BASE;
// The first key tile's softmax on its first ws_diag_keep keys only where the
// rest is masked for all of a consumer's rows (D64, D128; at D256 the code
// cost more than it saved), and the second tile's fresh max skipped by a
// consumer whose rows all saw those keys.
template <int kD>
constexpr bool kWsDiagHalf = kD <= 128;
// The keys kept by that softmax in a kBN-key tile (whole 16-key P fragments).
template <int kBN>
constexpr int ws_diag_keep = kBN / 2 / 16 * 16;

// The shape plus the shared-memory layout: kQBufs Q buffers, the K and V
// rings, then the barriers. Two Q buffers where they fit (the next tile's Q
// loads under this one's loop and epilogue): D64 and D128's 128 x 128; one at
// D256 and D128 x 176. kThreads: the producer warpgroup and the consumers.
template <int kD, int kTile>
struct ws_cfg : ws_shape<kD, kTile> {
  using S = ws_shape<kD, kTile>;
  static constexpr int kBM = S::kBM, kBN = S::kBN, kStages = S::kStages, kCons = S::kCons;
  static constexpr int kThreads = 128 * (1 + kCons);
  static constexpr uint32_t kQ = kBM * kD * 2, kKV = kBN * kD * 2;
  static constexpr int kBarBytes =
      32 + 32 * kStages;  // Q full/empty (two slots), per stage K/V full/empty
  static constexpr int kQBufs = 1024 + 2 * kQ + 2 * kStages * kKV + kBarBytes <= 227 * 1024 ? 2 : 1;
  static constexpr uint32_t kBars = kQBufs * kQ + 2 * kStages * kKV;  // barrier block offset
  static constexpr int kSmem = 1024 + kBars + kBarBytes;
  static constexpr int kSR = kBN / 2, kOR = kD / 2;  // S and O registers per thread
  static_assert(kQBufs <= 2, "ws_qbuf takes one or two Q buffers");
};

#endif
