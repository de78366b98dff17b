/* cuBLAS opened at run time (dlopen) by the first backend that needs it, so a
 * process that runs no cuBLAS backend (`attnprof help`, the CPU, flash) maps
 * none of libcublas/libcublasLt, and inside PyTorch the copy it already
 * loaded is reused by soname.
 *
 * Include this after cublas_v2.h: the few cuBLAS functions the library calls
 * become calls through attn_blas_fns, so the call sites read as plain cuBLAS.
 * attn_blas_load() must have succeeded before any of them runs (ctx_init
 * calls it before cublasCreate; every other call needs a handle).
 *
 * Which file: $ATTNPROF_CUBLAS_LIB when set (nothing else is tried), else
 * libcublas.so.<major of the headers>, then the same under the toolkit's
 * library folder seen at build time. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_BLAS_LOADER_H
#define ATTNPROF_SRC_ATTN_CUDA_BLAS_LOADER_H

#include <cublas_v2.h>

#include "attnprof/attn.h"

#define ATTN_CUBLAS_LIB_ENV "ATTNPROF_CUBLAS_LIB"

typedef struct {
  cublasStatus_t (*create)(cublasHandle_t *);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_workspace)(cublasHandle_t, void *, size_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  const char *(*status_name)(cublasStatus_t);
  const char *(*status_string)(cublasStatus_t);
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void *, const void *, cudaDataType,
                                            int, long long, const void *, cudaDataType, int,
                                            long long, const void *, void *, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
} attn_blas_table;

extern attn_blas_table attn_blas_fns;

/* Opens libcublas once per process. OK, or UNSUPPORTED with attn_last_error()
 * saying what was tried and what to set. Thread-safe. */
attn_status attn_blas_load(void);

#undef cublasCreate
#undef cublasDestroy
#undef cublasSetStream
#undef cublasSetWorkspace
#define cublasCreate (*attn_blas_fns.create)
#define cublasDestroy (*attn_blas_fns.destroy)
#define cublasSetStream (*attn_blas_fns.set_stream)
#define cublasSetWorkspace (*attn_blas_fns.set_workspace)
#define cublasSetMathMode (*attn_blas_fns.set_math_mode)
#define cublasGetStatusName (*attn_blas_fns.status_name)
#define cublasGetStatusString (*attn_blas_fns.status_string)
#define cublasGemmStridedBatchedEx (*attn_blas_fns.gemm_strided_batched_ex)

#endif
