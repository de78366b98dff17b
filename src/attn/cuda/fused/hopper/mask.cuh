// The mask of the warp-specialized flash kernel: keys past Sk and, when
// causal, past each row's limit hidden (wg_mask) in the key tiles that need
// it (the tail and the causal diagonal: the first ones the consumers walk),
// and the first key tile's votes on which half of it matters.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_MASK_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_MASK_CUH

#include <limits.h>

#include "attn/cuda/fused/flash_fwd_wgmma_kernel.cuh"

// Where a consumer thread's rows sit: its warpgroup's first row (mrow0), its
// warp's first row in the tile (wrow), its own first row (row_g: the tile's
// first row + wrow + g) and lane in the quad (t4); n key tiles, walked from
// the last (index i is key tile n - 1 - i).
struct ws_rows {
  int mrow0, wrow, row_g, t4, n;
};

// Masks s, the scores of key tile index i from key k0 of the tile on (a part
// of it, in the stale fallback), where the tile reaches past Sk or the
// diagonal.
template <int kBN, int kSR>
FUSED_DEV void ws_mask(float (&s)[kSR], const attn_fused_params &p, const ws_rows &rw, int i,
                       int k0 = 0) {
  const int n0 = (rw.n - 1 - i) * kBN;
  if (n0 + kBN > p.sk || (p.causal && n0 + kBN - 1 > rw.mrow0 + p.causal_off))
    wg_mask(s, p, rw.row_g, n0 + k0, rw.t4);
}

// The first key tile's halves (kKeep keys, then the rest), by votes so that
// ptxas knows they are uniform (else it adds a divergent copy of the
// shuffles): part, keys kKeep.. masked in every row of this consumer (its
// last row within Sq); low, keys 0..kKeep-1 visible in every row (its first
// row's limit).
template <int kBN, int kKeep>
FUSED_DEV void ws_diag_votes(const attn_fused_params &p, const ws_rows &rw, bool &part, bool &low) {
  const int last = min(rw.mrow0 + 63, p.sq - 1), n0 = (rw.n - 1) * kBN;
  const int lim0 = min(p.sk - 1, p.causal ? rw.mrow0 + p.causal_off : INT_MAX);
  part =
      __all_sync(0xffffffffu, min(p.sk - 1, p.causal ? last + p.causal_off : INT_MAX) < n0 + kKeep);
  low = __all_sync(0xffffffffu, lim0 >= n0 + kKeep - 1);
}

#endif
