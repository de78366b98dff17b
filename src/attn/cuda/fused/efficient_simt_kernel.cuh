// The efficient backend's scalar kernel: fp32 inputs (fp32 FMA on CUDA cores,
// no TF32, so f32 stays within 1e-5 of the fp64 reference), and 16-bit inputs
// the tensor-core kernel cannot copy 16 bytes at a time (head dim not a
// multiple of 8, unaligned pointers or strides, any d stride).
//
// Tile: 32 query rows x 32 keys (16 at D > 128), 128 threads. Thread t owns query row t / 4
// of the tile; the 4 lanes of a quad split that row's 32 scores (keys
// t % 4 + 4 j) and its output columns (d = t % 4 + 4 i), so the row's
// softmax statistics reduce with two quad shuffles. Q, K, V tiles are
// converted to fp32 in shared memory (rows padded by one float: the 8 rows
// a warp reads at once fall in 8 banks); P goes through shared memory
// [32 x 33] between the two products. O lives in registers (kDmax / 4 per
// thread). Online softmax in the exp2 domain as in the tensor-core kernel
// (kit/row_softmax.cuh), with exp2f (not the approximate MUFU form) for fp32
// accuracy: f32 within 1e-5 of the fp64 reference.
#ifndef ATTNPROF_SRC_ATTN_CUDA_EFFICIENT_SIMT_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_EFFICIENT_SIMT_KERNEL_CUH

#include <math.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/fused_launch.h"
#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/kit/key_mask.cuh"
#include "attn/cuda/fused/kit/row_softmax.cuh"

#define SIMT_BM 32
#define SIMT_THREADS 128

// Keys per tile: 32, or 16 at kDmax 256 so that the tiles fit the 99 KB a
// block may take on sm_86/sm_89 (32 keys would need 100.4 KB there).
template <int kDmax>
__host__ __device__ constexpr int simt_bn(void) {
  return kDmax >= 256 ? 16 : 32;
}

template <int kDmax>
__host__ __device__ constexpr int simt_smem_bytes(void) {
  return (int)sizeof(float) * (SIMT_BM * (kDmax + 1) + simt_bn<kDmax>() * (kDmax + 1) +
                               simt_bn<kDmax>() * kDmax + SIMT_BM * (simt_bn<kDmax>() + 1));
}

// Additive bias (or keep flag for a boolean mask) of element (row, col).
FUSED_DEV float simt_mask_at(const attn_fused_params &p, const char *mbase, int row, int col) {
  const int64_t off = (int64_t)row * p.m_sq + (int64_t)col * p.m_sk;
  if (p.mask_kind == ATTN_FUSED_MASK_BOOL)
    return ((const unsigned char *)mbase)[off] ? 0.f : -INFINITY;
  if (p.mask_dtype == ATTN_DTYPE_F32) return ((const float *)mbase)[off];
  if (p.mask_dtype == ATTN_DTYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)mbase)[off]);
  return __half2float(((const __half *)mbase)[off]);
}

// The CTA's Q rows in fp32, zero past Sq and D (row stride kDmax + 1).
template <typename T, int kDmax>
FUSED_DEV void simt_load_q(float *sQ, const attn_fused_params &p, const T *qg, int rows_q,
                           int tid) {
  for (int i = tid; i < SIMT_BM * kDmax; i += SIMT_THREADS) {
    const int rr = i / kDmax, d = i % kDmax;
    sQ[rr * (kDmax + 1) + d] =
        rr < rows_q && d < p.d ? fused_to_f32(qg[(int64_t)rr * p.q_ss + (int64_t)d * p.q_sd]) : 0.f;
  }
}

// Key tile n0 of K (row stride kDmax + 1) and V (kDmax) in fp32, zero past
// rows_k keys and d_len columns.
template <typename T, int kDmax>
FUSED_DEV void simt_load_kv(float *sK, float *sV, const attn_fused_params &p, const T *kg,
                            const T *vg, int n0, int rows_k, int d_len, int tid) {
  constexpr int kBN = simt_bn<kDmax>();
  for (int i = tid; i < kBN * kDmax; i += SIMT_THREADS) {
    const int rr = i / kDmax, d = i % kDmax;
    const bool ok = rr < rows_k && d < d_len;
    const int64_t j = n0 + rr;
    sK[rr * (kDmax + 1) + d] = ok ? fused_to_f32(kg[j * p.k_ss + (int64_t)d * p.k_sd]) : 0.f;
    sV[rr * kDmax + d] = ok ? fused_to_f32(vg[j * p.v_ss + (int64_t)d * p.v_sd]) : 0.f;
  }
}

// The thread's scores of query row r: keys q4 + 4 jj of the tile.
template <int kDmax>
FUSED_DEV void simt_scores(float (&x)[simt_bn<kDmax>() / 4], const float *sQ, const float *sK,
                           int d_len, int r, int q4) {
  constexpr int kLD = kDmax + 1;
#pragma unroll
  for (int jj = 0; jj < simt_bn<kDmax>() / 4; ++jj) x[jj] = 0.f;
  for (int d = 0; d < d_len; ++d) {
    const float qv = sQ[r * kLD + d];
#pragma unroll
    for (int jj = 0; jj < simt_bn<kDmax>() / 4; ++jj)
      x[jj] = fmaf(qv, sK[(q4 + 4 * jj) * kLD + d], x[jj]);
  }
}

