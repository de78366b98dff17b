/* Buffers in the problem's memory, host or CUDA device (cli_cuda.h): what
 * compare --serving makes its K/V pools, queries and tables with, so that
 * the grid's logic runs the same on the CPU (in CI) and on a GPU. */
#include <stdlib.h>
#include <string.h>

#include "attnprof/testing.h"
#include "core/error.h"
#include "cli/cli_cuda.h"
#ifdef ATTNPROF_HAVE_CUDA
#include "attnprof/device.h"
#endif

#ifdef ATTNPROF_HAVE_CUDA
#define ON_DEVICE(device, call) \
  if ((device) >= 0) return call
#else
#define ON_DEVICE(device, call) \
  if ((device) >= 0)            \
  return attn_fail(ATTN_STATUS_NO_DEVICE, "cuda:%d: this build has no CUDA backends", device)
#endif

attn_status cli_buf_alloc(int device, size_t bytes, void **p) {
  *p = NULL;
  ON_DEVICE(device, attn_cuda_malloc(device, bytes, p));
  if (!(*p = malloc(bytes ? bytes : 1)))
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
  return ATTN_STATUS_OK;
}

void cli_buf_free(int device, void *p) {
#ifdef ATTNPROF_HAVE_CUDA
  if (device >= 0) {
    attn_cuda_free(device, p);
    return;
  }
#endif
  if (device < 0) free(p);
}

/* The host's twin of the device fill (src/testing/fill.cu):
 * splitmix64 of (seed, i). */
static double uniform_at(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

attn_status cli_buf_fill_uniform(int device, void *p, attn_dtype dt, size_t n, uint64_t seed) {
  ON_DEVICE(device, attn_cuda_fill_uniform(device, p, dt, n, seed));
  attn_tensor t = attn_tensor_bhsd(p, dt, ATTN_DEVICE_CPU, 1, 1, 1, (int64_t)n);
  for (size_t i = 0; i < n; i++) attn_tensor_set(&t, 0, 0, 0, (int64_t)i, uniform_at(seed, i));
  return ATTN_STATUS_OK;
}

attn_status cli_buf_upload(int device, void *dst, const void *src, size_t bytes) {
  ON_DEVICE(device, attn_cuda_to_device(device, dst, src, bytes));
  memcpy(dst, src, bytes);
  return ATTN_STATUS_OK;
}

double cli_mem_available(int device) {
#ifdef ATTNPROF_HAVE_CUDA
  if (device >= 0) return (double)attn_cuda_memory_available(device);
#endif
  return device >= 0 ? 0 : (double)attn_host_memory_available();
}
