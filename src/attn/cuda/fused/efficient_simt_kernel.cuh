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
// thread). Online softmax in the exp2 domain as in flash_fwd_kernel.cuh,
// with exp2f (not the approximate MUFU form) for fp32 accuracy.
// Speed: a fallback for correctness, not timed yet (bench/NOTES.md); run 1
// checked it on the H200 (f32 within 1e-5 of the fp64 reference).
#ifndef ATTNPROF_SRC_ATTN_CUDA_EFFICIENT_SIMT_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_EFFICIENT_SIMT_KERNEL_CUH

#include <math.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/fused_launch.h"
#include "attn/cuda/fused/fused_mma.cuh"

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
  if (p.mask_kind == ATTN_FUSED_MASK_BOOL) return ((const unsigned char *)mbase)[off] ? 0.f : -INFINITY;
  if (p.mask_dtype == ATTN_DTYPE_F32) return ((const float *)mbase)[off];
  if (p.mask_dtype == ATTN_DTYPE_BF16) return __bfloat162float(((const __nv_bfloat16 *)mbase)[off]);
  return __half2float(((const __half *)mbase)[off]);
}

template <typename T, int kDmax>
__global__ void __launch_bounds__(SIMT_THREADS)
    efficient_simt_kernel(const attn_fused_params p) {
  constexpr int SIMT_BN = simt_bn<kDmax>();
  constexpr int kLD = kDmax + 1, kPD = SIMT_BN + 1, kOD = kDmax / 4;
  extern __shared__ float simt_smem[];
  float *sQ = simt_smem, *sK = sQ + SIMT_BM * kLD, *sV = sK + SIMT_BN * kLD;
  float *sP = sV + SIMT_BN * kDmax;

  const int tid = threadIdx.x, r = tid >> 2, q4 = tid & 3;
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z, hk = h / (p.hq / p.hkv);
  const int m0 = m_block * SIMT_BM, rows_q = min(SIMT_BM, p.sq - m0), row = m0 + r;
  const int D = p.d;

  const T *qg = (const T *)p.q + b * p.q_sb + h * p.q_sh + (int64_t)m0 * p.q_ss;
  const T *kg = (const T *)p.k + b * p.k_sb + hk * p.k_sh;
  const T *vg = (const T *)p.v + b * p.v_sb + hk * p.v_sh;
  const int msize = p.mask_kind == ATTN_FUSED_MASK_BOOL ? 1 : (p.mask_dtype == ATTN_DTYPE_F32 ? 4 : 2);
  const char *mbase = p.mask ? (const char *)p.mask + (b * p.m_sb + h * p.m_sh) * msize : nullptr;

  for (int i = tid; i < SIMT_BM * kDmax; i += SIMT_THREADS) {
    const int rr = i / kDmax, d = i % kDmax;
    sQ[rr * kLD + d] =
        rr < rows_q && d < D ? fused_to_f32(qg[(int64_t)rr * p.q_ss + (int64_t)d * p.q_sd]) : 0.f;
  }

  int n_end = p.sk;
  if (p.causal) n_end = min(n_end, m0 + SIMT_BM + p.causal_off);
  const int n_blocks = n_end > 0 ? (n_end + SIMT_BN - 1) / SIMT_BN : 0;

  float o[kOD];
#pragma unroll
  for (int i = 0; i < kOD; ++i) o[i] = 0.f;
  float row_m = -INFINITY, row_l = 0.f;

  for (int nb = 0; nb < n_blocks; ++nb) {
    const int n0 = nb * SIMT_BN, rows_k = min(SIMT_BN, p.sk - n0);
    __syncthreads(); // the previous tile's K, V are no longer read
    for (int i = tid; i < SIMT_BN * kDmax; i += SIMT_THREADS) {
      const int rr = i / kDmax, d = i % kDmax;
      const bool ok = rr < rows_k && d < D;
      const int64_t j = n0 + rr;
      sK[rr * kLD + d] = ok ? fused_to_f32(kg[j * p.k_ss + (int64_t)d * p.k_sd]) : 0.f;
      sV[rr * kDmax + d] = ok ? fused_to_f32(vg[j * p.v_ss + (int64_t)d * p.v_sd]) : 0.f;
    }
    __syncthreads();

    float x[SIMT_BN / 4];
#pragma unroll
    for (int jj = 0; jj < SIMT_BN / 4; ++jj) x[jj] = 0.f;
    for (int d = 0; d < D; ++d) {
      const float qv = sQ[r * kLD + d];
#pragma unroll
      for (int jj = 0; jj < SIMT_BN / 4; ++jj) x[jj] = fmaf(qv, sK[(q4 + 4 * jj) * kLD + d], x[jj]);
    }
    float mx = row_m;
#pragma unroll
    for (int jj = 0; jj < SIMT_BN / 4; ++jj) {
      const int col = n0 + q4 + 4 * jj;
      float v = x[jj] * p.scale_log2;
      const bool hide = col >= p.sk || (p.causal && col > row + p.causal_off);
      if (!hide && mbase && row < p.sq) v += simt_mask_at(p, mbase, row, col) * FUSED_LOG2E;
      x[jj] = hide ? -INFINITY : v;
      mx = fmaxf(mx, x[jj]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float base = mx == -INFINITY ? 0.f : mx;
    const float alpha = exp2f(row_m - base);
    row_m = mx;
    float sum = 0.f;
#pragma unroll
    for (int jj = 0; jj < SIMT_BN / 4; ++jj) {
      const float pv = exp2f(x[jj] - base);
      sum += pv;
      sP[r * kPD + q4 + 4 * jj] = pv;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    row_l = row_l * alpha + sum;
    __syncwarp(); // a row's P is written and read by its own quad
#pragma unroll
    for (int i = 0; i < kOD; ++i) {
      const int d = q4 + 4 * i;
      float acc = o[i] * alpha;
      if (d < D) {
#pragma unroll 8
        for (int j = 0; j < SIMT_BN; ++j) acc = fmaf(sP[r * kPD + j], sV[j * kDmax + d], acc);
      }
      o[i] = acc;
    }
    __syncwarp(); // P of this tile read before the next tile overwrites it
  }

  if (r < rows_q) {
    const float inv = row_l == 0.f ? 0.f : 1.f / row_l;
    T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)row * p.o_ss;
#pragma unroll
    for (int i = 0; i < kOD; ++i) {
      const int d = q4 + 4 * i;
      if (d < D) og[(int64_t)d * p.o_sd] = fused_from_f32<T>(o[i] * inv);
    }
    if (p.lse && q4 == 0)
      p.lse[((int64_t)b * p.hq + h) * p.sq + row] =
          row_m == -INFINITY || row_l == 0.f ? -INFINITY : (row_m + log2f(row_l)) * FUSED_LN2;
  }
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
