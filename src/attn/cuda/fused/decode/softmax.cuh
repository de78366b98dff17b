// The decode kernels' softmax pieces, in the exp2 domain (scores times
// scale * log2 e), on m16n8 C fragments: a lane holds rows g4 and g4 + 8
// (hh = 0, 1) of its warp's 16, two adjacent keys each; a row's 4 lanes
// (lane % 4) reduce by shuffles.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_SOFTMAX_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_SOFTMAX_CUH

#include <math.h>

#include "attn/cuda/fused/decode/seq.cuh"

// The last key each of a lane's two rows sees: bottom-right causal per
// sequence (token t of nq sees keys up to t + nk - nq), else all. row0: the
// lane's warp's first query row of the KV head's R.
FUSED_DEV void decode_causal_limits(const attn_decode_params &p, const decode_seq &sq, int row0,
                                    int lane, int (&lim)[2]) {
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int t = (row0 + lane / 4 + 8 * hh) / p.group;
    lim[hh] = p.causal ? t + sq.nk - sq.nq : 0x7fffffff;
  }
}

// One n8 tile of scores, the lane's first key j: scaled where visible (live,
// before k_stop and the row's causal limit), -inf elsewhere; mx the rows' max.
FUSED_DEV void decode_mask_tile(float (&s)[4], int j, bool live, int k_stop, const int (&lim)[2],
                                float scale, float (&mx)[2]) {
#pragma unroll
  for (int e = 0; e < 4; e++) {
    const int hh = e >> 1, jj = j + (e & 1);
    const bool vis = live && jj < k_stop && jj <= lim[hh];
    s[e] = vis ? s[e] * scale : -INFINITY;
    mx[hh] = fmaxf(mx[hh], s[e]);
  }
}

// A row's max across its 4 lanes.
FUSED_DEV float decode_row_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

FUSED_DEV void decode_quad_sum(float (&l)[2]) {
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], 1);
    l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], 2);
  }
}

// The exponent's base for a row of max m: 0 for a row that saw no key, so
// that its scores (all -inf) give 0, not NaN.
FUSED_DEV float decode_exp_base(float m) { return m == -INFINITY ? 0.f : m; }

// s = 2^(s - base) for one n8 tile, the rows' sums added to sum.
FUSED_DEV void decode_exp_tile(float (&s)[4], const float (&base)[2], float (&sum)[2]) {
#pragma unroll
  for (int e = 0; e < 4; e++) {
    s[e] = fused_exp2(s[e] - base[e >> 1]);
    sum[e >> 1] += s[e];
  }
}

// The online step over kNT masked tiles whose max (with the running m) is
// mx: m becomes mx, the running sum l is rescaled by alpha = 2^(m_old -
// base) and takes the tiles' exp'd sum; the caller rescales O by alpha.
template <int kNT>
FUSED_DEV void decode_online_softmax(float (&s)[kNT][4], float (&mx)[2], float (&m)[2],
                                     float (&l)[2], float (&alpha)[2]) {
  float base[2], rs[2] = {0.f, 0.f};
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {  // a row at a time: fewer live registers at 4 row atoms
    mx[hh] = decode_row_max(mx[hh]);
    base[hh] = decode_exp_base(mx[hh]);
    alpha[hh] = fused_exp2(m[hh] - base[hh]);
    m[hh] = mx[hh];
  }
#pragma unroll
  for (int nt = 0; nt < kNT; nt++) decode_exp_tile(s[nt], base, rs);
  l[0] = l[0] * alpha[0] + rs[0], l[1] = l[1] * alpha[1] + rs[1];
}

// The one-pass softmax over a warp's kNT masked tiles (all its keys in
// registers), m the rows' max: s = 2^(s - base), the sums added to l (this
// lane's part; decode_quad_sum completes it).
template <int kNT>
FUSED_DEV void decode_softmax_once(float (&s)[kNT][4], float (&m)[2], float (&l)[2]) {
  float base[2];
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    m[hh] = decode_row_max(m[hh]);
    base[hh] = decode_exp_base(m[hh]);
  }
#pragma unroll
  for (int nt = 0; nt < kNT; nt++) decode_exp_tile(s[nt], base, l);
}

#endif