// O = alpha O + P V for the thread's columns d = q4 + 4 i.
template <int kDmax>
FUSED_DEV void simt_pv(float (&o)[kDmax / 4], const float *sP, const float *sV, float alpha,
                       int d_len, int r, int q4) {
  constexpr int kBN = simt_bn<kDmax>(), kPD = kBN + 1;
#pragma unroll
  for (int i = 0; i < kDmax / 4; ++i) {
    const int d = q4 + 4 * i;
    float acc = o[i] * alpha;
    if (d < d_len) {
#pragma unroll 8
      for (int j = 0; j < kBN; ++j) acc = fmaf(sP[r * kPD + j], sV[j * kDmax + d], acc);
    }
    o[i] = acc;
  }
}

// out = O / l and lse for the thread's query row (inside Sq).
template <typename T, int kDmax>
FUSED_DEV void simt_epilogue(const attn_fused_params &p, const float (&o)[kDmax / 4], float row_m,
                             float row_l, int b, int h, int row, int q4) {
  const float inv = fused_row_inv<false>(row_l);
  T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)row * p.o_ss;
#pragma unroll
  for (int i = 0; i < kDmax / 4; ++i) {
    const int d = q4 + 4 * i;
    if (d < p.d) og[(int64_t)d * p.o_sd] = fused_from_f32<T>(o[i] * inv);
  }
  if (p.lse && q4 == 0)
    p.lse[((int64_t)b * p.hq + h) * p.sq + row] = fused_row_lse<false>(row_m, 1.f, row_l);
}

template <typename T, int kDmax>
__global__ void __launch_bounds__(SIMT_THREADS) efficient_simt_kernel(const attn_fused_params p) {
  constexpr int kBN = simt_bn<kDmax>();
  extern __shared__ float simt_smem[];
  float *sQ = simt_smem, *sK = sQ + SIMT_BM * (kDmax + 1), *sV = sK + kBN * (kDmax + 1);
  float *sP = sV + kBN * kDmax;

  const int tid = threadIdx.x, r = tid >> 2, q4 = tid & 3;
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, hk = h / (p.hq / p.hkv);
  const int m0 = m_block * SIMT_BM, rows_q = min(SIMT_BM, p.sq - m0), row = m0 + r;
  const int D = p.d;

  const T *qg = (const T *)p.q + b * p.q_sb + h * p.q_sh + (int64_t)m0 * p.q_ss;
  const T *kg = (const T *)p.k + b * p.k_sb + hk * p.k_sh;
  const T *vg = (const T *)p.v + b * p.v_sb + hk * p.v_sh;
  const int msize =
      p.mask_kind == ATTN_FUSED_MASK_BOOL ? 1 : (p.mask_dtype == ATTN_DTYPE_F32 ? 4 : 2);
  const char *mbase = p.mask ? (const char *)p.mask + (b * p.m_sb + h * p.m_sh) * msize : nullptr;

  simt_load_q<T, kDmax>(sQ, p, qg, rows_q, tid);
  const int n_blocks = fused_key_tiles<SIMT_BM, kBN>(p, m0);

  float o[kDmax / 4];
#pragma unroll
  for (int i = 0; i < kDmax / 4; ++i) o[i] = 0.f;
  float row_m = -INFINITY, row_l = 0.f;

  for (int nb = 0; nb < n_blocks; ++nb) {
    const int n0 = nb * kBN, rows_k = min(kBN, p.sk - n0);
    __syncthreads();  // the previous tile's K, V are no longer read
    simt_load_kv<T, kDmax>(sK, sV, p, kg, vg, n0, rows_k, D, tid);
    __syncthreads();
    float x[kBN / 4];
    simt_scores<kDmax>(x, sQ, sK, D, r, q4);
    // Scale, mask and the online softmax step (kit/row_softmax.cuh); a row's
    // quad holds its keys q4 + 4 jj. (These loops stay in the kernel: moved
    // into functions, nvcc gives the kernel other code and more registers.)
    float mx = row_m;
#pragma unroll
    for (int jj = 0; jj < kBN / 4; ++jj) {
      const int col = n0 + q4 + 4 * jj;
      float v = x[jj] * p.scale_log2;
      const bool hide = FUSED_KEY_HIDDEN(p, row, col);
      if (!hide && mbase && row < p.sq) v += simt_mask_at(p, mbase, row, col) * FUSED_LOG2E;
      x[jj] = hide ? -INFINITY : v;
      mx = fmaxf(mx, x[jj]);
    }
    mx = fused_quad_max(mx);
    const fused_row_step st = fused_row_rescale<false>(row_m, mx, 1.f);
    row_m = mx;
    float sum = 0.f;
#pragma unroll
    for (int jj = 0; jj < kBN / 4; ++jj) {
      const float pv = exp2f(x[jj] - st.base);
      sum += pv;
      sP[r * (kBN + 1) + q4 + 4 * jj] = pv;
    }
    row_l = row_l * st.alpha + fused_quad_sum(sum);
    __syncwarp();  // a row's P is written and read by its own quad
    simt_pv<kDmax>(o, sP, sV, st.alpha, D, r, q4);
    __syncwarp();  // P of this tile read before the next tile overwrites it
  }
  if (r < rows_q) simt_epilogue<T, kDmax>(p, o, row_m, row_l, b, h, row, q4);
}

template <typename T, int kDmax>
attn_status simt_run(const attn_fused_params &p, cudaStream_t stream) {
  constexpr int kSmem = simt_smem_bytes<kDmax>();
  attn_status st =
      attn_launch_smem_limit(p.ctx, (const void *)efficient_simt_kernel<T, kDmax>, kSmem);
  if (st) return st;
  const dim3 grid((unsigned)((p.sq + SIMT_BM - 1) / SIMT_BM), (unsigned)p.hq, (unsigned)p.b);
  efficient_simt_kernel<T, kDmax><<<grid, SIMT_THREADS, kSmem, stream>>>(p);
  ATTN_CUDA_CHECK_LAUNCH("efficient_simt_kernel");
  return ATTN_STATUS_OK;
}

#endif
