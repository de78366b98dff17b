// The fused forward on mma.sync (FlashAttention-2 scheme, written from the
// published algorithm and the PTX ISA; no code copied). Two kernels come out
// of one body: flash_fwd_kernel (no mask tensor, scores kept raw and scaled
// inside the exponent) and efficient_fwd_kernel (adds a boolean/additive mask
// read with any strides, scales explicitly, head dims padded up to kD).
// On compute capability 9.0 flash runs flash_fwd_wgmma_kernel.cuh instead
// (same algorithm on wgmma) for D 64/128/256; efficient always runs this one.
//
// Work split. Grid (ceil(Sq / kBM), Hq, B); a CTA owns kBM query rows of one
// (b, h) and walks its key/value tiles of kBN rows from the last to the
// first, so the tiles that need a mask (the sequence tail, the causal
// diagonal) come first and the rest run unmasked. blockIdx.x is reversed:
// under a causal rule the CTAs with the most tiles start first.
// Each of the kBM / kWarpM warps owns kWarpM query rows (one or two 16-row
// mma atoms) from start to end: the softmax statistics of a row live in the
// four lanes of one quad and never cross warps (no shared-memory exchange).
//
// Per key tile (single buffers for K and V, as FA2):
//   wait K[n] + barrier | issue V[n] (+ mask tile) | S = Q K^T (ldmatrix Q, K)
//   wait V[n] + barrier | issue K[n-1] | mask, online softmax in registers
//   O = O * alpha + P V (P never leaves registers: two m16n8 fp32 C tiles
//   rounded to 16 bits are one m16k16 A fragment; V through ldmatrix.trans)
// What each warp does: all of the above for its own kWarpM query rows; the
// copies are shared (every thread issues its part of each tile's cp.async).
// Shared memory: Q [kBM x kD], K and V [kBN x kD], 16-bit, XOR-swizzled
// (fused_swz): no bank conflicts on cp.async writes or ldmatrix reads. At
// the end each warp stages its O rows in its own part of the Q tile and
// writes them with 16-byte stores.
//
// Online softmax per row (exp2 domain, c = scale * log2 e):
//   m' = max(m, max_j s_j)        base = m' == -inf ? 0 : m' c
//   alpha = 2^(m c - base)        p_j = 2^(s_j c - base)   (one FFMA + MUFU.EX2)
//   l = alpha l + sum_j p_j       O = alpha O + P V
// then out = O / l and lse = (m c + log2 l) ln 2. A row that sees no key
// keeps m = -inf and l = 0: out 0, lse -inf (never -inf - -inf = NaN).
// efficient: s_j <- s_j c + bias_j log2 e (or -inf) first, then c = 1.
//
// Tile sizes per head dim: flash_cfg below. Measured on the H200 (v1, bf16,
// sweep grid of compare --sweep, bench/NOTES.md run 1): flash 236-340 TFLOP/s,
// 0.89-1.10x PyTorch's FA2 (D128 below, D64/D256 above); the blog shape
// 8x16x1024x64 causal 87.6 us (FA2 96.2 us); efficient 158-289 TFLOP/s,
// 1.52-1.84x PyTorch's efficient, but 47-121 TFLOP/s with an additive mask
// (0.53-0.93x). Version 2, the default (same grid, one run on the H200,
// 2026-11-29): flash 1.02-1.10x FA2 on every cell; efficient 1.60-1.80x; with
// an additive mask 1.82-2.08x after v2.1's full-tile bias add (bench/NOTES.md).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FLASH_FWD_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FLASH_FWD_KERNEL_CUH

#include <math.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/fused_launch.h"
#include "attn/cuda/fused/fused_mma.cuh"

// Tile shape by head dim: kBM query rows x kBN keys per step, kWarpM rows per
// warp, kMinB CTAs per SM for __launch_bounds__ (255 / 170 registers for 2 / 3
// CTAs of 128 threads), kFlags (FUSED_STATS_SMEM). Registers per thread are
// dominated by O (kWarpM * kD / 32 fp32) and S (kWarpM * kBN / 32 fp32); every
// shape below compiles with zero spills (ptxas -v, sm_80 and sm_90). Measured
// speeds: bench/NOTES.md.
//
// Tiles (version 2 of bench/NOTES.md; spill-free, run on the H200: harness, memcheck and
// racecheck clean, 1.02-1.10x FA2):
//  D96, D128: 128x64, 4 warps x 32 rows (FA2's tile), the row statistics in
//        shared memory, which is what makes it spill-free at D128.
//  efficient: the mask tile copied into shared memory (fused_params_fill).
// efficient (both versions) adds the mask handling (about 40-60 more
// registers): 16 rows per warp, and 32 keys per step at D256.
template <int kD, bool kMask>
struct flash_cfg;
#define FUSED_CFG(D, MASK, BM, BN, WM, MINB, FLAGS)                                   \
  template <>                                                                       \
  struct flash_cfg<D, MASK> {                                                       \
    static constexpr int kBM = BM, kBN = BN, kWarpM = WM, kMinB = MINB, kFlags = FLAGS; \
  }
