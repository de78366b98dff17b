// The floor of a decode cell under the serving bench's timing (graph replay
// of 20 calls on the same buffers, where small K/V stay in L2): kernels that
// do only the data movement every attention kernel must do, loaded by
// serving_vs_torch.py through ctypes and timed exactly as the attention
// calls are. Any attention call takes at least as long as the fastest of
// them over the same bytes (up to a faster read kernel than these).
//   floor_read   reads the given buffers once (K and V), writes nothing
//                (one word in the rare case the fold hits a constant);
//   floor_rw     reads q, k, v and writes o (o = q, so the write is real);
//   floor_empty  one CTA that does nothing: the launch alone.
// kU = 16-byte loads per thread, all issued before any is used; 256
// threads per CTA, grid sized so each thread does exactly kU loads.
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#define FLOOR_THREADS 256

template <int kU>
__global__ void __launch_bounds__(FLOOR_THREADS)
    floor_read_kernel(const uint4 *__restrict__ a, size_t na, const uint4 *__restrict__ b,
                      size_t nb, const uint4 *__restrict__ q, uint4 *__restrict__ o, size_t nq,
                      unsigned *sink) {
  const size_t n = na + nb, stride = (size_t)gridDim.x * blockDim.x;
  const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  uint4 x[kU];
#pragma unroll
  for (int u = 0; u < kU; u++) {
    const size_t i = i0 + u * stride;
    x[u] = i < na ? __ldg(a + i) : i < n ? __ldg(b + (i - na)) : make_uint4(0, 0, 0, 0);
  }
  unsigned acc = 0;
#pragma unroll
  for (int u = 0; u < kU; u++) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
  if (i0 < nq) o[i0] = __ldg(q + i0);     // floor_rw only (nq = 0 otherwise); nq <= stride
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads; a hit writes one word, harmless
}

__global__ void floor_empty_kernel(void) {}

template <int kU>
static int launch(const void *a, size_t abytes, const void *b, size_t bbytes, const void *q,
                  void *o, size_t qbytes, unsigned *sink, cudaStream_t s) {
  const size_t n = (abytes + bbytes) / 16, per = (size_t)FLOOR_THREADS * kU;
  size_t blocks = (n + per - 1) / per;
  const size_t nq = qbytes / 16;
  if (blocks * FLOOR_THREADS < nq) blocks = (nq + FLOOR_THREADS - 1) / FLOOR_THREADS;
  if (blocks < 1) blocks = 1;
  floor_read_kernel<kU><<<(unsigned)blocks, FLOOR_THREADS, 0, s>>>(
      (const uint4 *)a, abytes / 16, (const uint4 *)b, bbytes / 16, (const uint4 *)q, (uint4 *)o,
      nq, sink);
  return cudaGetLastError() != cudaSuccess;
}

// unroll: 2 or 8 loads per thread. Byte counts are multiples of 16.
extern "C" int floor_read(const void *k, size_t kbytes, const void *v, size_t vbytes,
                          unsigned *sink, int unroll, void *stream) {
  return unroll == 8 ? launch<8>(k, kbytes, v, vbytes, NULL, NULL, 0, sink, (cudaStream_t)stream)
                     : launch<2>(k, kbytes, v, vbytes, NULL, NULL, 0, sink, (cudaStream_t)stream);
}

extern "C" int floor_rw(const void *q, void *o, size_t qbytes, const void *k, size_t kbytes,
                        const void *v, size_t vbytes, unsigned *sink, int unroll, void *stream) {
  return unroll == 8 ? launch<8>(k, kbytes, v, vbytes, q, o, qbytes, sink, (cudaStream_t)stream)
                     : launch<2>(k, kbytes, v, vbytes, q, o, qbytes, sink, (cudaStream_t)stream);
}

extern "C" int floor_empty(void *stream) {
  floor_empty_kernel<<<1, 32, 0, (cudaStream_t)stream>>>();
  return cudaGetLastError() != cudaSuccess;
}
