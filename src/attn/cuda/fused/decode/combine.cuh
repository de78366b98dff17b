// The decode kernels' merges of partial softmax results, one rule at three
// levels: partials (O_i normalized, lse_i in log2) combine as out = sum_i w_i
// O_i / sum_i w_i, w_i = 2^(lse_i - max lse), lse = max + log2(sum w_i).
//  - the warps' merge: a CTA's key groups (warps) through shared memory;
//  - the combine kernel: a split kernel's splits through global memory;
//  - the cluster merge: a cluster's CTAs through distributed shared memory.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_COMBINE_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_COMBINE_CUH

#include <math.h>

#include "attn/cuda/fused/decode/seq.cuh"
#include "attn/cuda/fused/ws_sync.cuh"

// A partial's weight against the max M (0 for one that saw no key), and the
// merged lse of max M and weight sum L (-inf where no partial saw a key).
FUSED_DEV float decode_lse_weight(float lse, float M) {
  return lse == -INFINITY ? 0.f : fused_exp2(lse - M);
}
FUSED_DEV float decode_lse_merged(float M, float L) { return L > 0.f ? M + log2f(L) : -INFINITY; }

// The warps' partials into buf: each warp puts its unscaled O rows (only
// rows of a token) and its (m, l) in shared memory, a row padded by 8 floats
// so that a warp's float2 stores take the two wavefronts they must; a
// barrier follows.
template <int kD, int kRows, int kWK>
FUSED_DEV void decode_merge_stage(float (&o)[kD / 8][4], const float (&m)[2], const float (&l)[2],
                                  float *buf, int r0, int R, int wm, int kg, int lane) {
  constexpr int kDP = kD + 8;
  float *slab = buf;                                                   // [kWK][kRows][kDP]
  float *st_m = slab + kWK * kRows * kDP, *st_l = st_m + kWK * kRows;  // [kWK][kRows]
  const int g4 = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int r = wm * 16 + g4 + 8 * hh;
    if (r0 + r >= R) continue;  // no token's row: never read
    if (t4 == 0) st_m[kg * kRows + r] = m[hh], st_l[kg * kRows + r] = l[hh];
    float *dst = slab + (kg * kRows + r) * kDP + 2 * t4;
#pragma unroll
    for (int i = 0; i < kD / 8; i++)
      *(float2 *)(dst + i * 8) = make_float2(o[i][2 * hh], o[i][2 * hh + 1]);
  }
  __syncthreads();
}

// Row r's weights in the warps' merge: M the groups' max, f[w] = 2^(m_w -
// M) (0 for a group with no key), L = sum f[w] l_w.
template <int kRows, int kWK>
FUSED_DEV void decode_group_weights(const float *st_m, const float *st_l, int r, float (&f)[kWK],
                                    float &M, float &L) {
  M = -INFINITY, L = 0.f;
#pragma unroll
  for (int w = 0; w < kWK; w++) M = fmaxf(M, st_m[w * kRows + r]);
#pragma unroll
  for (int w = 0; w < kWK; w++) {
    f[w] = decode_lse_weight(st_m[w * kRows + r], M);
    L += f[w] * st_l[w * kRows + r];
  }
}

// The warps' merge, behind one barrier (decode_merge_stage): each thread
// takes 4 columns of a row, sums the kWK groups' with their weights (once
// per 4 outputs, float4 loads) and hands put4(row, col, 4 normalized
// values, lse in log2) the result. kWK warps (key groups) of kRows rows,
// warp (wm, kg); kThreads: the CTA's threads.
template <int kD, int kRows, int kWK, int kThreads, typename Put4>
FUSED_DEV void decode_merge_warps(float (&o)[kD / 8][4], const float (&m)[2], const float (&l)[2],
                                  float *buf, int r0, int R, int wm, int kg, int lane, Put4 put4) {
  constexpr int kDP = kD + 8;
  const float *slab = buf, *st_m = slab + kWK * kRows * kDP, *st_l = st_m + kWK * kRows;
  decode_merge_stage<kD, kRows, kWK>(o, m, l, buf, r0, R, wm, kg, lane);
  const int rows = min(kRows, R - r0);
  for (int idx = threadIdx.x; idx < rows * (kD / 4); idx += kThreads) {
    const int r = idx / (kD / 4), col = idx % (kD / 4) * 4;
    float M, L, f[kWK];
    decode_group_weights<kRows, kWK>(st_m, st_l, r, f, M, L);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWK; w++) {
      const float4 x = *(const float4 *)(slab + (w * kRows + r) * kDP + col);
      acc.x += f[w] * x.x, acc.y += f[w] * x.y, acc.z += f[w] * x.z, acc.w += f[w] * x.w;
    }
    const float inv = L > 0.f ? 1.f / L : 0.f;
    acc.x *= inv, acc.y *= inv, acc.z *= inv, acc.w *= inv;
    put4(r, col, acc, decode_lse_merged(M, L));
  }
}

