// The end of an mma.sync CTA: each row's sum over its quad, O / l, the lse,
// O rounded and staged in the warp's own rows of the Q tile (swizzled), then
// written with 16-byte stores.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_EPILOGUE_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_EPILOGUE_CUH

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/fused_params.h"
#include "attn/cuda/fused/kit/row_softmax.cuh"

// c: the softmax's exponent factor; d_chunks: 16-byte chunks of a row of out.
// The output pointers are formed here, not kept live through the main loop.
template <typename T, int kD, int kBM, int kWarpM, int kMA, int kDT, class Stats>
FUSED_DEV void fused_epilogue(const attn_fused_params &p, const float (&acc_o)[kMA][kDT][4],
                              Stats &st, float c, T *sQ, int b, int h, int m0, int rows_q,
                              int d_chunks, int warp, int lane) {
  const int g = lane >> 2, t4 = lane & 3;
  T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)m0 * p.o_ss;
  float *lse = p.lse ? p.lse + ((int64_t)b * p.hq + h) * p.sq + m0 : nullptr;
  __syncwarp();
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float l = fused_quad_sum(st.l(mi, hh));
      const float inv = fused_row_inv<true>(l);
      const int r = warp * kWarpM + mi * 16 + g + 8 * hh;  // row within the CTA
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const uint32_t v2 =
            fused_pack2<T>(acc_o[mi][dt][2 * hh] * inv, acc_o[mi][dt][2 * hh + 1] * inv);
        *(uint32_t *)(sQ + fused_swz<kBM, kD>(r, dt) + 2 * t4) = v2;
      }
      if (lse && t4 == 0 && r < rows_q) lse[r] = fused_row_lse<true>(st.m(mi, hh), c, l);
    }
  __syncwarp();  // the warp's rows staged: each lane now stores whole chunks
#pragma unroll
  for (int it = 0; it < kWarpM * kDT / 32; ++it) {
    const int i = lane + 32 * it, r = warp * kWarpM + i / kDT, ch = i % kDT;
    if (r < rows_q && ch < d_chunks)
      *(uint4 *)(og + (int64_t)r * p.o_ss + ch * 8) =
          *(const uint4 *)(sQ + fused_swz<kBM, kD>(r, ch));
  }
}

#endif
