// Seeded uniform fill of device buffers for callers without CUDA headers
// (the attnprof command's serving grid): tens of GiB filled at the copy
// rate instead of element by element on the host.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "attn/cuda/common/cuda_common.h"
#include "attnprof/device.h"

// splitmix64 of (seed, index): the value of element i does not depend on
// the launch shape.
__device__ static float fill_value(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

// Grid-stride loop, one element per thread per step.
template <typename T>
__global__ void fill_uniform_kernel(T *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const float x = fill_value(seed, i);
    if constexpr (sizeof(T) == 4) p[i] = x;
    else if constexpr (__is_same(T, __half)) p[i] = __float2half(x);
    else p[i] = __float2bfloat16(x);
  }
}

extern "C" attn_status attn_cuda_fill_uniform(int device, void *p, attn_dtype dtype, size_t n,
                                              uint64_t seed) {
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = device;
  if (prev != device) ATTN_CUDA_TRY(cudaSetDevice(device));
  const unsigned threads = 256;  // grid-stride: enough blocks to fill any card, no more
  const size_t want = (n + threads - 1) / threads;
  const unsigned blocks = (unsigned)(want < 4096 ? (want ? want : 1) : 4096);
  switch (dtype) {
    case ATTN_DTYPE_F32:
      fill_uniform_kernel<<<blocks, threads>>>((float *)p, n, seed);
      break;
    case ATTN_DTYPE_F16:
      fill_uniform_kernel<<<blocks, threads>>>((__half *)p, n, seed);
      break;
    case ATTN_DTYPE_BF16:
      fill_uniform_kernel<<<blocks, threads>>>((__nv_bfloat16 *)p, n, seed);
      break;
    default:
      if (prev != device) cudaSetDevice(prev);
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                       "attn_cuda_fill_uniform: dtype %s is not "
                       "f32, f16 or bf16",
                       attn_dtype_name(dtype));
  }
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (prev != device) cudaSetDevice(prev);
  return err == cudaSuccess ? ATTN_STATUS_OK : attn_cuda_fail(err, "fill_uniform_kernel");
}

extern "C" size_t attn_cuda_memory_available(int device) { return attn_cuda_memory_free(device); }