FUSED_CFG(64, false, 128, 64, 32, 2, 0);
FUSED_CFG(96, false, 128, 64, 32, 2, 2 /* FUSED_STATS_SMEM */);
FUSED_CFG(128, false, 128, 64, 32, 2, 2 /* FUSED_STATS_SMEM */);
FUSED_CFG(256, false, 64, 64, 16, 2, 0);
FUSED_CFG(64, true, 64, 64, 16, 2, 0);
FUSED_CFG(96, true, 64, 64, 16, 2, 0);
FUSED_CFG(128, true, 64, 64, 16, 2, 0);
FUSED_CFG(256, true, 64, 32, 16, 2, 0);
#undef FUSED_CFG

// Swizzled addressing in bytes. A tile is [kRows x kD] 16-bit elements cut
// into column blocks of W = 64 elements (W = 32 when kD % 64 != 0), each
// block [kRows x W]; the 16-byte chunks of a row are XOR-permuted by row
// (fused_swz). Rows are W * 2 bytes and the tiles 128-byte aligned, so the
// swizzled chunk number is bits 4..6 (W = 64) or 4..5 (W = 32) of the byte
// address: moving by an even chunk step c0 is an XOR of (c0 << 4), moving by
// 16 rows (or by whole rows when the swizzle bits do not change) an add.
template <int kD>
struct fused_w {
  static constexpr int W = kD % 64 == 0 ? 64 : 32; // elements per block row
  static constexpr int CW = W / 8;                  // chunks per block row
};

template <int kD>
FUSED_DEV int fused_swz_bits(int row) {
  return fused_w<kD>::W == 64 ? (row & 7) : ((row >> 1) & 3);
}

// Byte address in a tile at s of (row, chunk_bit + an even chunk added later).
template <int kD>
FUSED_DEV uint32_t fused_lane(uint32_t s, int row, int chunk_bit) {
  return s + (uint32_t)(row * fused_w<kD>::W * 2) +
         (uint32_t)((chunk_bit ^ fused_swz_bits<kD>(row)) << 4);
}

// The lane's address moved by row_step rows (a multiple of 16) and an even
// chunk c0 (compile-time in the unrolled loops: one XOR and an immediate).
template <int kRows, int kD>
FUSED_DEV uint32_t fused_lane_off(uint32_t base, int row_step, int c0) {
  constexpr int W = fused_w<kD>::W, CW = fused_w<kD>::CW;
  return (base ^ (uint32_t)((c0 % CW) << 4)) +
         (uint32_t)((c0 / CW) * kRows * W * 2 + row_step * W * 2);
}

// cp.async of a [kRows x kD] tile into s: row r < rows and chunk c < chunks
// come from g + r * row_stride + 8 c, the rest is zero-filled. Threads walk
// the tile block by block: thread t copies chunk t % CW of rows t / CW + R i
// (R = kThreads / CW rows per pass, a multiple of 8, so the swizzle bits of a
// thread's rows never change and its shared address only moves by
// immediates). The global address walks by one 64-bit add per pass, so no
// per-pass offsets stay live in registers across the main loop.
template <typename T, int kRows, int kD, int kThreads>
FUSED_DEV void fused_load_tile(uint32_t s, const T *g, int64_t row_stride, int rows, int chunks,
                               int tid) {
  constexpr int W = fused_w<kD>::W, CW = fused_w<kD>::CW, R = kThreads / CW;
  static_assert(kThreads % CW == 0 && R % 8 == 0 && kRows % R == 0, "tile split over threads");
  const int row0 = tid / CW, cin = tid % CW;
  const uint32_t s0 = s + (uint32_t)(row0 * W * 2) + (uint32_t)((cin ^ fused_swz_bits<kD>(row0)) << 4);
  const int rows_left = rows - row0;
  const int64_t step = (int64_t)R * row_stride;
#pragma unroll
  for (int blk = 0; blk < kD / W; ++blk) {
    const T *src = g + row0 * row_stride + blk * W + cin * 8;
    const bool col_ok = blk * CW + cin < chunks;
#pragma unroll
    for (int rr = 0; rr < kRows; rr += R) {
      const bool ok = col_ok && rr < rows_left;
      fused_cp_async16(s0 + (uint32_t)((blk * kRows + rr) * W * 2), ok ? src : g, ok ? 16 : 0);
      src += step;
    }
  }
}

