/* attnprof device utilities: device memory, copies and event timing, for
 * callers that have no CUDA headers of their own (the attnprof command, the
 * benches, bindings). They use the library's CUDA runtime, so a caller holds
 * no second one. Streams are the cudaStream_t of attn_args.stream. Errors name
 * the CUDA call and its status (attn_last_error()). Present in builds with
 * CUDA (ATTNPROF_HAVE_CUDA); in a CPU-only build the library has none. */
#ifndef ATTNPROF_DEVICE_H
#define ATTNPROF_DEVICE_H

#include <stddef.h>

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* OK when a CUDA device can be used; otherwise NO_DEVICE and the reason. */
ATTN_API attn_status attn_cuda_probe(char *why, size_t why_len);
/* "NVIDIA H200" (or "?"). */
ATTN_API const char *attn_cuda_device_name(int device);

ATTN_API attn_status attn_cuda_malloc(int device, size_t bytes, void **out);
ATTN_API void attn_cuda_free(int device, void *p);
ATTN_API attn_status attn_cuda_to_device(int device, void *dst, const void *src, size_t bytes);
ATTN_API attn_status attn_cuda_to_host(int device, void *dst, const void *src, size_t bytes);
ATTN_API attn_status attn_cuda_fill_bytes(int device, void *p, int byte, size_t bytes);
ATTN_API attn_status attn_cuda_synchronize(int device);

/* CUDA events on one device: marks recorded on a stream, elapsed times read
 * after the last one completes. */
typedef struct attn_cuda_timer attn_cuda_timer;

ATTN_API attn_status attn_cuda_timer_create(int device, int n_marks, attn_cuda_timer **out);
ATTN_API attn_status attn_cuda_timer_mark(attn_cuda_timer *t, int i, void *stream);
/* Microseconds from mark i to mark j (waits for mark j). */
ATTN_API attn_status attn_cuda_timer_us(attn_cuda_timer *t, int i, int j, double *us);
ATTN_API void attn_cuda_timer_destroy(attn_cuda_timer *t);

#ifdef __cplusplus
}
#endif
#endif
