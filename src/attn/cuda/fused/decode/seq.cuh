// What both decode kernels address the same way: a sequence's query and key
// counts, key j's (batch or page, row), the Q rows of a KV head into shared
// memory, and a query row's output (out and lse, or a split's partial).
// Query row r of a KV head hk is token r / G of query head hk * G + r % G
// (G = Hq / Hkv), so under GQA each K/V byte is read once, not G times.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_SEQ_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_SEQ_CUH

#include <math.h>

#include "attn/cuda/fused/decode_launch.h"
#include "attn/cuda/fused/fused_mma.cuh"

struct decode_seq {
  int nq, nk, q0, qb;
};

FUSED_DEV decode_seq decode_seq_of(const attn_decode_params &p, int b) {
  decode_seq s;
  s.qb = p.q_off ? 0 : b;
  s.q0 = p.q_off ? p.q_off[b] : 0;
  s.nq = p.q_off ? p.q_off[b + 1] - s.q0 : p.q_rows;
  s.nk = p.kv_kind == DECODE_KV_PACKED  ? p.kv_off[b + 1] - p.kv_off[b]
         : p.kv_kind == DECODE_KV_DENSE ? p.sk
                                        : p.kv_len[b];
  return s;
}

// Key j of sequence b: (batch index or page, row) in k and v.
FUSED_DEV void decode_kv_at(const attn_decode_params &p, int b, int j, int64_t *tb, int *row) {
  if (p.kv_kind == DECODE_KV_PAGED) {
    *tb = __ldg(p.table + b * p.table_stride + j / p.page_size), *row = j % p.page_size;
  } else if (p.kv_kind == DECODE_KV_PACKED) {
    *tb = 0, *row = p.kv_off[b] + j;
  } else {
    *tb = b, *row = j;
  }
}

// Rows [r0, r0 + kRows) of the KV head hk's query rows into qs (swizzled
// fused_swz<kRows, kD>) by cp.async, one commit group; rows past R zero.
template <typename T, int kD, int kRows, int kThreads>
FUSED_DEV void decode_load_q(const attn_decode_params &p, const decode_seq &sq, int hk, int r0,
                             int R, T *qs) {
  constexpr int kChunks = kD / 8;
  const T *qg = (const T *)p.q;
  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, ch = c % kChunks, rr = r0 + r;
    const int t = rr / p.group, h = hk * p.group + rr % p.group;
    const bool ok = rr < R;
    const T *src =
        ok ? qg + sq.qb * p.q_sb + h * p.q_sh + (int64_t)(sq.q0 + t) * p.q_ss + ch * 8 : qg;
    fused_cp_async16(fused_smem_addr(qs + fused_swz<kRows, kD>(r, ch)), src, ok ? 16 : 0);
  }
  fused_cp_async_commit();
}

// Row rr's final output: n values from column col into out, and (col 0)
// its lse from lse2 (log2 domain; -inf for a row that saw no key).
template <typename T, int kN>
FUSED_DEV void decode_out(const attn_decode_params &p, const decode_seq &sq, int hk, int rr,
                          int col, const float *val, float lse2) {
  const int t = rr / p.group, h = hk * p.group + rr % p.group;
  T *dst = (T *)p.o + sq.qb * p.o_sb + h * p.o_sh + (int64_t)(sq.q0 + t) * p.o_ss + col;
#pragma unroll
  for (int e = 0; e < kN; e++) dst[e] = fused_from_f32<T>(val[e]);
  if (col == 0 && p.lse)
    p.lse[((int64_t)sq.qb * p.hq + h) * p.q_rows + sq.q0 + t] = lse2 * FUSED_LN2;
}

// Row rr's 4 values from column col (a multiple of 4) of one split: out and
// lse as one 8-byte store (one split), or the split's normalized partial and
// its lse as one 16-byte store (several).
template <typename T, int kD>
FUSED_DEV void decode_put4(const attn_decode_params &p, const decode_seq &sq, int split, int hk,
                           int rr, int col, float4 val, float lse2) {
  const int t = rr / p.group, h = hk * p.group + rr % p.group;
  if (p.splits == 1) {
    T *dst = (T *)p.o + sq.qb * p.o_sb + h * p.o_sh + (int64_t)(sq.q0 + t) * p.o_ss + col;
    *(uint2 *)dst = make_uint2(fused_pack2<T>(val.x, val.y), fused_pack2<T>(val.z, val.w));
    if (col == 0 && p.lse)
      p.lse[((int64_t)sq.qb * p.hq + h) * p.q_rows + sq.q0 + t] = lse2 * FUSED_LN2;
  } else {
    const int64_t prow = ((int64_t)sq.qb * p.q_rows + sq.q0 + t) * p.hq + h;
    *(float4 *)(p.o_part + ((int64_t)split * p.part_rows + prow) * kD + col) = val;
    if (col == 0) p.lse_part[(int64_t)split * p.part_rows + prow] = lse2;
  }
}

#endif
