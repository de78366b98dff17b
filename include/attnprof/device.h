/* The test kit's device half (attnprof/testing.h; not installed, not
 * exported by libattnprof.so): device memory, copies, fills and event timing
 * for callers that have no CUDA headers of their own (the attnprof command,
 * the tests, the benches), and the roofline's yardsticks. They use the
 * library's CUDA runtime, so a caller holds no second one. Streams are the
 * cudaStream_t of attn_args.stream. Errors name the CUDA call and its status
 * (attn_last_error()). The device functions are present in builds with CUDA
 * (ATTNPROF_HAVE_CUDA); the yardsticks in every build. */
#ifndef ATTNPROF_DEVICE_H
#define ATTNPROF_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* OK when a CUDA device can be used; otherwise NO_DEVICE and the reason. */
attn_status attn_cuda_probe(char *why, size_t why_len);
/* "NVIDIA H200" (or "?"). */
const char *attn_cuda_device_name(int device);

attn_status attn_cuda_malloc(int device, size_t bytes, void **out);
void attn_cuda_free(int device, void *p);
attn_status attn_cuda_to_device(int device, void *dst, const void *src, size_t bytes);
attn_status attn_cuda_to_host(int device, void *dst, const void *src, size_t bytes);
attn_status attn_cuda_fill_bytes(int device, void *p, int byte, size_t bytes);
attn_status attn_cuda_synchronize(int device);
/* n elements of dtype (f32, f16, bf16) at p set to seeded uniform values in
 * [-1, 1): element i is a hash of (seed, i), the same for any launch shape.
 * Returns once the fill is done. */
attn_status attn_cuda_fill_uniform(int device, void *p, attn_dtype dtype, size_t n, uint64_t seed);
/* Free device memory in bytes (cudaMemGetInfo); 0 when it cannot be read. */
size_t attn_cuda_memory_available(int device);

/* CUDA events on one device: marks recorded on a stream, elapsed times read
 * after the last one completes. */
typedef struct attn_cuda_timer attn_cuda_timer;

attn_status attn_cuda_timer_create(int device, int n_marks, attn_cuda_timer **out);
attn_status attn_cuda_timer_mark(attn_cuda_timer *t, int i, void *stream);
/* Microseconds from mark i to mark j (waits for mark j). */
attn_status attn_cuda_timer_us(attn_cuda_timer *t, int i, int j, double *us);
void attn_cuda_timer_destroy(attn_cuda_timer *t);

/* The roofline's two yardsticks (present in every build; device < 0 is the
 * host). attn_copy_bandwidth: the median over `reps` copies of `bytes` (after
 * one untimed copy) of bytes read + written per second, in GB/s: a
 * device-to-device cudaMemcpy timed by CUDA events on a GPU, memcpy timed by
 * the wall clock on the host. */
attn_status attn_copy_bandwidth(int device, size_t bytes, int reps, double *gbps);
/* What a measured bandwidth is kept under: "NVIDIA H200; driver 12080" on a
 * GPU, "cpu: <model name>" on the host. */
attn_status attn_device_key(int device, char *buf, size_t len);
/* Dense matmul peak in TFLOP/s for inputs of dtype on the device, from a
 * stated table (*source names it); 0 when not known (the host: unknown). */
double attn_matmul_peak_tflops(int device, attn_dtype dtype, const char **source);
/* The matmul roof measured: a square cuBLAS GEMM (8192^3) on inputs of dtype,
 * f32 accumulation, median of 9 timed by CUDA events, in TFLOP/s. NO_DEVICE
 * on the host and in builds without CUDA. */
attn_status attn_matmul_tflops_measured(int device, attn_dtype dtype, double *tflops);

#ifdef __cplusplus
}
#endif
#endif
