// What one CTA of the mma.sync kernels owns (the Hopper kernels reuse it):
// its query block, head and batch, its key tiles, and the layout of its
// shared memory.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_CTA_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_CTA_CUH

#include <math.h>

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/fused_params.h"
#include "attn/cuda/fused/kit/key_mask.cuh"
#include "attn/cuda/fused/mma/tile_load.cuh"

// Where a CTA of the fused kernels works: query block m0 of head h, batch b
// (key/value head hk), rows_q of its kBM rows inside Sq, and the n_blocks key
// tiles of kBN it may see (causal: j <= i + off for i < m0 + kBM). blockIdx.x
// is reversed: under a causal rule the CTAs with the most tiles start first.
template <typename T>
struct fused_cta {
  int b, h, hk, m0, rows_q, n_blocks;
  const T *qg, *kg, *vg;  // Q at row m0; K and V at key 0
};

template <typename T, int kBM, int kBN>
FUSED_DEV fused_cta<T> fused_cta_of(const attn_fused_params &p) {
  fused_cta<T> c;
  const int m_block = gridDim.x - 1 - blockIdx.x;
  c.h = blockIdx.y, c.b = blockIdx.z, c.hk = c.h / (p.hq / p.hkv);
  c.m0 = m_block * kBM, c.rows_q = min(kBM, p.sq - c.m0);
  c.qg = (const T *)p.q + c.b * p.q_sb + c.h * p.q_sh + (int64_t)c.m0 * p.q_ss;
  c.kg = (const T *)p.k + c.b * p.k_sb + c.hk * p.k_sh;
  c.vg = (const T *)p.v + c.b * p.v_sb + c.hk * p.v_sh;
  c.n_blocks = fused_key_tiles<kBM, kBN>(p, c.m0);
  return c;
}

// A CTA whose rows see no key at all: out 0 and lse -inf for its rows (never
// the NaN of 0/0).
template <typename T, int kThreads>
FUSED_DEV void fused_store_hidden_rows(const attn_fused_params &p, int b, int h, int m0, int rows_q,
                                       int tid) {
  T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)m0 * p.o_ss;
  for (int i = tid; i < rows_q * p.d; i += kThreads)
    og[(int64_t)(i / p.d) * p.o_ss + i % p.d] = fused_from_f32<T>(0.f);
  if (p.lse)
    for (int i = tid; i < rows_q; i += kThreads)
      p.lse[((int64_t)b * p.hq + h) * p.sq + m0 + i] = -INFINITY;
}

// Kernel flags (the last template argument).
enum {
  FUSED_MASK = 1,        // efficient: mask tensor, explicit scale, D padded
  FUSED_STATS_SMEM = 2,  // row max / sum in per-thread shared-memory slots
};

// Shared memory of one CTA: 128 bytes of alignment slack, Q, K, V tiles, then
// (FUSED_STATS_SMEM) 4 floats per thread and m atom, then (FUSED_MASK) one
// [kBM x kBN] mask tile (fused_mask_pitch).
template <int kD, int kBM, int kBN, int kWarpM, int kFlags>
struct fused_smem {
  static constexpr int kThreads = kBM / kWarpM * 32, kMA = kWarpM / 16;
  static constexpr int kTiles = (kBM + 2 * kBN) * kD * 2;
  static constexpr int kStats = (kFlags & FUSED_STATS_SMEM) ? kThreads * kMA * 4 * 4 : 0;
  static constexpr int kMaskPitch = fused_mask_pitch<kBN>;
  static constexpr int kMask = (kFlags & FUSED_MASK) ? kBM * kMaskPitch : 0;
  static constexpr int kBytes = 128 + kTiles + kStats + kMask;
};

// The CTA's tiles in shared memory, carved from the dynamic buffer: the
// swizzle's XOR addressing needs them 128-byte aligned (fused_smem keeps
// 128 bytes of slack for this).
template <typename T, int kD, int kBM, int kBN, int kWarpM, int kFlags>
struct fused_tiles {
  using SM = fused_smem<kD, kBM, kBN, kWarpM, kFlags>;
  T *sQ;                // Q, then each warp's O rows before the store
  uint32_t aQ, aK, aV;  // shared addresses of Q, K, V
  float *sStats;        // FUSED_STATS_SMEM: slot (which, mi, hh) x tid
  char *sMask;          // FUSED_MASK: the mask tile

  FUSED_DEV fused_tiles carve(char *smem) {
    char *base = smem + ((128u - (fused_smem_addr(smem) & 127u)) & 127u);
    fused_tiles t;
    t.sQ = (T *)base;
    t.aQ = fused_smem_addr(t.sQ);
    t.aK = t.aQ + kBM * kD * 2, t.aV = t.aK + kBN * kD * 2;
    t.sStats = (float *)(base + SM::kTiles);
    t.sMask = base + SM::kTiles + SM::kStats;
    return t;
  }
};

#endif
