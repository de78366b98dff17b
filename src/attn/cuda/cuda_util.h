/* Device memory, copies and event timing for the CLI, the tests and the
 * benches. They live in the library so that one CUDA runtime (the library's,
 * linked statically) serves the whole process: a second runtime linked into
 * a caller would hold its own state. No CUDA types appear here, so callers
 * need no CUDA headers; streams are the cudaStream_t of attn_args.stream.
 * Errors name the CUDA call and its status (attn_last_error()). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDA_UTIL_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDA_UTIL_H

#include <stddef.h>

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

/* Gives back the device memory the S x S backends keep between calls on
 * this thread (their scratch and cached masks), e.g. before another library
 * needs it. */
void attn_cuda_trim(void);

/* CUDA events on one device: marks recorded on a stream, elapsed times read
 * after the last one completes. */
typedef struct attn_cuda_timer attn_cuda_timer;

attn_status attn_cuda_timer_create(int device, int n_marks, attn_cuda_timer **out);
attn_status attn_cuda_timer_mark(attn_cuda_timer *t, int i, void *stream);
/* Microseconds from mark i to mark j (waits for mark j). */
attn_status attn_cuda_timer_us(attn_cuda_timer *t, int i, int j, double *us);
void attn_cuda_timer_destroy(attn_cuda_timer *t);

#ifdef __cplusplus
}
#endif
#endif