// fused_load_tile for a tile known to be whole (kRows rows, all kD columns:
// flash's key tiles after the first one it loads, the last in key order):
// no bounds checks, so no select and no row count stay live in the loop.
template <typename T, int kRows, int kD, int kThreads>
FUSED_DEV void fused_load_tile_full(uint32_t s, const T *g, int64_t row_stride, int tid) {
  constexpr int W = fused_w<kD>::W, CW = fused_w<kD>::CW, R = kThreads / CW;
  static_assert(kThreads % CW == 0 && R % 8 == 0 && kRows % R == 0, "tile split over threads");
  const int row0 = tid / CW, cin = tid % CW;
  const uint32_t s0 = s + (uint32_t)(row0 * W * 2) + (uint32_t)((cin ^ fused_swz_bits<kD>(row0)) << 4);
  const int64_t step = (int64_t)R * row_stride;
#pragma unroll
  for (int blk = 0; blk < kD / W; ++blk) {
    const T *src = g + row0 * row_stride + blk * W + cin * 8;
#pragma unroll
    for (int rr = 0; rr < kRows; rr += R) {
      fused_cp_async16(s0 + (uint32_t)((blk * kRows + rr) * W * 2), src, 16);
      src += step;
    }
  }
}

// Where a CTA of the fused kernels works: query block m0 of head h, batch b
// (key/value head hk), rows_q of its kBM rows inside Sq, and the n_blocks key
// tiles of kBN it may see (causal: j <= i + off for i < m0 + kBM). blockIdx.x
// is reversed: under a causal rule the CTAs with the most tiles start first.
template <typename T>
struct fused_cta {
  int b, h, hk, m0, rows_q, n_blocks;
  const T *qg, *kg, *vg; // Q at row m0; K and V at key 0
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
  int n_end = p.sk;
  if (p.causal) n_end = min(n_end, c.m0 + kBM + p.causal_off);
  c.n_blocks = n_end > 0 ? (n_end + kBN - 1) / kBN : 0;
  return c;
}

// A CTA whose rows see no key at all: out 0 and lse -inf for its rows (never
// the NaN of 0/0).
template <typename T, int kThreads>
FUSED_DEV void fused_store_hidden_rows(const attn_fused_params &p, int b, int h, int m0,
                                       int rows_q, int tid) {
  T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)m0 * p.o_ss;
  for (int i = tid; i < rows_q * p.d; i += kThreads)
    og[(int64_t)(i / p.d) * p.o_ss + i % p.d] = fused_from_f32<T>(0.f);
  if (p.lse)
    for (int i = tid; i < rows_q; i += kThreads)
      p.lse[((int64_t)b * p.hq + h) * p.sq + m0 + i] = -INFINITY;
}

// Kernel flags (the last template argument).
enum {
  FUSED_MASK = 1,       // efficient: mask tensor, explicit scale, D padded
  FUSED_STATS_SMEM = 2, // row max / sum in per-thread shared-memory slots
  FUSED_DBUF = 4,       // flash only: two K/V buffer pairs, tile n-1 copied during tile n,
                        // one barrier per key tile (bench-only, bench/NOTES.md "D128 parity")
};

// Shared memory of one CTA: 128 bytes of alignment slack, Q, K, V tiles, then
// (FUSED_STATS_SMEM) 4 floats per thread and m atom, then (FUSED_MASK) one
// [kBM x kBN] mask tile of up to 4-byte elements, rows padded by 16 bytes so
// that the 8 rows a quad-group reads fall in different banks.
template <int kD, int kBM, int kBN, int kWarpM, int kFlags>
struct fused_smem {
  static constexpr int kThreads = kBM / kWarpM * 32, kMA = kWarpM / 16;
  static constexpr int kTiles = (kBM + 2 * kBN * ((kFlags & FUSED_DBUF) ? 2 : 1)) * kD * 2;
  static constexpr int kStats = (kFlags & FUSED_STATS_SMEM) ? kThreads * kMA * 4 * 4 : 0;
  static constexpr int kMaskPitch = kBN * 4 + 16;
  static constexpr int kMask = (kFlags & FUSED_MASK) ? kBM * kMaskPitch : 0;
  static constexpr int kBytes = 128 + kTiles + kStats + kMask;
};

