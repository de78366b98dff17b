/* What the fused kernels (flash, efficient) take: one plain struct filled from
 * attn_args by attn_fused_params_fill, passed by value to the kernel. Strides
 * are in elements; the last dimension of q, k, v and out has stride 1 for the
 * tensor-core kernels (the scalar kernel also takes d strides). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_PARAMS_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_PARAMS_H

#include <stdint.h>

#include "attn/cuda/fused/hopper/ws_sched.h"
#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_FUSED_MASK_NONE = 0, ATTN_FUSED_MASK_BOOL = 1, ATTN_FUSED_MASK_ADD = 2 };

typedef struct {
  const void *q, *k, *v; /* [B, Hq|Hkv, S, D] through the strides below */
  void *o;               /* [B, Hq, Sq, D] */
  float *lse;            /* [B, Hq, Sq] contiguous, natural log; NULL: none */
  const void *mask;      /* [B|1, H|1, Sq, Sk]; NULL: none */
  int64_t q_sb, q_sh, q_ss, q_sd;
  int64_t k_sb, k_sh, k_ss, k_sd;
  int64_t v_sb, v_sh, v_ss, v_sd;
  int64_t o_sb, o_sh, o_ss, o_sd;
  int64_t m_sb, m_sh, m_sq, m_sk; /* 0 broadcasts */
  int b, hq, hkv, sq, sk, d;      /* d: the true head dim */
  int mask_kind;                  /* ATTN_FUSED_MASK_* */
  int mask_dtype;                 /* attn_dtype of an additive mask */
  int mask_vec;                   /* mask rows copyable as 16-byte chunks */
  int causal;                     /* 0 or 1 */
  int causal_off;                 /* key j visible to query i when j <= i + off */
  float scale;                    /* softmax scale (true D) */
  float scale_log2;               /* scale * log2(e) */
  ws_sched ws;                    /* ws kernel: its tile schedule (made by its launcher) */
  attn_ctx *ctx;                  /* host only: the handle (its cache keeps TMA maps) */
} attn_fused_params;

#ifdef __CUDACC__
#define ATTN_FUSED_HD __host__ __device__
#else
#define ATTN_FUSED_HD
#endif

/* Bytes per mask element. */
static inline ATTN_FUSED_HD int attn_fused_mask_esize(const attn_fused_params *p) {
  return p->mask_kind == ATTN_FUSED_MASK_BOOL ? 1 : p->mask_dtype == ATTN_DTYPE_F32 ? 4 : 2;
}

/* Fills p from validated args (attn_args_check already passed). */
void attn_fused_params_fill(const attn_args *a, attn_fused_params *p);

/* 1 when every q/k/v/out pointer is 16-byte aligned, the last dims have stride
 * 1 and the other strides are multiples of 8 elements: the tensor-core
 * kernels' 16-byte copies. Otherwise writes which tensor breaks it into why. */
int attn_fused_vector_ok(const attn_args *a, char *why, size_t why_len);

/* Device checks shared by both backends: compute capability >= 8.0 (bf16
 * mma.sync), grid limits (B and Hq <= 65535). */
attn_status attn_fused_device_ok(const attn_args *a, const char *backend, char *why,
                                 size_t why_len);

/* The efficient backend with its scalar (SIMT) kernel forced, for tests. */
attn_status attn_efficient_cuda_run_scalar(attn_ctx *ctx, const attn_args *a);

#ifdef __cplusplus
}
#endif
#endif
