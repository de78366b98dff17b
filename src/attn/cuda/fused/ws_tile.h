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
    case 64:
      return causal && short_seq ? WS_TILE_BASE : WS_TILE_FA3;
    case 128:
      return short_seq || (causal && sq < 16384) ? WS_TILE_BASE : WS_TILE_FA3;
    default:
      return causal && short_seq ? WS_TILE_BASE : WS_TILE_FA3;
  }
}

#endif