// efficient, vector masks: cp.async of the mask tile (rows m0.., keys n0..) as
// 16-byte chunks; bytes past Sk and rows past Sq are zero-filled.
template <int kBM, int kBN, int kThreads>
FUSED_DEV void fused_load_mask(uint32_t s, const char *g, int64_t row_bytes, int rows,
                               int bytes_left, int esize_log2, int tid) {
  constexpr int kPitch = kBN * 4 + 16;
  constexpr int kL = kBN == 32 ? 1 : kBN == 64 ? 2 : 3;
  static_assert(kBN == 16 << kL, "mask tile width");
  const int cpr_log2 = esize_log2 + kL; // chunks per row: kBN * esize / 16
  const int total = kBM << cpr_log2;
  for (int i = tid; i < total; i += kThreads) {
    const int r = i >> cpr_log2, c = i & ((1 << cpr_log2) - 1);
    const int n = r < rows ? min(16, max(0, bytes_left - c * 16)) : 0;
    fused_cp_async16(s + (uint32_t)(r * kPitch + c * 16), n ? g + r * row_bytes + c * 16 : g, n);
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
          bool hide = col >= p.sk || (p.causal && col > row + p.causal_off);
          if (mr && row_in && !hide) {
            MT m;
            if constexpr (kSmemMask)
              m = mr[cj];
            else
              m = mr[(int64_t)cj * p.m_sk];
            if constexpr (kBool)
              hide = m == 0;
            else
              x += fused_to_f32(m) * FUSED_LOG2E;
          }
          s[mi][j][2 * hh + e] = hide ? -INFINITY : x;
        }
    }
}

// efficient, additive mask tile in shared memory, a tile with no hidden key
// (v2.1, bench/NOTES.md): s <- s c + log2(e) bias without per-score checks.
// A lane's two columns 2t4, 2t4+1 are adjacent: one ld.shared of 2 elements
// per score pair, all issued before any is used (the old per-score path read
// them one at a time through generic loads behind branches). lane_addr: the
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
        const uint32_t a = lane_addr + (uint32_t)((mi * 16 + 8 * hh) * kPitch + j * 8 * (int)sizeof(MT));
        if constexpr (k32)
          asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n"
                       : "=r"(w[mi][hh][j][0]), "=r"(w[mi][hh][j][1])
                       : "r"(a));
        else
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w[mi][hh][j][0]) : "r"(a));
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
// full: no key of this tile is hidden for any of its rows (uniform per tile).
template <int kMA, int kNT, int kPitch>
FUSED_DEV void fused_bias(float (&s)[kMA][kNT][4], const attn_fused_params &p,
                          const char *mtile, int64_t mpitch, const char *mglobal, int row0,
                          int n0, int g, int t4, bool full) {
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
    else
      fused_bias_add_full<__half, kMA, kNT, kPitch>(s, p.scale_log2, la + 4 * t4);
    return;
  }
  const char *m = sm ? mtile : mglobal;
  const int64_t pitch = sm ? mpitch : p.m_sq * (int64_t)attn_fused_mask_esize(&p);
#define FUSED_BIAS(MT, BOOL)                                                              \
  do {                                                                                    \
    if (sm)                                                                               \
      fused_bias_tile<MT, BOOL, true, kMA, kNT>(s, p, m, pitch, row0, n0, g, t4);         \
    else                                                                                  \
      fused_bias_tile<MT, BOOL, false, kMA, kNT>(s, p, m, pitch, row0, n0, g, t4);        \
  } while (0)
  if (p.mask_kind == ATTN_FUSED_MASK_BOOL)
    FUSED_BIAS(unsigned char, true);
  else if (p.mask_dtype == ATTN_DTYPE_F32)
    FUSED_BIAS(float, false);
  else if (p.mask_dtype == ATTN_DTYPE_BF16)
    FUSED_BIAS(__nv_bfloat16, false);
  else
    FUSED_BIAS(__half, false);
#undef FUSED_BIAS
}

