/* What the cudnn backend takes of several sequences (attn_seqs), said
 * before any cuDNN call: plain host C over the validated view (seqs.h), so
 * the refusals are tested on the CPU (tests/attn_gpu_cudnn) against any
 * cuDNN version number.
 *
 * Taken (the SEQS graph of cudnn_graph.h): dense or packed queries against a
 * paged cache (cuDNN 9.5+) or a contiguous cache with lengths, and packed
 * queries with packed K/V (varlen prefill), through ragged offsets; causal
 * none or bottom-right, GQA. Refused, each with its reason: packed queries
 * with one dense K/V per sequence, lse with packed queries, packed tensors
 * past int32 element offsets before cuDNN 9.6, page sizes that are not powers of 2, paged with
 * D > 128 before cuDNN 9.10, bottom-right with sizes off 64 before 9.6, rows
 * that see no key, table entries cuDNN might read that are not pages. Where
 * cuDNN itself refuses a graph, the plan's build says so (cudnn_cuda.c). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDNN_SEQS_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDNN_SEQS_H

#include <stddef.h>

#include "attn/seqs.h"

/* ATTN_STATUS_OK, or UNSUPPORTED with the reason in why. version is
 * cudnnGetVersion()'s (91400 for 9.14.0); v is attn_seqs_view_make's (its
 * tables are checked only where have_tables). */
attn_status attn_cudnn_seqs_why_not(size_t version, const attn_args *a, const attn_seqs_view *v,
                                    char *why, size_t len);

/* Writes the why-not reason and returns ATTN_STATUS_UNSUPPORTED: every cudnn
 * refusal, dense or several-sequence, goes through it. */
attn_status attn_cudnn_refuse(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Packed sequences' ragged offsets: int64 from cuDNN 9.6 (where
 * cudnn-frontend switches), int32 before. */
#define ATTN_CUDNN_RAGGED_WIDE(version) ((version) >= 90600)

/* The key length cuDNN's graph is built for: max_pages x page_size (paged),
 * the longest sequence (packed) or S_cap (contiguous). */
int64_t attn_cudnn_seqs_reach(const attn_seqs_view *v);

#endif
