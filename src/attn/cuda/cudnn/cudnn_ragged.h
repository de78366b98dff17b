/* Packed sequences (q_offsets, kv_offsets) through cuDNN: the ragged offsets
 * and lengths its graph reads, made on the device per call (cudnn_ragged.cu). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDNN_RAGGED_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDNN_RAGGED_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "attn/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Row i of out ([6][stride] int32, stride >= B + 1, on the device), from
 * a->seqs's device offsets: 0..3 the element offsets where each sequence
 * starts in q, out, k, v (offset x that tensor's row stride; [B+1]); 4 and 5
 * the query and key counts ([B]). Rows of an absent offset array are left
 * alone. Enqueued on stream. */
attn_status attn_cudnn_ragged_fill(const attn_args *a, int32_t *out, int64_t stride,
                                   cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
