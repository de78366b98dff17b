/* What every CUDA backend shares: errors that name the call and the status
 * (core/cuda_error.h), whether a device is usable, and device properties
 * read once. Callable from C and CUDA. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_COMMON_H
#define ATTNPROF_SRC_ATTN_CUDA_COMMON_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "attn/backend.h"
#include "core/cuda_error.h" /* attn_cuda_fail, ATTN_CUDA_TRY, ATTN_CUDA_CHECK_LAUNCH */

#ifdef __cplusplus
extern "C" {
#endif

/* The `available` hook of every CUDA backend: a device is present and the
 * runtime works. The answer is computed once. */
attn_status attn_cuda_available(char *why, size_t why_len);

/* Properties of a device, read once per device. NULL if it cannot be read. */
const struct cudaDeviceProp *attn_cuda_props(int device);

/* Device memory free now on `device` (0 if unknown). */
size_t attn_cuda_memory_free(int device);

#ifdef __cplusplus
}
#endif
#endif
