// The two products of the mma.sync kernels on one key tile, m16n8k16 with
// fp32 accumulators, operands from the swizzled tiles through ldmatrix:
//   S = Q K^T   (Q and K both K-major: plain ldmatrix)
//   O += P V    (P from registers: two m16n8 fp32 C tiles rounded to 16 bits
//                are one m16k16 A fragment; V through ldmatrix.trans)
// lq, lk, lv: this lane's ldmatrix addresses (fused_mma_lanes). O += P V
// stays written out in the kernel body (flash_fwd_kernel.cuh): as a function
// here it costs the kernel's main loop its instruction order.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_GEMM_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_GEMM_CUH

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/mma/tile_load.cuh"

// ldmatrix lanes: Q (A): rows r0 + lane%16, chunk bit lane/16.
// K (B, two n tiles): keys n0 + 8 (lane/16) + lane%8, chunk bit (lane/8)%2.
// V (B via .trans, two d tiles): keys k0 + 8 ((lane/8)%2) + lane%8, chunk bit lane/16.
struct fused_mma_lanes {
  uint32_t lq, lk, lv;
};

template <int kD, int kWarpM>
FUSED_DEV fused_mma_lanes fused_mma_lanes_of(uint32_t aQ, uint32_t aK, uint32_t aV, int warp,
                                             int lane) {
  return {fused_lane<kD>(aQ, warp * kWarpM + (lane & 15), lane >> 4),
          fused_lane<kD>(aK, (lane >> 4) * 8 + (lane & 7), (lane >> 3) & 1),
          fused_lane<kD>(aV, ((lane >> 3) & 1) * 8 + (lane & 7), lane >> 4)};
}

// S += Q K^T over head dims 16 kk .. 16 kk + 15: kMA m atoms of the warp's
// rows x kNT 8-key tiles. (One step per call, the loop over kk in the
// caller: with the whole loop in here nvcc orders the kernel's main loop
// otherwise.)
template <typename T, int kD, int kBM, int kBN, int kMA, int kNT>
FUSED_DEV void fused_qk_step(float (&s)[kMA][kNT][4], uint32_t lq, uint32_t lk, int kk) {
  uint32_t a[kMA][4];
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
    fused_ldmatrix_x4(a[mi], fused_lane_off<kBM, kD>(lq, mi * 16, 2 * kk));
#pragma unroll
  for (int n2 = 0; n2 < kBN / 16; ++n2) {
    uint32_t bk[4];
    fused_ldmatrix_x4(bk, fused_lane_off<kBN, kD>(lk, n2 * 16, 2 * kk));
#pragma unroll
    for (int mi = 0; mi < kMA; ++mi) {
      fused_mma<T>(s[mi][2 * n2], a[mi], bk[0], bk[1]);
      fused_mma<T>(s[mi][2 * n2 + 1], a[mi], bk[2], bk[3]);
    }
  }
}

#endif