template <typename T, int kD, int kBM, int kBN, int kWarpM, int kFlags>
FUSED_DEV void fused_fwd_body(const attn_fused_params &p, char *smem) {
  using SM = fused_smem<kD, kBM, kBN, kWarpM, kFlags>;
  constexpr bool kMask = (kFlags & FUSED_MASK) != 0, kStats = (kFlags & FUSED_STATS_SMEM) != 0;
  constexpr bool kDbuf = (kFlags & FUSED_DBUF) != 0;
  static_assert(!(kDbuf && kMask), "double-buffered K/V: flash only");
  // kDbuf: byte distance between the two K/V buffer pairs [K0 V0 | K1 V1].
  constexpr uint32_t kKV = 2u * kBN * kD * 2;
  constexpr int kThreads = SM::kThreads, kMA = SM::kMA;
  constexpr int kNT = kBN / 8, kDT = kD / 8;
  static_assert(kWarpM == 16 || kWarpM == 32, "a warp owns one or two 16-row mma atoms");
  static_assert(kBN % 16 == 0 && kD % 32 == 0 && (kBN == 32 || kBN >= 64), "tile sizes");

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const auto [b, h, hk, m0, rows_q, n_blocks, qg, kg, vg] = fused_cta_of<T, kBM, kBN>(p);
  const int d_chunks = kMask ? p.d / 8 : kD / 8; // flash: D == kD
  if (n_blocks == 0) { // every row hidden
    fused_store_hidden_rows<T, kThreads>(p, b, h, m0, rows_q, tid);
    return;
  }

  // The swizzle's XOR addressing needs 128-byte aligned tiles (SM has 128
  // bytes of slack for this).
  char *base = smem + ((128u - (fused_smem_addr(smem) & 127u)) & 127u);
  T *sQ = (T *)base;
  const uint32_t aQ = fused_smem_addr(sQ);
  const uint32_t aK = aQ + kBM * kD * 2, aV = aK + kBN * kD * 2;
  float *sStats = (float *)(base + SM::kTiles); // kStats: slot (which, mi, hh) x tid
  char *sMask = base + SM::kTiles + SM::kStats;   // kMask: the mask tile

  int nb = n_blocks - 1;
  const uint32_t o1 = kDbuf ? (uint32_t)(nb & 1) * kKV : 0u; // pair of the first tile
  fused_load_tile<T, kBM, kD, kThreads>(aQ, qg, p.q_ss, rows_q, d_chunks, tid);
  fused_load_tile<T, kBN, kD, kThreads>(aK + o1, kg + (int64_t)nb * kBN * p.k_ss, p.k_ss,
                                        p.sk - nb * kBN, d_chunks, tid);
  if constexpr (kDbuf)
    fused_load_tile<T, kBN, kD, kThreads>(aV + o1, vg + (int64_t)nb * kBN * p.v_ss, p.v_ss,
                                          p.sk - nb * kBN, d_chunks, tid);
  fused_cp_async_commit();

  // ldmatrix lanes: Q (A): rows r0 + lane%16, chunk bit lane/16.
  // K (B, two n tiles): keys n0 + 8 (lane/16) + lane%8, chunk bit (lane/8)%2.
  // V (B via .trans, two d tiles): keys k0 + 8 ((lane/8)%2) + lane%8, chunk bit lane/16.
  const uint32_t lq = fused_lane<kD>(aQ, warp * kWarpM + (lane & 15), lane >> 4);
  // (kDbuf: tile nb lives in pair nb & 1, at lk / lv + (nb & 1) kKV.)
  const uint32_t lk = fused_lane<kD>(aK, (lane >> 4) * 8 + (lane & 7), (lane >> 3) & 1);
  const uint32_t lv = fused_lane<kD>(aV, ((lane >> 3) & 1) * 8 + (lane & 7), lane >> 4);

  // Row statistics m (running max) and l (running sum) of the rows g and g+8
  // of each m atom: registers, or (kStats) this thread's own shared-memory
  // slots, touched twice per tile, which leaves the registers to O, S and the
  // fragments (no spills at 32 rows per warp and D 128).
  float acc_o[kMA][kDT][4];
  float row_m[kMA][2], row_l[kMA][2];
#define FUSED_M(mi, hh) (kStats ? sStats[((0 * kMA + (mi)) * 2 + (hh)) * kThreads + tid] : row_m[mi][hh])
#define FUSED_L(mi, hh) (kStats ? sStats[((1 * kMA + (mi)) * 2 + (hh)) * kThreads + tid] : row_l[mi][hh])
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][dt][e] = 0.f;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) FUSED_M(mi, hh) = -INFINITY, FUSED_L(mi, hh) = 0.f;
  }
  // flash keeps raw scores and folds the scale into the exponent's FFMA;
  // efficient has already scaled them (bias added), so its factor is 1.
  const float c = kMask ? 1.f : p.scale_log2;
  const int row0 = m0 + warp * kWarpM; // first query row of this warp
  // efficient: the mask of (b, h), at row m0 (tile path) or row0 (global path).
  const char *mask_bh = nullptr;
  int esize_log2 = 0;
  if (kMask && p.mask) {
    esize_log2 = p.mask_kind == ATTN_FUSED_MASK_BOOL ? 0 : p.mask_dtype == ATTN_DTYPE_F32 ? 2 : 1;
    mask_bh = (const char *)p.mask + ((b * p.m_sb + h * p.m_sh) << esize_log2);
  }
  const bool mask_tile = kMask && SM::kMask > 0 && p.mask && p.mask_vec; // v2 only

  for (; nb >= 0; --nb) {
    fused_cp_async_wait<0>();
    // K[nb] (kDbuf: and V[nb]) landed; every warp is done with V[nb + 1] (and
    // the mask tile; kDbuf: with the whole pair of tile nb + 1)
    __syncthreads();
    const int n0 = nb * kBN;
    if constexpr (kDbuf) {
      if (nb > 0) { // tile nb - 1 into the other pair, a whole tile ahead
        const uint32_t o2 = (uint32_t)((nb - 1) & 1) * kKV; // the other pair
        // (tile nb - 1 is whole: only the first tile loaded, the last, has a tail).
        // The K/V bases are re-formed here from the block index (read through
        // volatile asm, so not hoisted): no 64-bit pointer stays live in the loop.
        uint32_t bz, hy, tx;
        asm volatile("mov.u32 %0, %%ctaid.z;\n" : "=r"(bz));
        asm volatile("mov.u32 %0, %%ctaid.y;\n" : "=r"(hy));
        asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tx));
        const int hk2 = (int)hy / (p.hq / p.hkv);
        fused_load_tile_full<T, kBN, kD, kThreads>(
            aK + o2, (const T *)p.k + (int64_t)bz * p.k_sb + hk2 * p.k_sh + (int64_t)(n0 - kBN) * p.k_ss,
            p.k_ss, (int)tx);
        fused_load_tile_full<T, kBN, kD, kThreads>(
            aV + o2, (const T *)p.v + (int64_t)bz * p.v_sb + hk2 * p.v_sh + (int64_t)(n0 - kBN) * p.v_ss,
            p.v_ss, (int)tx);
        fused_cp_async_commit();
      }
    } else {
      fused_load_tile<T, kBN, kD, kThreads>(aV, vg + (int64_t)n0 * p.v_ss, p.v_ss, p.sk - n0,
                                            d_chunks, tid);
      if (kMask && mask_tile)
        fused_load_mask<kBM, kBN, kThreads>(
            fused_smem_addr(sMask), mask_bh + (((int64_t)m0 * p.m_sq + n0) << esize_log2),
            p.m_sq << esize_log2, rows_q, (p.sk - n0) << esize_log2, esize_log2, tid);
      fused_cp_async_commit();
    }

    float s[kMA][kNT][4];
