/* flash_cuda's path for several sequences (attn_seqs): the split-KV decode
 * kernel (decode_kernel.cuh). Callable from C and CUDA. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_CUDA_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_CUDA_H

#include <stddef.h>

#include "attn/backend.h"
#include "attn/cuda/baselines/seqs_gather.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the decode kernel takes these (args->seqs set, already checked). */
attn_status attn_decode_cuda_why_not(const attn_args *a, char *why, size_t len);
/* Runs it: validates the tables (a host copy unless trusted), picks the
 * instance and the split count, launches (and combines). Unpaged prefill
 * (128+ query rows in some sequence, B <= 64) runs `dense` once per
 * sequence on views instead, when dense is not NULL. */
attn_status attn_decode_cuda_forward(attn_ctx *ctx, const attn_args *a,
                                     attn_cuda_dense_fn dense);
/* The split count it would use (for the bench's table), -1 if refused. */
int attn_decode_cuda_splits(const attn_args *a);

#ifdef __cplusplus
}
#endif
#endif
