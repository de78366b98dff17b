/* What the split-KV decode kernel (decode_kernel.cuh) takes: one plain struct
 * filled from attn_args + attn_seqs by decode_cuda.cu, passed by value.
 * Strides in elements; the head dim has stride 1. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_PARAMS_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_PARAMS_H

#include <stdint.h>

/* Most splits of one sequence's keys (the combine holds 4 lse per lane). */
#define DECODE_MAX_SPLITS 128

enum { DECODE_KV_DENSE, DECODE_KV_PACKED, DECODE_KV_CACHE, DECODE_KV_PAGED };

typedef struct {
  const void *q, *k, *v; /* q [Bq, Hq, q_rows, D]; k, v [Bk, Hkv, sk, D] (pools: Bk = pages) */
  void *o;               /* shaped like q */
  float *lse;            /* [Bq, Hq, q_rows] or NULL */
  int64_t q_sb, q_sh, q_ss, k_sb, k_sh, k_ss, v_sb, v_sh, v_ss, o_sb, o_sh, o_ss;
  const int32_t *q_off;  /* [B+1] device, or NULL (dense q) */
  const int32_t *kv_off; /* [B+1] (DECODE_KV_PACKED) */
  const int32_t *kv_len; /* [B] (CACHE, PAGED) */
  const int32_t *table;  /* [B, table_stride] (PAGED) */
  int64_t table_stride;
  int batch, hq, hkv, group, q_rows, sk, page_size, kv_kind;
  int causal;       /* bottom-right per sequence */
  float scale_log2; /* scale * log2(e) */
  int splits, row_groups;
  int cl_chunk;      /* > 0: the cluster kernel (decode_cluster.cuh), keys per CTA */
  float *o_part;     /* [splits, part_rows, D] when splits > 1 */
  float *lse_part;   /* [splits, part_rows] (log2 domain: lse / ln 2) */
  int64_t part_rows; /* Bq * q_rows * Hq */
} attn_decode_params;

#endif
