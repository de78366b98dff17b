// The mask step of the mma.sync kernels, on S fragments (kMA m atoms x kNT
// 8-key tiles; a lane holds rows g, g + 8 and columns 2 t4, 2 t4 + 1 of each):
// flash hides the keys of a tail or diagonal tile; efficient scales the
// scores, adds an additive mask (log2 e bias) or applies a boolean one, and
// hides the same keys, reading the mask from its shared-memory tile or
// straight from global memory with any strides.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_MASK_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_MASK_CUH

#include <math.h>

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/fused_params.h"
#include "attn/cuda/fused/kit/key_mask.cuh"
#include "attn/cuda/fused/mma/tile_load.cuh"

// flash: in a tail or diagonal tile (one that hides some key from some row
// of the CTA), keys past Sk and past each row's limit -inf; the other tiles
// pass unchecked. row0: the warp's first query row; m0: the CTA's; n0: the
// tile's first key.
template <int kBN, int kMA, int kNT>
FUSED_DEV void fused_mask_keys(float (&s)[kMA][kNT][4], const attn_fused_params &p, int row0,
                               int m0, int n0, int g, int t4) {
  if (FUSED_TILE_FULL(p, n0, kBN, m0)) return;
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int lim = fused_row_last_key(p, row0 + mi * 16 + g + 8 * hh);
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (n0 + j * 8 + 2 * t4 + e > lim) s[mi][j][2 * hh + e] = -INFINITY;
    }
}

// efficient: s <- s c + log2(e) bias, hidden keys -inf, for one S tile.
// MT: the mask's storage type (unsigned char for a boolean mask). The mask
// comes from the shared-memory tile (kSmemMask: row r at mrow0 + r * pitch
// bytes, unit stride) or straight from global memory with any strides.
template <typename MT, bool kBool, bool kSmemMask, int kMA, int kNT>
FUSED_DEV void fused_bias_tile(float (&s)[kMA][kNT][4], const attn_fused_params &p,
                               const char *mrow0, int64_t pitch, int row0, int col0, int g,
                               int t4) {
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int row = row0 + mi * 16 + g + 8 * hh;
      const bool row_in = row < p.sq;
      const MT *mr = mrow0 ? (const MT *)(mrow0 + (mi * 16 + g + 8 * hh) * pitch) : nullptr;
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int cj = j * 8 + 2 * t4 + e, col = col0 + cj;
          float x = s[mi][j][2 * hh + e] * p.scale_log2;
          bool hide = FUSED_KEY_HIDDEN(p, row, col);
          if (mr && row_in && !hide) {
            MT m;
            if constexpr (kSmemMask) m = mr[cj];
            else m = mr[(int64_t)cj * p.m_sk];
            if constexpr (kBool) hide = m == 0;
            else x += fused_to_f32(m) * FUSED_LOG2E;
          }
          s[mi][j][2 * hh + e] = hide ? -INFINITY : x;
        }
    }
}

// efficient, additive mask tile in shared memory, a tile with no hidden key:
// s <- s c + log2(e) bias without per-score checks.
// A lane's two columns 2t4, 2t4+1 are adjacent: one ld.shared of 2 elements
// per score pair, all issued before any is used, with no branch between
// them. lane_addr: the
// shared address of (row g, column 2t4) of this warp's first row; rows past
// Sq were zero-filled by the copy (and are never written out).
template <typename MT, int kMA, int kNT, int kPitch>
FUSED_DEV void fused_bias_add_full(float (&s)[kMA][kNT][4], float c, uint32_t lane_addr) {
  constexpr bool k32 = sizeof(MT) == 4;
  uint32_t w[kMA][2][kNT][k32 ? 2 : 1];
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh)
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        const uint32_t a =
            lane_addr + (uint32_t)((mi * 16 + 8 * hh) * kPitch + j * 8 * (int)sizeof(MT));
        if constexpr (k32)
          asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n"
                       : "=r"(w[mi][hh][j][0]), "=r"(w[mi][hh][j][1])
                       : "r"(a));
        else asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w[mi][hh][j][0]) : "r"(a));
      }
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh)
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        float b0, b1;
        if constexpr (k32) {
          b0 = __uint_as_float(w[mi][hh][j][0]), b1 = __uint_as_float(w[mi][hh][j][1]);
        } else if constexpr (__is_same(MT, __nv_bfloat16)) {
          b0 = __uint_as_float(w[mi][hh][j][0] << 16);
          b1 = __uint_as_float(w[mi][hh][j][0] & 0xffff0000u);
        } else {
          __half2 h2;
          memcpy(&h2, &w[mi][hh][j][0], 4);
          const float2 f2 = __half22float2(h2);
          b0 = f2.x, b1 = f2.y;
        }
        s[mi][j][2 * hh] = fmaf(b0, FUSED_LOG2E, s[mi][j][2 * hh] * c);
        s[mi][j][2 * hh + 1] = fmaf(b1, FUSED_LOG2E, s[mi][j][2 * hh + 1] * c);
      }
}

