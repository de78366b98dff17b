// Kernels of bench_host_ops, launched through the bench's own CUDA runtime
// (the library's is linked statically and not exported): an empty kernel,
// the floor of one cudaLaunchKernel, and a spin kernel that keeps the device
// busy so that the timed calls only enqueue ("queued").
#include <cuda_runtime_api.h>

__global__ void hops_empty_kernel(void) {}

__global__ void hops_spin_kernel(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}

extern "C" int hops_empty(cudaStream_t s) {
  hops_empty_kernel<<<1, 32, 0, s>>>();
  return cudaGetLastError() != cudaSuccess;
}

// About `us` microseconds at the H200's ~1.98 GHz boost clock (longer when
// the clock is lower: it only has to outlast the timed enqueues).
extern "C" int hops_spin(cudaStream_t s, double us) {
  hops_spin_kernel<<<1, 32, 0, s>>>((long long)(us * 1980.0));
  return cudaGetLastError() != cudaSuccess;
}