#pragma unroll
    for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      uint32_t a[kMA][4];
#pragma unroll
      for (int mi = 0; mi < kMA; ++mi)
        fused_ldmatrix_x4(a[mi], fused_lane_off<kBM, kD>(lq, mi * 16, 2 * kk));
#pragma unroll
      for (int n2 = 0; n2 < kBN / 16; ++n2) {
        uint32_t bk[4];
        fused_ldmatrix_x4(bk, fused_lane_off<kBN, kD>(kDbuf ? lk + (uint32_t)(nb & 1) * kKV : lk, n2 * 16, 2 * kk));
#pragma unroll
        for (int mi = 0; mi < kMA; ++mi) {
          fused_mma<T>(s[mi][2 * n2], a[mi], bk[0], bk[1]);
          fused_mma<T>(s[mi][2 * n2 + 1], a[mi], bk[2], bk[3]);
        }
      }
    }

    if constexpr (!kDbuf) {
      fused_cp_async_wait<0>();
      __syncthreads(); // V[nb] (and the mask tile) landed; every warp is done with K[nb]
      if (nb > 0) {
        fused_load_tile<T, kBN, kD, kThreads>(aK, kg + (int64_t)(n0 - kBN) * p.k_ss, p.k_ss,
                                              p.sk - (n0 - kBN), d_chunks, tid);
        fused_cp_async_commit();
      }
    }

    if constexpr (kMask) {
      // No key hidden in this tile for any row of the CTA: inside Sk and, under
      // a causal rule, wholly left of the diagonal of the CTA's first row.
      const bool full = n0 + kBN <= p.sk && !(p.causal && n0 + kBN - 1 > m0 + p.causal_off);
      fused_bias<kMA, kNT, SM::kMaskPitch>(
          s, p, mask_tile ? sMask + warp * kWarpM * SM::kMaskPitch : nullptr, SM::kMaskPitch,
          mask_bh ? mask_bh + (((int64_t)row0 * p.m_sq + (int64_t)n0 * p.m_sk) << esize_log2)
                  : nullptr,
          row0, n0, g, t4, full);
    } else if (n0 + kBN > p.sk || (p.causal && n0 + kBN - 1 > m0 + p.causal_off)) {
      // Tail or diagonal tile: hide keys past Sk and past each row's limit.
#pragma unroll
      for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int row = row0 + mi * 16 + g + 8 * hh;
          const int lim = p.causal ? min(p.sk - 1, row + p.causal_off) : p.sk - 1;
#pragma unroll
          for (int j = 0; j < kNT; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (n0 + j * 8 + 2 * t4 + e > lim) s[mi][j][2 * hh + e] = -INFINITY;
        }
    }

    // Online softmax; a row's 4 lanes (one quad) agree on m through shuffles.
    // Each probability pair is rounded into P (the A operand of P V) as soon
    // as it exists, so the fp32 scores die early (fewer live registers).
    uint32_t pk[kMA][kNT][2]; // P: [m atom][8-key tile][row g | row g + 8]
