// The online softmax of one query row, as the fused kernels keep it (exp2
// domain, c = scale * log2 e, or c = 1 where the scores are already scaled):
//   m' = max(m, max_j s_j)        base = m' == -inf ? 0 : m' c
//   alpha = 2^(m c - base)        p_j = 2^(s_j c - base)
//   l = alpha l + sum_j p_j       O = alpha O + P V
// then out = O / l and lse = (m c + log2 l) ln 2. A row that sees no key
// keeps m = -inf and l = 0: out 0, lse -inf (never -inf - -inf = NaN).
// A row's scores are spread over the four lanes of one quad (lanes 4g..4g+3)
// in every family here, so its max and sum reduce with two shuffles.
// kFast: the special-function-unit forms (ex2.approx, __log2f, __fdividef),
// for 16-bit outputs; otherwise the accurate ones (f32 within 1e-5).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_KIT_ROW_SOFTMAX_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_KIT_ROW_SOFTMAX_CUH

#include <math.h>

#include "attn/cuda/fused/fused_mma.cuh"

FUSED_DEV float fused_quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

FUSED_DEV float fused_quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

template <bool kFast>
FUSED_DEV float fused_exp2_of(float x) {
  if constexpr (kFast) return fused_exp2(x);
  else return exp2f(x);
}

// The row's new max mx (already over the quad) against its old one: the
// exponent base of this step's probabilities, and alpha, the factor of the
// old sum and O.
struct fused_row_step {
  float base, alpha;
};

template <bool kFast>
FUSED_DEV fused_row_step fused_row_rescale(float m_old, float mx, float c) {
  const float base = mx == -INFINITY ? 0.f : mx * c;
  return {base, fused_exp2_of<kFast>(m_old * c - base)};
}

// 1 / l, or 0 for a row that saw no key (out 0, not 0/0).
template <bool kFast>
FUSED_DEV float fused_row_inv(float l) {
  if constexpr (kFast) return l == 0.f ? 0.f : __fdividef(1.f, l);  // l >= 1 unless empty
  else return l == 0.f ? 0.f : 1.f / l;
}

// The row's natural-log sum of exponentials, -inf for a row that saw no key.
template <bool kFast>
FUSED_DEV float fused_row_lse(float m, float c, float l) {
  if constexpr (kFast)
    return (m == -INFINITY || l == 0.f) ? -INFINITY : (m * c + __log2f(l)) * FUSED_LN2;
  else return (m == -INFINITY || l == 0.f) ? -INFINITY : (m * c + log2f(l)) * FUSED_LN2;
}

#endif
