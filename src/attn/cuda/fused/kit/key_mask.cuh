// Which keys a query row may see, as every fused kernel applies it: keys
// past Sk are padding, and under a causal rule key j is visible to query i
// only when j <= i + causal_off (top-left 0, bottom-right Sk - Sq).
// The two tests are macros, not functions: behind a bool-returning inline
// function nvcc turns the short-circuit into a materialized flag and a worse
// branch (the D128 flash kernel spilled; efficient took 4 more registers).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_KIT_KEY_MASK_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_KIT_KEY_MASK_CUH

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/fused_params.h"

// Key col is hidden from query row (p: the attn_fused_params).
#define FUSED_KEY_HIDDEN(p, row, col) \
  ((col) >= (p).sk || ((p).causal && (col) > (row) + (p).causal_off))

// The key tile [n0, n0 + bn) hides no key from any of the rows from m0 on:
// it lies inside Sk and, under a causal rule, wholly left of the diagonal of
// row m0. Only the other tiles (the sequence tail, the diagonal) need a
// per-key check.
#define FUSED_TILE_FULL(p, n0, bn, m0) \
  ((n0) + (bn) <= (p).sk && !((p).causal && (n0) + (bn)-1 > (m0) + (p).causal_off))

// The last key row may see (keys past it are hidden).
FUSED_DEV int fused_row_last_key(const attn_fused_params &p, int row) {
  return p.causal ? min(p.sk - 1, row + p.causal_off) : p.sk - 1;
}

// The key tiles of kBN a block of kBM query rows from m0 may see.
template <int kBM, int kBN>
FUSED_DEV int fused_key_tiles(const attn_fused_params &p, int m0) {
  int n_end = p.sk;
  if (p.causal) n_end = min(n_end, m0 + kBM + p.causal_off);
  return n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
}

#endif
