// Tile copies of the mma.sync kernels (flash and efficient; the Hopper
// kernels reuse them): cp.async of [rows x kD] 16-bit tiles into the
// XOR-swizzled shared-memory layout of fused_swz, the ldmatrix lane
// addresses in that layout, and efficient's mask tile.
//
// Swizzled addressing in bytes. A tile is [kRows x kD] 16-bit elements cut
// into column blocks of W = 64 elements (W = 32 when kD % 64 != 0), each
// block [kRows x W]; the 16-byte chunks of a row are XOR-permuted by row
// (fused_swz). Rows are W * 2 bytes and the tiles 128-byte aligned, so the
// swizzled chunk number is bits 4..6 (W = 64) or 4..5 (W = 32) of the byte
// address: moving by an even chunk step c0 is an XOR of (c0 << 4), moving by
// 16 rows (or by whole rows when the swizzle bits do not change) an add.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_TILE_LOAD_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_TILE_LOAD_CUH

#include "attn/cuda/fused/fused_mma.cuh"

template <int kD>
struct fused_w {
  static constexpr int W = kD % 64 == 0 ? 64 : 32;  // elements per block row
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
  const uint32_t s0 =
      s + (uint32_t)(row0 * W * 2) + (uint32_t)((cin ^ fused_swz_bits<kD>(row0)) << 4);
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
  const uint32_t s0 =
      s + (uint32_t)(row0 * W * 2) + (uint32_t)((cin ^ fused_swz_bits<kD>(row0)) << 4);
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

// efficient's mask tile: [kBM x kBN] elements of up to 4 bytes, rows padded
// by 16 bytes so that the 8 rows a quad-group reads fall in different banks.
template <int kBN>
constexpr int fused_mask_pitch = kBN * 4 + 16;

// efficient, vector masks: cp.async of the mask tile (rows m0.., keys n0..) as
// 16-byte chunks; bytes past Sk and rows past Sq are zero-filled.
template <int kBM, int kBN, int kThreads>
FUSED_DEV void fused_load_mask(uint32_t s, const char *g, int64_t row_bytes, int rows,
                               int bytes_left, int esize_log2, int tid) {
  constexpr int kPitch = fused_mask_pitch<kBN>;
  constexpr int kL = kBN == 32 ? 1 : kBN == 64 ? 2 : 3;
  static_assert(kBN == 16 << kL, "mask tile width");
  const int cpr_log2 = esize_log2 + kL;  // chunks per row: kBN * esize / 16
  const int total = kBM << cpr_log2;
  for (int i = tid; i < total; i += kThreads) {
    const int r = i >> cpr_log2, c = i & ((1 << cpr_log2) - 1);
    const int n = r < rows ? min(16, max(0, bytes_left - c * 16)) : 0;
    fused_cp_async16(s + (uint32_t)(r * kPitch + c * 16), n ? g + r * row_bytes + c * 16 : g, n);
  }
}

#endif