// efficient: the bias step for the mask's kind, storage type and path.
// mtile: the warp's rows of the shared mask tile, or null; mglobal: the
// mask at the warp's first row and the tile's first key, or null without a
// mask. full: no key of this tile is hidden for any of its rows
// (FUSED_TILE_FULL, uniform per tile).
template <int kMA, int kNT, int kPitch>
FUSED_DEV void fused_bias(float (&s)[kMA][kNT][4], const attn_fused_params &p, const char *mtile,
                          const char *mglobal, int row0, int n0, int g, int t4, bool full) {
  if (!p.mask) {
    fused_bias_tile<unsigned char, true, true, kMA, kNT>(s, p, nullptr, 0, row0, n0, g, t4);
    return;
  }
  const bool sm = mtile != nullptr;
  if (sm && full && p.mask_kind == ATTN_FUSED_MASK_ADD) {
    const uint32_t la = fused_smem_addr(mtile) + (uint32_t)(g * kPitch);
    if (p.mask_dtype == ATTN_DTYPE_F32)
      fused_bias_add_full<float, kMA, kNT, kPitch>(s, p.scale_log2, la + 8 * t4);
    else if (p.mask_dtype == ATTN_DTYPE_BF16)
      fused_bias_add_full<__nv_bfloat16, kMA, kNT, kPitch>(s, p.scale_log2, la + 4 * t4);
    else fused_bias_add_full<__half, kMA, kNT, kPitch>(s, p.scale_log2, la + 4 * t4);
    return;
  }
  const char *m = sm ? mtile : mglobal;
  const int64_t pitch = sm ? kPitch : p.m_sq * (int64_t)attn_fused_mask_esize(&p);
#define FUSED_BIAS(MT, BOOL)                                                            \
  do {                                                                                  \
    if (sm) fused_bias_tile<MT, BOOL, true, kMA, kNT>(s, p, m, pitch, row0, n0, g, t4); \
    else fused_bias_tile<MT, BOOL, false, kMA, kNT>(s, p, m, pitch, row0, n0, g, t4);   \
  } while (0)
  if (p.mask_kind == ATTN_FUSED_MASK_BOOL) FUSED_BIAS(unsigned char, true);
  else if (p.mask_dtype == ATTN_DTYPE_F32) FUSED_BIAS(float, false);
  else if (p.mask_dtype == ATTN_DTYPE_BF16) FUSED_BIAS(__nv_bfloat16, false);
  else FUSED_BIAS(__half, false);
#undef FUSED_BIAS
}

// efficient: where the mask of (b, h) is read from. bh: its element (row 0,
// key 0), or null without a mask; tile: rows copied into the shared tile
// (16-byte chunks, mask_vec), else read from global memory with any strides.
struct fused_mask_src {
  const char *bh;
  int esize_log2;
  bool tile;
};

template <bool kMask>
FUSED_DEV fused_mask_src fused_mask_src_of(const attn_fused_params &p, int b, int h) {
  fused_mask_src m{nullptr, 0, false};
  if (kMask && p.mask) {
    m.esize_log2 = p.mask_kind == ATTN_FUSED_MASK_BOOL ? 0 : p.mask_dtype == ATTN_DTYPE_F32 ? 2 : 1;
    m.bh = (const char *)p.mask + ((b * p.m_sb + h * p.m_sh) << m.esize_log2);
  }
  m.tile = kMask && p.mask && p.mask_vec;
  return m;
}

// efficient: cp.async of the mask tile of the CTA's rows m0.. and keys n0..
template <int kBM, int kBN, int kThreads>
FUSED_DEV void fused_mask_tile_load(const fused_mask_src &m, const attn_fused_params &p,
                                    char *s_mask, int m0, int n0, int rows_q, int tid) {
  fused_load_mask<kBM, kBN, kThreads>(
      fused_smem_addr(s_mask), m.bh + (((int64_t)m0 * p.m_sq + n0) << m.esize_log2),
      p.m_sq << m.esize_log2, rows_q, (p.sk - n0) << m.esize_log2, m.esize_log2, tid);
}

#endif