#pragma unroll
    for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const float m_old = FUSED_M(mi, hh);
        float mx = m_old;
#pragma unroll
        for (int j = 0; j < kNT; ++j)
          mx = fmaxf(mx, fmaxf(s[mi][j][2 * hh], s[mi][j][2 * hh + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float base_m = mx == -INFINITY ? 0.f : mx * c;
        const float alpha = fused_exp2(m_old * c - base_m);
        FUSED_M(mi, hh) = mx;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          const float p0 = fused_exp2(fmaf(s[mi][j][2 * hh], c, -base_m));
          const float p1 = fused_exp2(fmaf(s[mi][j][2 * hh + 1], c, -base_m));
          sum += p0 + p1;
          pk[mi][j][hh] = fused_pack2<T>(p0, p1);
        }
        FUSED_L(mi, hh) = FUSED_L(mi, hh) * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          acc_o[mi][dt][2 * hh] *= alpha;
          acc_o[mi][dt][2 * hh + 1] *= alpha;
        }
      }

    // O += P V: 8-key tiles 2kk and 2kk+1 (keys 16kk..16kk+15) form one A
    // fragment: {row g keys 0-7, row g+8 keys 0-7, row g keys 8-15, row g+8 keys 8-15}.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t pa[kMA][4];
#pragma unroll
      for (int mi = 0; mi < kMA; ++mi) {
        pa[mi][0] = pk[mi][2 * kk][0];
        pa[mi][1] = pk[mi][2 * kk][1];
        pa[mi][2] = pk[mi][2 * kk + 1][0];
        pa[mi][3] = pk[mi][2 * kk + 1][1];
      }
