/* attn_cuda_fail (cuda_error.h). Apart from the rest of the core because it
 * calls the CUDA runtime, which the injection library must not link. */
#include "core/cuda_error.h"

attn_status attn_cuda_fail(cudaError_t err, const char *call) {
  attn_status st =
      err == cudaErrorMemoryAllocation ? ATTN_STATUS_OUT_OF_MEMORY : ATTN_STATUS_BACKEND_ERROR;
  return attn_fail(st, "%s failed: %s (%s)", call, cudaGetErrorName(err), cudaGetErrorString(err));
}
