/* What every CUDA backend shares: errors that name the call and the status,
 * whether a device is usable, and device properties read once. Callable from
 * C and CUDA. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_COMMON_H
#define ATTNPROF_SRC_ATTN_CUDA_COMMON_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "attn/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets attn_last_error() to "CALL failed: STATUS_NAME (text)" and returns
 * ATTN_STATUS_OUT_OF_MEMORY or ATTN_STATUS_BACKEND_ERROR. */
attn_status attn_cuda_fail(cudaError_t err, const char *call);

#define ATTN_CUDA_TRY(call)                                      \
  do {                                                           \
    cudaError_t attn_err_ = (call);                              \
    if (attn_err_ != cudaSuccess) return attn_cuda_fail(attn_err_, #call); \
  } while (0)

/* After a kernel launch: its error, naming the kernel (a string literal). */
#define ATTN_CUDA_CHECK_LAUNCH(kernel_name)                                        \
  do {                                                                             \
    cudaError_t attn_err_ = cudaGetLastError();                                   \
    if (attn_err_ != cudaSuccess) return attn_cuda_fail(attn_err_, "launch of " kernel_name); \
  } while (0)

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
