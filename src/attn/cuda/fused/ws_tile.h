// Tile shapes of the warp-specialized flash kernel (flash_fwd_ws_kernel.cuh)
// and the one function that picks one per (head dim, causal).
// WS_TILE_BASE: the first shapes (128 x 128, 128 x 64 at D256, two consumer
// warpgroups), measured in bench/NOTES.md "ws: result".
// WS_TILE_FA3: FlashAttention-3's published choices: 192 query rows over
// three consumer warpgroups at D64, 128 x 176 K/V tiles at D128, 128 x 80 at
// D256. Which one each cell runs is decided by measurement (bench/NOTES.md,
// "ws tiles"); ws_tile_pick holds the outcome.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TILE_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TILE_H

enum { WS_TILE_BASE = 0, WS_TILE_FA3 = 1 };

// kBM query rows (64 per consumer warpgroup), kBN keys per K/V tile, kStages
// ring slots per K and V, kCons consumer warpgroups, the setmaxnreg split
// (producer, consumer: 128 x (kProdRegs + kCons x kConsRegs) <= 64 K).
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

// The shape each (D, causal) runs by default.
static inline int ws_tile_pick(int d, int causal) {
  (void)causal;
  switch (d) {
  // D64: with two consumers the softmax is not hidden (ws took 1.38-1.90x the
  // time of its softmax-free floor); a third consumer gives it more cover.
  case 64: return WS_TILE_FA3;
  // D128 non-causal: 176-key tiles fill shared memory (32 + 4 x 44 KB) and
  // pay the per-tile cost (barriers, max, rescale) 27 % less often per key.
  // Causal keeps 128 x 128: a wider tile wastes more masked keys on the
  // diagonal (FA3's choice too).
  case 128: return causal ? WS_TILE_BASE : WS_TILE_FA3;
  // D256: 80-key tiles, 64 + 4 x 40 KB of shared memory, fewer tiles per row.
  default: return WS_TILE_FA3;
  }
}

#endif
