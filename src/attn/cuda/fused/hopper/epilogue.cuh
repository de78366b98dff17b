// The epilogue of the warp-specialized flash kernel: O / l and lse of a
// consumer's 64 rows, from registers straight to global memory (one Q
// buffer: ws_store_out) or staged in the tile's Q buffer and stored by TMA
// (two Q buffers: ws_store_tma, the buffer handed back later).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_EPILOGUE_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_EPILOGUE_CUH

#include "attn/cuda/fused/flash_fwd_wgmma_kernel.cuh"
#include "attn/cuda/fused/ws_sync.cuh"
#include "attn/cuda/fused/ws_tma.h"

// Transposes 4 x 4 words across a quad of lanes (lane t4 ends with word t4
// of each lane's a, in lane order), in two xor-shuffle stages: 2 x 2 blocks
// inside lane pairs, then the pairs' off-diagonal blocks.
FUSED_DEV void ws_quad_transpose(uint32_t (&a)[4], int t4) {
  const bool p1 = t4 & 1, p2 = t4 & 2;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint32_t r = __shfl_xor_sync(0xffffffffu, p1 ? a[2 * k] : a[2 * k + 1], 1);
    if (p1) a[2 * k] = r;
    else a[2 * k + 1] = r;
  }
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const uint32_t r = __shfl_xor_sync(0xffffffffu, p2 ? a[e] : a[e + 2], 2);
    if (p2) a[e] = r;
    else a[e + 2] = r;
  }
}

// Epilogue where one Q buffer fits: O / l from the accumulators straight to
// global memory (og: this tile's row 0, ss: the row stride; rows: rows left
// in the tensor), so that the Q buffer is not needed to stage O and the next
// tile's Q loads under this tile's last products. A quad's lanes hold 2
// columns of each 8-column block; after ws_quad_transpose each lane holds 8
// consecutive columns, one 16-byte store (a warp writes 8 rows x 64 bytes).
template <typename T, int kD>
FUSED_DEV void ws_store_out(T *og, int64_t ss, const float (&o)[kD / 2], const float (&m)[2],
                            const float (&l)[2], int r0, int t4, float c, float *lse, int rows) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float sum = wg_row_sum(l[hh]), inv = sum == 0.f ? 0.f : __fdividef(1.f, sum);
    const int r = r0 + 8 * hh;
#pragma unroll
    for (int jj = 0; jj < kD / 32; ++jj) {
      uint32_t a[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int j = 4 * jj + q;
        a[q] = fused_pack2<T>(o[4 * j + 2 * hh] * inv, o[4 * j + 2 * hh + 1] * inv);
      }
      ws_quad_transpose(a, t4);
      if (r < rows)
        *(uint4 *)(og + (int64_t)r * ss + 32 * jj + 8 * t4) = make_uint4(a[0], a[1], a[2], a[3]);
    }
    wg_put_lse(lse, m[hh], sum, c, r, t4, rows);
  }
}

// Two Q buffers: O / l into this warpgroup's rows of its Q buffer sQ at aQt
// (its products are done with them), then TMA stores of 64 x 64 boxes by
// the warpgroup's thread 0 (rows past Sq clipped by TMA). named: this
// consumer's named barrier.
template <typename T, int kBM, int kD, int kOR>
FUSED_DEV void ws_store_tma(const attn_ws_maps &mp, T *sQ, uint32_t aQt, const float (&o)[kOR],
                            const float (&m)[2], const float (&l)[2], int r0, int t4, float c,
                            float *lse, int rows, uint32_t named, int ctid, int cw, int mrow0,
                            int sq, int h, int b) {
  wg_stage_out<T, kBM, kD>(sQ, o, m, l, r0, t4, c, lse, rows);
  wg_fence_smem();  // the generic-proxy writes, before TMA reads them
  ws_named_sync(named, 128);
  if (ctid == 0 && mrow0 < sq) {
#pragma unroll
    for (int blk = 0; blk < kD / 64; ++blk)
      ws_tma_store(&mp.o, aQt + (uint32_t)(blk * kBM * 128 + cw * 64 * 128), blk * 64, mrow0, h, b);
    ws_tma_store_commit();
  }
}

#endif