#pragma unroll
      for (int d2 = 0; d2 < kD / 16; ++d2) {
        uint32_t bv[4];
        fused_ldmatrix_x4_trans(bv, fused_lane_off<kBN, kD>(kDbuf ? lv + (uint32_t)(nb & 1) * kKV : lv, kk * 16, 2 * d2));
#pragma unroll
        for (int mi = 0; mi < kMA; ++mi) {
          fused_mma<T>(acc_o[mi][2 * d2], pa[mi], bv[0], bv[1]);
          fused_mma<T>(acc_o[mi][2 * d2 + 1], pa[mi], bv[2], bv[3]);
        }
      }
    }
  }

  // Epilogue: l over the quad, O / l, lse; O staged in this warp's own Q rows.
  // (Output pointers are formed here, not kept live through the loop.)
  T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)m0 * p.o_ss;
  float *lse = p.lse ? p.lse + ((int64_t)b * p.hq + h) * p.sq + m0 : nullptr;
  __syncwarp();
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float l = FUSED_L(mi, hh);
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l == 0.f ? 0.f : __fdividef(1.f, l); // l >= 1 unless empty
      const int r = warp * kWarpM + mi * 16 + g + 8 * hh; // row within the CTA
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const uint32_t v2 =
            fused_pack2<T>(acc_o[mi][dt][2 * hh] * inv, acc_o[mi][dt][2 * hh + 1] * inv);
        *(uint32_t *)(sQ + fused_swz<kBM, kD>(r, dt) + 2 * t4) = v2;
      }
      if (lse && t4 == 0 && r < rows_q) {
        const float m = FUSED_M(mi, hh);
        lse[r] = (m == -INFINITY || l == 0.f) ? -INFINITY : (m * c + __log2f(l)) * FUSED_LN2;
      }
    }
#undef FUSED_M
#undef FUSED_L
  __syncwarp();
#pragma unroll
  for (int it = 0; it < kWarpM * kDT / 32; ++it) {
    const int i = lane + 32 * it, r = warp * kWarpM + i / kDT, ch = i % kDT;
    if (r < rows_q && ch < d_chunks)
      *(uint4 *)(og + (int64_t)r * p.o_ss + ch * 8) = *(const uint4 *)(sQ + fused_swz<kBM, kD>(r, ch));
  }
}

template <typename T, int kD, int kBM, int kBN, int kWarpM, int kMinB, int kFlags>
__global__ void __launch_bounds__(kBM / kWarpM * 32, kMinB)
    flash_fwd_kernel(const attn_fused_params p) {
  extern __shared__ __align__(128) char fused_smem_buf[];
  fused_fwd_body<T, kD, kBM, kBN, kWarpM, kFlags>(p, fused_smem_buf);
}

template <typename T, int kD, int kBM, int kBN, int kWarpM, int kMinB, int kFlags>
__global__ void __launch_bounds__(kBM / kWarpM * 32, kMinB)
    efficient_fwd_kernel(const attn_fused_params p) {
  extern __shared__ __align__(128) char fused_smem_buf[];
  fused_fwd_body<T, kD, kBM, kBN, kWarpM, kFlags | FUSED_MASK>(p, fused_smem_buf);
}

// static: one copy per translation unit, as the kernel it launches is per
// unit too (whole-program CUDA); the handle's launch record keys the
// shared-memory opt-in by that kernel's own pointer.
template <typename T, int kD, int kBM, int kBN, int kWarpM, int kMinB, int kFlags>
static attn_status fused_launch(const attn_fused_params &p, cudaStream_t stream) {
  constexpr bool kMask = (kFlags & FUSED_MASK) != 0;
  constexpr int kThreads = kBM / kWarpM * 32;
  constexpr int kSmem = fused_smem<kD, kBM, kBN, kWarpM, kFlags>::kBytes;
  void (*kernel)(const attn_fused_params);
  if constexpr (kMask)
    kernel = efficient_fwd_kernel<T, kD, kBM, kBN, kWarpM, kMinB, kFlags & ~FUSED_MASK>;
  else
    kernel = flash_fwd_kernel<T, kD, kBM, kBN, kWarpM, kMinB, kFlags>;
  attn_status st = attn_launch_smem_limit(p.ctx, (const void *)kernel, kSmem);
  if (st) return st;
  const dim3 grid((unsigned)((p.sq + kBM - 1) / kBM), (unsigned)p.hq, (unsigned)p.b);
  kernel<<<grid, kThreads, kSmem, stream>>>(p);
  if constexpr (kMask)
    ATTN_CUDA_CHECK_LAUNCH("efficient_fwd_kernel");
  else
    ATTN_CUDA_CHECK_LAUNCH("flash_fwd_kernel");
  return ATTN_STATUS_OK;
}

// The instance the backends run for (dtype, head dim); defined in the
// generated files instances/fused_fwd_*.cu.
template <typename T, int kD, bool kMask>
attn_status fused_run(const attn_fused_params &p, cudaStream_t stream) {
  using C = flash_cfg<kD, kMask>;
  return fused_launch<T, kD, C::kBM, C::kBN, C::kWarpM, C::kMinB,
                      C::kFlags | (kMask ? FUSED_MASK : 0)>(p, stream);
}

#endif
