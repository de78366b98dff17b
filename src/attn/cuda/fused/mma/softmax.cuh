// The online softmax of the mma.sync kernels on S fragments (kit/row_softmax.cuh
// for the rule): a lane holds rows g and g + 8 of each of its kMA m atoms, and
// the row statistics live in the four lanes of that row's quad, never across
// warps (no shared-memory exchange).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_SOFTMAX_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_SOFTMAX_CUH

#include <math.h>

#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/kit/row_softmax.cuh"

// Row statistics m (running max) and l (this lane's part of the running sum)
// of the rows g and g + 8 of each m atom: registers, or (kSmem) this
// thread's own shared-memory slots, touched twice per tile, which leaves the
// registers to O, S and the fragments (no spills at 32 rows per warp and D
// 128).
// The register arrays are the caller's, declared next to O: held inside the
// struct they gave the D64 kernel other code.
template <int kMA, int kThreads, bool kSmem>
struct fused_row_stats {
  float (&rm)[kMA][2], (&rl)[kMA][2];
  float *slots;  // kSmem: slot (which, mi, hh) x tid
  int tid;

  __device__ __forceinline__ float &m(int mi, int hh) {
    if constexpr (kSmem) return slots[((0 * kMA + mi) * 2 + hh) * kThreads + tid];
    else return rm[mi][hh];
  }
  __device__ __forceinline__ float &l(int mi, int hh) {
    if constexpr (kSmem) return slots[((1 * kMA + mi) * 2 + hh) * kThreads + tid];
    else return rl[mi][hh];
  }
};

// O = 0, m = -inf, l = 0.
template <int kMA, int kDT, class Stats>
FUSED_DEV void fused_softmax_init(float (&acc_o)[kMA][kDT][4], Stats &st) {
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][dt][e] = 0.f;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) st.m(mi, hh) = -INFINITY, st.l(mi, hh) = 0.f;
  }
}

// One S tile: new row max over the quad, O and l rescaled by alpha, and the
// probabilities 2^(s c - base) rounded into P (pk: the A operand of P V,
// [m atom][8-key tile][row g | row g + 8]) as soon as each pair exists, so
// the fp32 scores die early (fewer live registers).
template <typename T, int kMA, int kNT, int kDT, class Stats>
FUSED_DEV void fused_softmax_tile(const float (&s)[kMA][kNT][4], uint32_t (&pk)[kMA][kNT][2],
                                  float (&acc_o)[kMA][kDT][4], Stats &st, float c) {
#pragma unroll
  for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float m_old = st.m(mi, hh);
      float mx = m_old;
#pragma unroll
      for (int j = 0; j < kNT; ++j) mx = fmaxf(mx, fmaxf(s[mi][j][2 * hh], s[mi][j][2 * hh + 1]));
      mx = fused_quad_max(mx);
      const fused_row_step r = fused_row_rescale<true>(m_old, mx, c);
      st.m(mi, hh) = mx;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        const float p0 = fused_exp2(fmaf(s[mi][j][2 * hh], c, -r.base));
        const float p1 = fused_exp2(fmaf(s[mi][j][2 * hh + 1], c, -r.base));
        sum += p0 + p1;
        pk[mi][j][hh] = fused_pack2<T>(p0, p1);
      }
      st.l(mi, hh) = st.l(mi, hh) * r.alpha + sum;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        acc_o[mi][dt][2 * hh] *= r.alpha;
        acc_o[mi][dt][2 * hh + 1] *= r.alpha;
      }
    }
}

#endif
