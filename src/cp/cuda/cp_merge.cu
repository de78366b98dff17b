// The fp32 merge of context parallelism's partial results (see cp_plan.h for
// the arithmetic, attn_cp_merge_host for the same on the host).
//
// Tile: one warp per query row (B*Hq*rows rows), 4 warps per block; each lane
// reads D/32 elements of the partial output and updates the fp32 accumulator
// in place. Memory-bound: per row it reads D partial elements and D + 1
// floats, writes D + 1 floats. Its speed: docs/design/context-parallel.md.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "core/cuda_error.h"
#include "core/error.h"
#include "cp/cuda/cp_cuda.h"

// Kernels are static (not in an anonymous namespace) so that traces name
// them _ZL14cp_merge_kernel... rather than _ZN44_GLOBAL__N__<hash>...
constexpr int kWarps = 4;

template <typename T>
static __device__ float to_f32(T v);
template <>
__device__ float to_f32<float>(float v) {
  return v;
}
template <>
__device__ float to_f32<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ float to_f32<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
static __device__ T from_f32(float v);
template <>
__device__ float from_f32<float>(float v) {
  return v;
}
template <>
__device__ __half from_f32<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

static __global__ void cp_init_kernel(float *acc_o, int64_t n_o, float *acc_lse, int64_t n_l) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_o + n_l;
       i += (int64_t)gridDim.x * blockDim.x) {
    if (i < n_o) acc_o[i] = 0.0f;
    else acc_lse[i - n_o] = -INFINITY;
  }
}

template <typename T>
static __global__ void cp_merge_kernel(float *acc_o, float *acc_lse, int64_t bh, int64_t rows,
                                       int64_t d, int64_t q0, int64_t nq, const T *part_o,
                                       const float *part_lse) {
  int64_t row = blockIdx.x * (int64_t)kWarps + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= bh * nq) return;
  int64_t x = row / nq, i = row % nq;
  float lp = part_lse[row];
  if (lp == -INFINITY) return;  // the block hid every key of this row
  float *lse = &acc_lse[x * rows + q0 + i];
  float la = *lse, hi = fmaxf(la, lp);
  float lnew = hi + log1pf(expf(fminf(la, lp) - hi));
  float wa = expf(la - lnew), wp = expf(lp - lnew);
  float *o = &acc_o[(x * rows + q0 + i) * d];
  const T *p = &part_o[row * d];
  for (int64_t e = lane; e < d; e += 32) o[e] = wa * o[e] + wp * to_f32<T>(p[e]);
  __syncwarp();
  if (lane == 0) *lse = lnew;
}

template <typename T>
static __global__ void cp_finish_kernel(const float *acc_o, const float *acc_lse, int64_t n_o,
                                        int64_t d, T *out, float *lse) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_o;
       i += (int64_t)gridDim.x * blockDim.x) {
    out[i] = from_f32<T>(acc_o[i]);
    if (lse && i % d == 0) lse[i / d] = acc_lse[i / d];
  }
}

static unsigned grid_for(int64_t n, int threads) {
  int64_t g = (n + threads - 1) / threads;
  return (unsigned)(g < 1 ? 1 : g > 65535 * 16 ? 65535 * 16 : g);
}

extern "C" attn_status attn_cp_init_launch(float *acc_o, int64_t n_o, float *acc_lse, int64_t n_l,
                                           void *stream) {
  cp_init_kernel<<<grid_for(n_o + n_l, 256), 256, 0, (cudaStream_t)stream>>>(acc_o, n_o, acc_lse,
                                                                             n_l);
  ATTN_CUDA_CHECK_LAUNCH("cp_init_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cp_merge_launch(float *acc_o, float *acc_lse, int64_t bh, int64_t rows,
                                            int64_t d, int64_t q0, int64_t nq, const void *part_o,
                                            attn_dtype dt, const float *part_lse, void *stream) {
  int64_t blocks = (bh * nq + kWarps - 1) / kWarps;
  if (blocks <= 0) return ATTN_STATUS_OK;
  if (blocks > 0x7fffffff) return attn_fail(ATTN_STATUS_UNSUPPORTED, "cp merge: too many rows");
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == ATTN_DTYPE_BF16)
    cp_merge_kernel<<<(unsigned)blocks, kWarps * 32, 0, s>>>(
        acc_o, acc_lse, bh, rows, d, q0, nq, (const __nv_bfloat16 *)part_o, part_lse);
  else if (dt == ATTN_DTYPE_F16)
    cp_merge_kernel<<<(unsigned)blocks, kWarps * 32, 0, s>>>(acc_o, acc_lse, bh, rows, d, q0, nq,
                                                             (const __half *)part_o, part_lse);
  else
    cp_merge_kernel<<<(unsigned)blocks, kWarps * 32, 0, s>>>(acc_o, acc_lse, bh, rows, d, q0, nq,
                                                             (const float *)part_o, part_lse);
  ATTN_CUDA_CHECK_LAUNCH("cp_merge_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cp_finish_launch(const float *acc_o, const float *acc_lse, int64_t bh,
                                             int64_t rows, int64_t d, void *out, attn_dtype dt,
                                             float *lse, void *stream) {
  int64_t n_o = bh * rows * d;
  if (n_o <= 0) return ATTN_STATUS_OK;
  unsigned g = grid_for(n_o, 256);
  cudaStream_t s = (cudaStream_t)stream;
  if (dt == ATTN_DTYPE_BF16)
    cp_finish_kernel<<<g, 256, 0, s>>>(acc_o, acc_lse, n_o, d, (__nv_bfloat16 *)out, lse);
  else if (dt == ATTN_DTYPE_F16)
    cp_finish_kernel<<<g, 256, 0, s>>>(acc_o, acc_lse, n_o, d, (__half *)out, lse);
  else cp_finish_kernel<<<g, 256, 0, s>>>(acc_o, acc_lse, n_o, d, (float *)out, lse);
  ATTN_CUDA_CHECK_LAUNCH("cp_finish_kernel");
  return ATTN_STATUS_OK;
}
