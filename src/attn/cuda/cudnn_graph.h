/* The SDPA forward graph in cuDNN's backend API, in two forms:
 *
 *  COMPOSITE: the graph cuDNN's fused flash-attention engines match on every
 *    9.x release (the one cudnn-frontend emits for cuDNN < 9.21):
 *      S = Q Kᵀ (Kᵀ: K's last two dims and strides swapped, no copy)
 *      S = S * scale                                   (scale passed by value)
 *      causal: row = GEN_INDEX(2) [+ Sk - Sq], col = GEN_INDEX(3),
 *              S = (row >= col) ? S : -inf             (BINARY_SELECT)
 *      M = max_j S, E = exp(S - M), Z = sum_j E
 *      Stats = M + log Z        (natural log of the scaled scores = attn.h's
 *                                lse; virtual when no lse is asked for)
 *      P = E / Z (rounded to the I/O dtype), O = P V
 *  NODE: the dedicated OPERATION_SDPA_FWD node (cuDNN 9.13.1+), one op;
 *    on cuDNN < 9.21 it takes neither causal masks nor anything else but
 *    Q, K, V, scale and Stats.
 *
 * All tensors are 4-D [B, H, S, D] by strides, as the caller gave them. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_GRAPH_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_GRAPH_H

#include <stdint.h>

#include "attn/cuda/cudnn_desc.h"

typedef enum {
  ATTN_CUDNN_GRAPH_AUTO,      /* NODE first where it may apply, then COMPOSITE */
  ATTN_CUDNN_GRAPH_COMPOSITE,
  ATTN_CUDNN_GRAPH_NODE
} attn_cudnn_graph_kind;

/* Everything a plan depends on: the plan cache's key. Fill after a memset
 * to 0 (the bytes are hashed). Pointers and the scale value are not here:
 * they travel in the variant pack. */
typedef struct {
  int64_t b, hq, hkv, sq, sk, d;
  int64_t q_strides[4], k_strides[4], v_strides[4], o_strides[4];
  int32_t dtype;  /* attn_dtype: F16 or BF16 */
  int32_t causal; /* attn_causal, BOTTOM_RIGHT only when Sq != Sk */
  int32_t lse;    /* 1: Stats is an output */
  int32_t device;
  int32_t graph;  /* attn_cudnn_graph_kind asked for */
  int32_t fault;  /* test hook: 1 gives Q a batch of -1, which cuDNN refuses */
} attn_cudnn_problem;

/* Unique ids of the tensors a variant pack may carry. */
enum {
  ATTN_CUDNN_UID_Q = 1,
  ATTN_CUDNN_UID_K,
  ATTN_CUDNN_UID_V,
  ATTN_CUDNN_UID_O,
  ATTN_CUDNN_UID_STATS,
  ATTN_CUDNN_UID_SCALE,
  ATTN_CUDNN_UID_NEG_INF,
  ATTN_CUDNN_UID_SEQ_KV,
  ATTN_CUDNN_UID_SEQ_Q,
  ATTN_CUDNN_UID_COUNT /* virtual tensors are numbered from here */
};

/* Builds and finalizes the operation graph of `kind` (COMPOSITE or NODE).
 * uses[uid] is set to 1 for every non-virtual tensor the graph holds (the
 * variant pack lists exactly those). NULL when a call failed: the builder
 * says which and why. */
attn_cudnn_desc attn_cudnn_sdpa_graph(attn_cudnn_builder *b, cudnnHandle_t handle,
                                      const attn_cudnn_problem *p, attn_cudnn_graph_kind kind,
                                      unsigned char uses[ATTN_CUDNN_UID_COUNT]);

#endif
