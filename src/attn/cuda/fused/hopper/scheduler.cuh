// The tile scheduler on the device: the tile each CTA runs in round r, by
// the host-made schedule p.ws (ws_sched.h, the same functions the host test
// runs).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_SCHEDULER_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_SCHEDULER_CUH

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/hopper/ws_sched.h"

// A tile of the persistent schedule: m block, head, batch, and how many key
// tiles its rows may see (0: none, bottom-right causal with Sq > Sk).
struct ws_tile {
  int b, h, m0, n_blocks;
};

// The tile of m block mb of head bh (b * hq + h).
template <int kBM, int kBN>
FUSED_DEV void ws_tile_fill(const attn_fused_params &p, int bh, int mb, ws_tile &w) {
  w.b = ws_div(p.ws.div[WS_DIV_HQ], bh), w.h = bh - w.b * p.hq, w.m0 = mb * kBM;
  int n_end = p.sk;
  if (p.causal) n_end = min(n_end, w.m0 + min(kBM, p.sq - w.m0) + p.causal_off);
  w.n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
}

// The tile this CTA runs in round r; false: none this round.
template <int kBM, int kBN>
FUSED_DEV bool ws_tile_at(const attn_fused_params &p, int r, ws_tile &w) {
  int bh, mb;
  if (!ws_tile_order(&p.ws, p.causal, r, (int)gridDim.x, (int)blockIdx.x, &bh, &mb)) return false;
  ws_tile_fill<kBM, kBN>(p, bh, mb, w);
  return true;
}

// The tile of round r again, for the epilogue: computed anew (r through an
// empty asm, so that the compiler cannot reuse the first answer) rather than
// held in registers across the key loop, which has none to spare in FA3's
// D64 and D256 tiles.
template <int kBM, int kBN>
FUSED_DEV void ws_tile_again(const attn_fused_params &p, int r, ws_tile &w) {
  asm volatile("" : "+r"(r));
  ws_tile_at<kBM, kBN>(p, r, w);
}

#endif
