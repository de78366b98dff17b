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
/* The split count it would use (for the bench's table), -1 if refused;
 * *cluster (when not NULL): the cluster size when the splits run as one
 * cluster kernel (decode_cluster.cuh), else 0. */
int attn_decode_cuda_splits(const attn_args *a, int *cluster);
/* 1 when the device runs thread-block clusters (sm_90+): the cluster kernel's. */
int attn_decode_cuda_cluster_capable(int device);
/* 1 when the cluster kernel copies K/V by bulk copies, 0 by 16-byte
 * cp.async, for paged (paged = 1) or unpaged K/V: the default (bulk for
 * pages) or ATTNPROF_DECODE_CL_BULK. */
int attn_decode_cuda_cluster_bulk(int paged);
/* 1 when the cluster kernel splits P V by columns (no merge between its
 * warps), 0 by keys: the default or ATTNPROF_DECODE_CL_COLS. */
int attn_decode_cuda_cluster_cols(void);
/* 1 when the cluster kernel copies V in two cp.async groups and runs P V on
 * the first while the second lands: the default (0) or ATTNPROF_DECODE_CL_VHALF. */
int attn_decode_cuda_cluster_vhalf(void);

#ifdef __cplusplus
}
#endif
#endif
