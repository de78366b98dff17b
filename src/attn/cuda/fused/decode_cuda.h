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
attn_status attn_decode_cuda_forward(attn_ctx *ctx, const attn_args *a, attn_cuda_dense_fn dense);
/* The split count it would use (the tests and the serving bench report it),
 * -1 if refused; *cluster (when not NULL): the cluster size when the splits
 * run as one cluster kernel (decode_cluster.cuh), else 0. ctx: the handle
 * whose launch record answers the occupancy questions, or NULL (the driver
 * is asked, nothing recorded). */
int attn_decode_cuda_splits(attn_ctx *ctx, const attn_args *a, int *cluster);
/* 1 when the device runs thread-block clusters (sm_90+): the cluster kernel's. */
int attn_decode_cuda_cluster_capable(int device);

#ifdef __cplusplus
}
#endif
#endif
