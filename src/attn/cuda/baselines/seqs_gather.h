/* naive, naive_inplace and math on CUDA for several sequences (attn_seqs):
 * one dense forward per sequence, its queries and output as views of q and
 * out, its keys as views of k and v or, in a paged cache, gathered into a
 * contiguous buffer first by gather_kv_pages_kernel (the copy shows in the
 * profile as that kernel). Callable from C. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_BASELINES_SEQS_GATHER_H
#define ATTNPROF_SRC_ATTN_CUDA_BASELINES_SEQS_GATHER_H

#include "attn/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef attn_status (*attn_cuda_dense_fn)(attn_ctx *ctx, const attn_args *a);

/* Runs a (with a->seqs) one sequence at a time through dense. The tables
 * are copied to the host (the loop is on the host), trusted or not. */
attn_status attn_cuda_seqs_forward(attn_ctx *ctx, const attn_args *a, attn_cuda_dense_fn dense);

/* The same for a dense forward that keeps no state between launches (no
 * shared scratch): with unpaged K/V the sequences, longest first, go round
 * the caller's stream and the context's side streams (forked from and
 * joined back to the caller's stream by events), so that one sequence's
 * launch fills the SMs another's tail leaves idle. Serial while the stream
 * is being captured. */
attn_status attn_cuda_seqs_forward_lanes(attn_ctx *ctx, const attn_args *a,
                                         attn_cuda_dense_fn dense);

#ifdef __cplusplus
}
#endif
#endif
