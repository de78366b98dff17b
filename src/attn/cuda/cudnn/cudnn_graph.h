/* Building cuDNN plans through the graph backend API (cudnn_graph.c).
 *
 * Descriptors:
 * Small builders over cuDNN's backend descriptors (tensors, pointwise,
 * reduction and matmul operations) with a sticky error: after the first
 * failing call every later one does nothing, and the builder remembers which
 * call failed and cuDNN's status. Graph code then reads as a straight list of
 * operations with one check at the end.
 *
 * Every descriptor created is owned by the builder and destroyed together
 * (attn_cudnn_desc_release): an execution plan keeps them alive as long as it
 * lives, since cuDNN does not promise a plan copies what it refers to.
 *
 * The graph:
 * The SDPA forward graph in cuDNN's backend API, in two forms:
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
 *  SEQS: the composite graph for several sequences (attn_seqs) with dense
 *    queries [B, Hq, n_new, D] against a KV cache with per-sequence lengths,
 *    the form cudnn-frontend emits for paged decode: K and V come from
 *    PAGED_CACHE_LOAD operations (page pool + block table + lengths -> a
 *    virtual [B, Hkv, D, Sk] Kᵀ and [B, Hkv, Sk, D] V, cuDNN 9.5+) or are
 *    the contiguous cache itself; both matmuls carry the lengths as M/N/K
 *    overrides; a padding mask (row < n_new and col < kv_len) and the
 *    per-sequence bottom-right causal mask (row + kv_len - n_new >= col)
 *    replace the fixed-size ones. Sk is the table's reach, max_pages x
 *    page_size (paged) or S_cap (contiguous). Packed queries and packed K/V
 *    (varlen prefill) are the same graph over [B, H, max rows, D] tensors
 *    that carry ragged offsets ([B+1] element offsets, TENSOR_RAGGED_OFFSET),
 *    with the per-sequence lengths from the offsets.
 *  NODE: the dedicated OPERATION_SDPA_FWD node (cuDNN 9.13.1+), one op;
 *    on cuDNN < 9.21 it takes neither causal masks nor anything else but
 *    Q, K, V, scale and Stats.
 *
 * All tensors are 4-D [B, H, S, D] by strides, as the caller gave them.
 *
 * The plan:
 * From a finalized operation graph to an execution plan: ask the heuristics
 * (mode A, then FALLBACK) for engine configurations and finalize the first
 * plan that works. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_GRAPH_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_GRAPH_H

#include <stdint.h>

#include "attn/cuda/cudnn/cudnn_api.h"

typedef cudnnBackendDescriptor_t attn_cudnn_desc;

typedef struct {
  const attn_cudnn_api *api;
  cudnnStatus_t status;  /* first failure, CUDNN_STATUS_SUCCESS while none */
  char failed_call[160]; /* what that was, e.g. "finalize of the operation graph" */
  attn_cudnn_desc *owned;
  size_t n_owned, cap_owned;
} attn_cudnn_builder;

void attn_cudnn_builder_init(attn_cudnn_builder *b, const attn_cudnn_api *api);
/* Destroys every descriptor the builder created. */
void attn_cudnn_desc_release(attn_cudnn_builder *b);
/* Hands a descriptor created elsewhere to the builder; 0 when out of memory
 * (the descriptor is then still the caller's). */
int attn_cudnn_adopt(attn_cudnn_builder *b, attn_cudnn_desc d);
/* Records a failure that did not come from a cuDNN call (out of memory). */
void attn_cudnn_fail(attn_cudnn_builder *b, cudnnStatus_t st, const char *what);

attn_cudnn_desc attn_cudnn_create(attn_cudnn_builder *b, cudnnBackendDescriptorType_t type,
                                  const char *what);
void attn_cudnn_set(attn_cudnn_builder *b, attn_cudnn_desc d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void *value,
                    const char *what);
void attn_cudnn_finalize(attn_cudnn_builder *b, attn_cudnn_desc d, const char *what);

/* A 4-D tensor. by_value: a host scalar passed in the variant pack.
 * ragged (NULL: none): a [B+1] tensor of element offsets, where batch b
 * starts (packed sequences; the batch stride is then not used). */
typedef struct {
  int64_t uid;
  cudnnDataType_t dtype;
  int64_t dims[4], strides[4];
  int is_virtual, by_value;
  cudnnBackendDescriptor_t ragged;
} attn_cudnn_tensor_spec;