// The splits' merge of one partial row prow by one warp (lane), wsm the
// warp's DECODE_MAX_SPLITS floats of shared memory. The first kS splits'
// partials load before the lse (they do not depend on it: one L2 round trip
// less on the chain); then each later group of kS splits' loads (through L2)
// issue before any is used, a split's weight read from shared memory (one
// broadcast load). A split that saw no key adds 0 x 0.
template <typename T, int kD>
FUSED_DEV void decode_combine_row(const attn_decode_params &p, int64_t prow, int lane, float *wsm) {
  const float *src = p.o_part + prow * kD + lane;
  const int64_t step = p.part_rows * kD;
  constexpr int kS = kD == 256 ? 4 : 16;
  float x[kS][kD / 32];
  auto load = [&](int s0) {
#pragma unroll
    for (int j = 0; j < kS; j++)
#pragma unroll
      for (int i = 0; i < kD / 32; i++)
        x[j][i] = s0 + j < p.splits ? __ldcg(src + (s0 + j) * step + 32 * i) : 0.f;
  };
  load(0);
  float ls[DECODE_MAX_SPLITS / 32], M = -INFINITY;
#pragma unroll
  for (int i = 0; i < DECODE_MAX_SPLITS / 32; i++) {
    const int s = lane + 32 * i;
    ls[i] = s < p.splits ? __ldcg(p.lse_part + s * p.part_rows + prow) : -INFINITY;
    M = fmaxf(M, ls[i]);
  }
  for (int o = 16; o > 0; o /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  float L = 0.f;
#pragma unroll
  for (int i = 0; i < DECODE_MAX_SPLITS / 32; i++) {
    const float w = ls[i] == -INFINITY ? 0.f : exp2f(ls[i] - M);
    L += w;
    wsm[lane + 32 * i] = w;
  }
  for (int o = 16; o > 0; o /= 2) L += __shfl_xor_sync(0xffffffffu, L, o);
  __syncwarp();
  float acc[kD / 32];
#pragma unroll
  for (int i = 0; i < kD / 32; i++) acc[i] = 0.f;
  for (int s0 = 0; s0 < p.splits; s0 += kS) {
    if (s0 > 0) load(s0);
#pragma unroll
    for (int j = 0; j < kS; j++) {  // past the splits: w is 0 (lse -inf)
      const float ws = wsm[s0 + j];
#pragma unroll
      for (int i = 0; i < kD / 32; i++) acc[i] += ws * x[j][i];
    }
  }
  __syncwarp();  // wsm is free for the warp's next row
  const int64_t qi = prow / p.hq, h = prow % p.hq, qb = qi / p.q_rows, qr = qi % p.q_rows;
  T *dst = (T *)p.o + qb * p.o_sb + h * p.o_sh + qr * p.o_ss;
  for (int i = 0; i < kD / 32; i++)
    dst[lane + 32 * i] = fused_from_f32<T>(L > 0.f ? acc[i] / L : 0.f);
  if (lane == 0 && p.lse)
    p.lse[(qb * p.hq + h) * p.q_rows + qr] = L > 0.f ? (M + log2f(L)) * FUSED_LN2 : -INFINITY;
}

// The combine kernel: one warp per partial row (query row, head).
#define DECODE_COMBINE_THREADS 128
template <typename T, int kD>
__global__ void __launch_bounds__(DECODE_COMBINE_THREADS)
    decode_combine_kernel(const attn_decode_params p) {
  __shared__ float wsm[DECODE_COMBINE_THREADS / 32][DECODE_MAX_SPLITS];
  const int64_t prow = (int64_t)blockIdx.x * (DECODE_COMBINE_THREADS / 32) + threadIdx.x / 32;
  if (prow >= p.part_rows) return;
  decode_combine_row<T, kD>(p, prow, threadIdx.x % 32, wsm[threadIdx.x / 32]);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Shared address a of this CTA, as the same offset in CTA rank's window.
FUSED_DEV uint32_t decode_cluster_map(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
FUSED_DEV float decode_cluster_ld(uint32_t a) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
  return v;
}
FUSED_DEV float4 decode_cluster_ld4(uint32_t a) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(a)
               : "memory");
  return v;
}

// The cluster merge, after a cluster barrier: this CTA (rank) takes columns
// [rank * kD / C, +kD / C) of each of the R rows, 4 a thread from one CTA:
// C adjacent threads load the same 4 columns from the C CTAs' partials
// (part: rows of kPR floats; part_lse: the rows' lse) with one remote load
// each, merge them by shuffles, and the first writes out and lse.
template <typename T, int kD, int kPR, int kThreads>
FUSED_DEV void decode_cluster_merge(const attn_decode_params &p, const decode_seq &sq, int hk,
                                    int R, int C, const float *part, const float *part_lse,
                                    int tid) {
  const uint32_t rank = ws_cluster_rank();
  const int cols = kD / C, q4 = cols / 4, work = R * q4 * C;
  const uint32_t part_a = fused_smem_addr(part), lse_a = fused_smem_addr(part_lse);
  for (int i0 = 0; i0 < work; i0 += kThreads) {  // uniform: shuffles
    const int idx = i0 + tid, item = idx / C, c = idx % C;
    const int r = item / q4, col = (int)rank * cols + (item % q4) * 4;
    const bool on = idx < work;
    const float ls = on ? decode_cluster_ld(decode_cluster_map(lse_a + r * 4, c)) : -INFINITY;
    const float4 x = on ? decode_cluster_ld4(decode_cluster_map(part_a + (r * kPR + col) * 4, c))
                        : make_float4(0.f, 0.f, 0.f, 0.f);
    float M = ls;
    for (int off = 1; off < C; off *= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
    const float w = decode_lse_weight(ls, M);
    float L = w, acc[4] = {w * x.x, w * x.y, w * x.z, w * x.w};
    for (int off = 1; off < C; off *= 2) {
      L += __shfl_xor_sync(0xffffffffu, L, off);
#pragma unroll
      for (int e = 0; e < 4; e++) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], off);
    }
#pragma unroll
    for (int e = 0; e < 4; e++) acc[e] = L > 0.f ? acc[e] / L : 0.f;
    if (on && c == 0) decode_out<T, 4>(p, sq, hk, r, col, acc, decode_lse_merged(M, L));
  }
}
#endif

#endif
