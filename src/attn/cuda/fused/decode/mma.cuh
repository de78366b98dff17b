// The decode kernels' two products on mma.sync m16n8k16, a warp's 16 query
// rows at a time: S = Q K^T for 16 keys and O += P V for 16 keys. Shared
// memory tiles are addressed through at(row, chunk) (chunk: 8 columns), so
// the same code reads the split kernel's swizzled ring and the cluster
// kernel's slices (swizzled or padded).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_MMA_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_MMA_CUH

#include "attn/cuda/fused/fused_mma.cuh"

// Q's A fragment for columns [16 kk, +16) of rows [row0, +16) of a
// fused_swz<kRows, kD> tile.
template <typename T, int kRows, int kD>
FUSED_DEV void decode_q_frag(uint32_t (&a)[4], const T *qs, int row0, int kk, int lane) {
  const int mi = lane / 8, r8 = lane % 8;
  fused_ldmatrix_x4(
      a, fused_smem_addr(qs + fused_swz<kRows, kD>(row0 + (mi % 2) * 8 + r8, kk * 2 + mi / 2)));
}

// S (keys [key0, +16): s0 the first 8, s1 the next) += Q K^T over columns
// [16 kk, +16), Q's fragment a, K row r chunk ch at shared address at(r, ch).
template <typename T, typename At>
FUSED_DEV void decode_qk16(const uint32_t (&a)[4], float (&s0)[4], float (&s1)[4], int key0, int kk,
                           int lane, At at) {
  const int mi = lane / 8, r8 = lane % 8;
  uint32_t bf[4];
  fused_ldmatrix_x4(bf, at(key0 + (mi / 2) * 8 + r8, kk * 2 + mi % 2));
  fused_mma<T>(s0, a, bf[0], bf[1]);
  fused_mma<T>(s1, a, bf[2], bf[3]);
}

// O += P V over keys [key0, +16): P the exp'd scores s0, s1 (as an A
// fragment), V row r chunk ch at shared address at(r, ch) (ldmatrix.trans).
template <typename T, int kD, typename At>
FUSED_DEV void decode_pv16(const float (&s0)[4], const float (&s1)[4], float (&o)[kD / 8][4],
                           int key0, int lane, At at) {
  const uint32_t a[4] = {fused_pack2<T>(s0[0], s0[1]), fused_pack2<T>(s0[2], s0[3]),
                         fused_pack2<T>(s1[0], s1[1]), fused_pack2<T>(s1[2], s1[3])};
  const int mi = lane / 8, r8 = lane % 8;
#pragma unroll
  for (int dn = 0; dn < kD / 16; dn++) {
    uint32_t bf[4];
    fused_ldmatrix_x4_trans(bf, at(key0 + (mi % 2) * 8 + r8, dn * 2 + mi / 2));
    fused_mma<T>(o[2 * dn], a, bf[0], bf[1]);
    fused_mma<T>(o[2 * dn + 1], a, bf[2], bf[3]);
  }
}

template <int kN>
FUSED_DEV void decode_zero(float (&x)[kN][4]) {
#pragma unroll
  for (int i = 0; i < kN; i++) x[i][0] = x[i][1] = x[i][2] = x[i][3] = 0.f;
}

#endif
