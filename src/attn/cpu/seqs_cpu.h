/* Several sequences on the CPU (attn_seqs): each sequence runs as one dense
 * problem of the backend's own forward. Its queries and output are views of
 * q and out (no copy); its keys are views of k and v, except in a paged
 * cache, which a backend either reads in place (flash, through
 * attn_cpu_pages) or has gathered into a contiguous buffer first (naive and
 * math: one COPY op "gather_kv" per sequence in the profile). */
#ifndef ATTNPROF_SRC_ATTN_CPU_SEQS_CPU_H
#define ATTNPROF_SRC_ATTN_CPU_SEQS_CPU_H

#include "attn/backend.h"

/* One sequence's keys in a paged cache: key j is row j % page_size of page
 * pages[j / page_size] of the pools. */
typedef struct {
  const attn_tensor *k_pool, *v_pool; /* {pages, Hkv, page_size, D} */
  const int32_t *pages;
  int64_t page_size;
} attn_cpu_pages;

typedef attn_status (*attn_cpu_dense_fn)(attn_ctx *ctx, const attn_args *a);
/* A forward that reads a paged sequence in place; a->k and a->v give only the
 * shape [1, Hkv, n_kv, D] there. */
typedef attn_status (*attn_cpu_paged_fn)(attn_ctx *ctx, const attn_args *a,
                                         const attn_cpu_pages *pg);

/* Runs a (with a->seqs) one sequence at a time. paged NULL: pages are
 * gathered for dense. */
attn_status attn_cpu_seqs_forward(attn_ctx *ctx, const attn_args *a, attn_cpu_dense_fn dense,
                                  attn_cpu_paged_fn paged);

#endif
