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

/* From a->seqs's device offsets, on the device: offs holds 4 rows of
 * `stride` (>= B + 1) entries, int64 when wide else int32: the element
 * offsets where each sequence starts in q, out, k, v (row offset x that
 * tensor's row stride; [B+1] each); lens holds 2 rows of `stride` int32: the
 * query and key counts ([B]). Rows of an absent offset array are left
 * alone. Enqueued on stream. */
attn_status attn_cudnn_ragged_fill(const attn_args *a, void *offs, int wide, int32_t *lens,
                                   int64_t stride, cudaStream_t stream);
#ifdef __cplusplus
}
#endif
#endif