attn_cudnn_desc attn_cudnn_tensor(attn_cudnn_builder *b, const attn_cudnn_tensor_spec *t);

/* y = mode(x [, bx [, t]]) with math precision prec; axis for GEN_INDEX
 * (-1 when the mode takes none). bx and t may be NULL. */
attn_cudnn_desc attn_cudnn_pointwise(attn_cudnn_builder *b, cudnnPointwiseMode_t mode,
                                     cudnnDataType_t prec, int64_t axis, attn_cudnn_desc x,
                                     attn_cudnn_desc bx, attn_cudnn_desc t, attn_cudnn_desc y);
/* y = reduce(x) over the dimensions where y has extent 1, in fp32. */
attn_cudnn_desc attn_cudnn_reduction(attn_cudnn_builder *b, cudnnReduceTensorOp_t op,
                                     attn_cudnn_desc x, attn_cudnn_desc y);
/* c = a b (batched over the leading dims), accumulated in fp32. */
attn_cudnn_desc attn_cudnn_matmul(attn_cudnn_builder *b, attn_cudnn_desc a, attn_cudnn_desc bm,
                                  attn_cudnn_desc c);

/* ---- the graph ---- */

#include <stdint.h>

/* The graph kinds: attn_cudnn_graph of attn.h (the handle's option). */
typedef attn_cudnn_graph attn_cudnn_graph_kind;

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
  int32_t graph; /* attn_cudnn_graph_kind asked for */
  int32_t fault; /* test hook: 1 gives Q a batch of -1, which cuDNN refuses */
  /* Several sequences (the SEQS graph): ATTN_KV_CACHE or ATTN_KV_PAGED of
   * seqs.h, 0 for the dense graphs. Paged: k/v strides are the pools'
   * ({pages, Hkv, page_size, D} order), sk = max_pages * page_size. */
  int32_t seqs_kv;
  int64_t page_size, pages, max_pages, table_stride;
  /* Packed queries (q_offsets): q and out are [B, Hq, sq = max_q, D] with
   * ragged offsets; packed K/V (seqs_kv = ATTN_KV_PACKED): k and v are
   * [B, Hkv, sk = max_kv, D] with ragged offsets. */
  int32_t q_packed, pad_;
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
  ATTN_CUDNN_UID_LEN_Q,      /* SEQS: [B] int32 on the device, n_new each */
  ATTN_CUDNN_UID_LEN_KV,     /* SEQS: attn_seqs.kv_lens */
  ATTN_CUDNN_UID_PAGE_TABLE, /* SEQS paged: attn_seqs.block_table */
  ATTN_CUDNN_UID_Q_RAGGED,   /* packed: [B+1] element offsets of q, k, v, out */
  ATTN_CUDNN_UID_K_RAGGED,
  ATTN_CUDNN_UID_V_RAGGED,
  ATTN_CUDNN_UID_O_RAGGED,
  ATTN_CUDNN_UID_COUNT /* virtual tensors are numbered from here */
};

/* Builds and finalizes the operation graph of `kind` (COMPOSITE or NODE;
 * a problem with seqs_kv set always gets the SEQS graph).
 * uses[uid] is set to 1 for every non-virtual tensor the graph holds (the
 * variant pack lists exactly those). NULL when a call failed: the builder
 * says which and why. */
attn_cudnn_desc attn_cudnn_sdpa_graph(attn_cudnn_builder *b, cudnnHandle_t handle,
                                      const attn_cudnn_problem *p, attn_cudnn_graph_kind kind,
                                      unsigned char uses[ATTN_CUDNN_UID_COUNT]);

/* ---- the plan ---- */

#include <stdint.h>

typedef struct {
  attn_cudnn_desc plan;   /* owned by the builder */
  int64_t workspace;      /* bytes the plan needs per execution */
  int64_t engine;         /* the engine's global index, -1 if unknown */
  int runtime_compiled;   /* the engine compiles its kernel (NVRTC) at finalize */
  const char *heuristics; /* "A" or "FALLBACK" */
  int configs_tried;
} attn_cudnn_plan_choice;

/* 0 when a plan was finalized (choice filled). Otherwise nonzero, with the
 * builder's status and failed_call saying what the last attempt hit. */
int attn_cudnn_plan_build(attn_cudnn_builder *b, cudnnHandle_t handle, attn_cudnn_desc graph,
                          attn_cudnn_plan_choice *choice);

#endif
