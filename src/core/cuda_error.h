/* The error line of a failed CUDA runtime call, for every layer that calls
 * the runtime (engine, measurement, context parallelism): it names the call
 * and the status. Callable from C and CUDA; CUDA builds only. */
#ifndef ATTNPROF_SRC_CORE_CUDA_ERROR_H
#define ATTNPROF_SRC_CORE_CUDA_ERROR_H

#include <cuda_runtime_api.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets attn_last_error() to "CALL failed: STATUS_NAME (text)" and returns
 * ATTN_STATUS_OUT_OF_MEMORY or ATTN_STATUS_BACKEND_ERROR. */
attn_status attn_cuda_fail(cudaError_t err, const char *call);

#define ATTN_CUDA_TRY(call)                                                \
  do {                                                                     \
    cudaError_t attn_err_ = (call);                                        \
    if (attn_err_ != cudaSuccess) return attn_cuda_fail(attn_err_, #call); \
  } while (0)

/* After a kernel launch: its error, naming the kernel (a string literal). */
#define ATTN_CUDA_CHECK_LAUNCH(kernel_name)                                                   \
  do {                                                                                        \
    cudaError_t attn_err_ = cudaGetLastError();                                               \
    if (attn_err_ != cudaSuccess) return attn_cuda_fail(attn_err_, "launch of " kernel_name); \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
