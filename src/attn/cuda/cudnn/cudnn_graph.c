/* From inputs to an executable cuDNN plan, through the graph backend API:
 *  - descriptors: creating, setting and finalizing backend descriptors, with
 *    the first failed call and its status kept for the reason (desc);
 *  - the operation graph of SDPA: the composite graph (matmul, scale, mask,
 *    softmax, matmul) or cuDNN's SDPA_FWD node (graph);
 *  - the plan: heuristics, engine configs tried in order, workspace (plan). */
#include "attn/cuda/cudnn/cudnn_graph.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/cuda/cudnn/cudnn_seqs.h"
#include "attn/seqs.h"
#include "attnprof/attn.h"

/* ---- descriptors ---------------------------------------------------------- */
void attn_cudnn_builder_init(attn_cudnn_builder *b, const attn_cudnn_api *api) {
  *b = (attn_cudnn_builder){.api = api, .status = CUDNN_STATUS_SUCCESS};
}

void attn_cudnn_fail(attn_cudnn_builder *b, cudnnStatus_t st, const char *what) {
  if (b->status != CUDNN_STATUS_SUCCESS) return;
  b->status = st;
  snprintf(b->failed_call, sizeof b->failed_call, "%s", what);
}

void attn_cudnn_desc_release(attn_cudnn_builder *b) {
  /* Reverse order: users of a descriptor go before it. */
  for (size_t i = b->n_owned; i-- > 0;) b->api->BackendDestroyDescriptor(b->owned[i]);
  free(b->owned);
  b->owned = NULL;
  b->n_owned = b->cap_owned = 0;
}

static int own(attn_cudnn_builder *b, attn_cudnn_desc d) {
  if (b->n_owned == b->cap_owned) {
    size_t cap = b->cap_owned ? 2 * b->cap_owned : 64;
    attn_cudnn_desc *p = realloc(b->owned, cap * sizeof *p);
    if (!p) return 0;
    b->owned = p, b->cap_owned = cap;
  }
  b->owned[b->n_owned++] = d;
  return 1;
}

int attn_cudnn_adopt(attn_cudnn_builder *b, attn_cudnn_desc d) { return own(b, d); }

attn_cudnn_desc attn_cudnn_create(attn_cudnn_builder *b, cudnnBackendDescriptorType_t type,
                                  const char *what) {
  attn_cudnn_desc d = NULL;
  if (b->status != CUDNN_STATUS_SUCCESS) return NULL;
  cudnnStatus_t st = b->api->BackendCreateDescriptor(type, &d);
  if (st != CUDNN_STATUS_SUCCESS) {
    attn_cudnn_fail(b, st, what);
    return NULL;
  }
  if (!own(b, d)) {
    b->api->BackendDestroyDescriptor(d);
    attn_cudnn_fail(b, CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, what);
    return NULL;
  }
  return d;
}

void attn_cudnn_set(attn_cudnn_builder *b, attn_cudnn_desc d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void *value,
                    const char *what) {
  if (b->status != CUDNN_STATUS_SUCCESS) return;
  cudnnStatus_t st = b->api->BackendSetAttribute(d, name, type, count, value);
  if (st != CUDNN_STATUS_SUCCESS) attn_cudnn_fail(b, st, what);
}

void attn_cudnn_finalize(attn_cudnn_builder *b, attn_cudnn_desc d, const char *what) {
  if (b->status != CUDNN_STATUS_SUCCESS) return;
  cudnnStatus_t st = b->api->BackendFinalize(d);
  if (st != CUDNN_STATUS_SUCCESS) attn_cudnn_fail(b, st, what);
}

attn_cudnn_desc attn_cudnn_tensor(attn_cudnn_builder *b, const attn_cudnn_tensor_spec *t) {
  static const char what[] = "a tensor descriptor";
  /* 16 bytes: what cudaMalloc gives and what the fused kernels' vector
   * loads need; the why-not check refuses pointers aligned less. */
  const int64_t align = 16;
  const bool is_virtual = t->is_virtual != 0, by_value = t->by_value != 0;
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t->dtype, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t->dims, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t->strides, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t->uid, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, what);
  if (by_value)
    attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, what);
  if (t->ragged)
    attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                   &t->ragged, "a tensor's ragged offsets (packed sequences)");
  attn_cudnn_finalize(b, d, what);
  return d;
}

static attn_cudnn_desc pointwise_desc(attn_cudnn_builder *b, cudnnPointwiseMode_t mode,
                                      cudnnDataType_t prec, int64_t axis) {
  static const char what[] = "a pointwise descriptor";
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, what);
  if (axis >= 0) attn_cudnn_set(b, d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
  attn_cudnn_finalize(b, d, what);
  return d;
}

attn_cudnn_desc attn_cudnn_pointwise(attn_cudnn_builder *b, cudnnPointwiseMode_t mode,
                                     cudnnDataType_t prec, int64_t axis, attn_cudnn_desc x,
                                     attn_cudnn_desc bx, attn_cudnn_desc t, attn_cudnn_desc y) {
  static const char what[] = "a pointwise operation";
  const float one = 1.0f; /* alpha1/alpha2: plain y = op(x, b) */
  attn_cudnn_desc pw = pointwise_desc(b, mode, prec, axis);
  attn_cudnn_desc op = attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 1, &pw, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
                 what);
  if (bx)
    attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                   &bx, what);
  if (t)
    attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                   &t, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, what);
  attn_cudnn_finalize(b, op, what);
  return op;
}

attn_cudnn_desc attn_cudnn_reduction(attn_cudnn_builder *b, cudnnReduceTensorOp_t red,
                                     attn_cudnn_desc x, attn_cudnn_desc y) {
  static const char what[] = "a reduction operation";
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &red,
                 what);
  attn_cudnn_set(b, d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, what);
  attn_cudnn_finalize(b, d, what);
  attn_cudnn_desc op = attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d,
                 what);
  attn_cudnn_finalize(b, op, what);
  return op;
}

/* c = a b; m/n/k_ov (may be NULL): per-batch [B,1,1,1] int32 sizes that
 * override the GEMM's M, N, K (the sequence lengths); padded: rows and
 * columns past them are written as 0 (what the padding mask then masks). */
static attn_cudnn_desc matmul_ov(attn_cudnn_builder *b, attn_cudnn_desc a, attn_cudnn_desc bm,
                                 attn_cudnn_desc c, attn_cudnn_desc m_ov, attn_cudnn_desc n_ov,
                                 attn_cudnn_desc k_ov, int padded) {
  static const char what[] = "a matmul operation";
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const double zero = 0.0;
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, what);
  if (padded)
    attn_cudnn_set(b, d, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &zero, what);
  attn_cudnn_finalize(b, d, what);
  attn_cudnn_desc op = attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bm,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d,
                 what);
  const cudnnBackendAttributeName_t ov_attr[3] = {CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC,
                                                  CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC,
                                                  CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC};
  const attn_cudnn_desc ov[3] = {m_ov, n_ov, k_ov};
  for (int i = 0; i < 3; i++)
    if (ov[i])
      attn_cudnn_set(b, op, ov_attr[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ov[i],
                     "a matmul's M/N/K override (the sequence lengths)");
  attn_cudnn_finalize(b, op, what);
  return op;
}

attn_cudnn_desc attn_cudnn_matmul(attn_cudnn_builder *b, attn_cudnn_desc a, attn_cudnn_desc bm,
                                  attn_cudnn_desc c) {
  return matmul_ov(b, a, bm, c, NULL, NULL, NULL, 0);
}

/* ---- the SDPA operation graph --------------------------------------------- */
enum { MAX_OPS = 40 };

typedef struct {
  attn_cudnn_builder *b;
  const attn_cudnn_problem *p;
  unsigned char *uses;
  int64_t next_uid;
  attn_cudnn_desc ops[MAX_OPS];
  int64_t n_ops;
} graph_ctx;

static cudnnDataType_t io_dtype(const attn_cudnn_problem *p) {
  return p->dtype == ATTN_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

static void add_op(graph_ctx *g, attn_cudnn_desc op) {
  if (g->n_ops < MAX_OPS) g->ops[g->n_ops++] = op;
  else attn_cudnn_fail(g->b, CUDNN_STATUS_INTERNAL_ERROR, "too many operations (attnprof bug)");
}

/* A non-virtual tensor the caller owns; ragged: its offsets or NULL. */
static attn_cudnn_desc io_tensor_r(graph_ctx *g, int64_t uid, cudnnDataType_t dt,
                                   const int64_t dims[4], const int64_t strides[4],
                                   attn_cudnn_desc ragged) {
  attn_cudnn_tensor_spec t = {.uid = uid, .dtype = dt, .ragged = ragged};
  memcpy(t.dims, dims, sizeof t.dims);
  memcpy(t.strides, strides, sizeof t.strides);
  if (g->p->fault && uid == ATTN_CUDNN_UID_Q) t.dims[0] = -1; /* attn_cudnn_set_fault */
  g->uses[uid] = 1;
  return attn_cudnn_tensor(g->b, &t);
}

static attn_cudnn_desc io_tensor(graph_ctx *g, int64_t uid, cudnnDataType_t dt,
                                 const int64_t dims[4], const int64_t strides[4]) {
  return io_tensor_r(g, uid, dt, dims, strides, NULL);
}

/* Packed sequences: the [B+1] element offsets (uid) of a tensor, int64 from
 * cuDNN 9.6 (cudnn_seqs.h). */
static attn_cudnn_desc ragged_tensor(graph_ctx *g, int64_t uid) {
  const int64_t dims[4] = {g->p->b + 1, 1, 1, 1}, strides[4] = {1, 1, 1, 1};
  const cudnnDataType_t dt =
      ATTN_CUDNN_RAGGED_WIDE(g->b->api->version) ? CUDNN_DATA_INT64 : CUDNN_DATA_INT32;
  return io_tensor(g, uid, dt, dims, strides);
}

/* A host scalar passed by value in the variant pack. */
static attn_cudnn_desc scalar(graph_ctx *g, int64_t uid, cudnnDataType_t dt) {
  attn_cudnn_tensor_spec t = {
      .uid = uid, .dtype = dt, .dims = {1, 1, 1, 1}, .strides = {1, 1, 1, 1}, .by_value = 1};
  g->uses[uid] = 1;
  return attn_cudnn_tensor(g->b, &t);
}

/* A virtual [B, Hq, Sq, Sk] tensor (per score), or [B, Hq, Sq, 1] (per row). */
static attn_cudnn_desc virt(graph_ctx *g, cudnnDataType_t dt, int per_score) {
  const attn_cudnn_problem *p = g->p;
  int64_t cols = per_score ? p->sk : 1;
  attn_cudnn_tensor_spec t = {.uid = g->next_uid++,
                              .dtype = dt,
                              .is_virtual = 1,
                              .dims = {p->b, p->hq, p->sq, cols},
                              .strides = {p->hq * p->sq * cols, p->sq * cols, cols, 1}};
  return attn_cudnn_tensor(g->b, &t);
}

static attn_cudnn_desc stats_tensor(graph_ctx *g) {
  const attn_cudnn_problem *p = g->p;
  if (!p->lse) return virt(g, CUDNN_DATA_FLOAT, 0);
  /* attn.h's lse: [B, Hq, Sq] contiguous fp32. */
  const int64_t dims[4] = {p->b, p->hq, p->sq, 1};
  const int64_t strides[4] = {p->hq * p->sq, p->sq, 1, 1};
  return io_tensor(g, ATTN_CUDNN_UID_STATS, CUDNN_DATA_FLOAT, dims, strides);
}

static attn_cudnn_desc pw(graph_ctx *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec,
                          attn_cudnn_desc x, attn_cudnn_desc bx, attn_cudnn_desc y) {
  add_op(g, attn_cudnn_pointwise(g->b, mode, prec, -1, x, bx, NULL, y));
  return y;
}

/* INT32 row and column indices of the score tensor s (dims 2 and 3), the
 * first step of every mask here; compute is the pointwise op's math type. */
static void score_indices(graph_ctx *g, attn_cudnn_desc s, cudnnDataType_t compute,
                          attn_cudnn_desc *row, attn_cudnn_desc *col) {
  *row = virt(g, CUDNN_DATA_INT32, 1), *col = virt(g, CUDNN_DATA_INT32, 1);
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_GEN_INDEX, compute, 2, s, NULL, NULL, *row));
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_GEN_INDEX, compute, 3, s, NULL, NULL, *col));
}

/* S -> S with -inf where the key lies right of the diagonal. The layout
 * (INT32 indices, BOOLEAN compare, select) is the pattern the fused engines
 * recognise; bottom-right shifts the row index by Sk - Sq first. */
static attn_cudnn_desc causal_mask(graph_ctx *g, attn_cudnn_desc s) {
  attn_cudnn_desc row, col;
  score_indices(g, s, CUDNN_DATA_FLOAT, &row, &col);
  if (g->p->causal == ATTN_CAUSAL_BOTTOM_RIGHT) {
    attn_cudnn_desc skv = scalar(g, ATTN_CUDNN_UID_SEQ_KV, CUDNN_DATA_INT32);
    attn_cudnn_desc sq = scalar(g, ATTN_CUDNN_UID_SEQ_Q, CUDNN_DATA_INT32);
    row = pw(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, skv, virt(g, CUDNN_DATA_INT32, 1));
    row = pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row, sq, virt(g, CUDNN_DATA_INT32, 1));
  }
  attn_cudnn_desc keep =
      pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, virt(g, CUDNN_DATA_BOOLEAN, 1));
  attn_cudnn_desc ninf = scalar(g, ATTN_CUDNN_UID_NEG_INF, CUDNN_DATA_FLOAT);
  attn_cudnn_desc out = virt(g, CUDNN_DATA_FLOAT, 1);
  /* BINARY_SELECT: y = t ? x : b */
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, s, ninf,
                                 keep, out));
  return out;
}

/* P = softmax(S) in the I/O dtype, with Stats = max + log(sum). */
static attn_cudnn_desc softmax(graph_ctx *g, attn_cudnn_desc s) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  attn_cudnn_desc m = virt(g, f32, 0), z = virt(g, f32, 0);
  add_op(g, attn_cudnn_reduction(g->b, CUDNN_REDUCE_TENSOR_MAX, s, m));
  attn_cudnn_desc d = pw(g, CUDNN_POINTWISE_SUB, f32, s, m, virt(g, f32, 1));
  attn_cudnn_desc e = pw(g, CUDNN_POINTWISE_EXP, f32, d, NULL, virt(g, f32, 1));
  add_op(g, attn_cudnn_reduction(g->b, CUDNN_REDUCE_TENSOR_ADD, e, z));
  attn_cudnn_desc l = pw(g, CUDNN_POINTWISE_LOG, f32, z, NULL, virt(g, f32, 0));
  pw(g, CUDNN_POINTWISE_ADD, f32, m, l, stats_tensor(g));
  return pw(g, CUDNN_POINTWISE_DIV, f32, e, z, virt(g, io_dtype(g->p), 1));
}

static void composite_ops(graph_ctx *g) {
  const attn_cudnn_problem *p = g->p;
  const cudnnDataType_t io = io_dtype(p), f32 = CUDNN_DATA_FLOAT;
  const int64_t qd[4] = {p->b, p->hq, p->sq, p->d}, kd[4] = {p->b, p->hkv, p->d, p->sk},
                vd[4] = {p->b, p->hkv, p->sk, p->d};
  const int64_t *ks = p->k_strides, kts[4] = {ks[0], ks[1], ks[3], ks[2]};
  attn_cudnn_desc q = io_tensor(g, ATTN_CUDNN_UID_Q, io, qd, p->q_strides);
  attn_cudnn_desc kt = io_tensor(g, ATTN_CUDNN_UID_K, io, kd, kts);
  attn_cudnn_desc v = io_tensor(g, ATTN_CUDNN_UID_V, io, vd, p->v_strides);
  attn_cudnn_desc o = io_tensor(g, ATTN_CUDNN_UID_O, io, qd, p->o_strides);
  attn_cudnn_desc scale = scalar(g, ATTN_CUDNN_UID_SCALE, f32);
  attn_cudnn_desc s = virt(g, f32, 1);
  add_op(g, attn_cudnn_matmul(g->b, q, kt, s));
  s = pw(g, CUDNN_POINTWISE_MUL, f32, s, scale, virt(g, f32, 1));
  if (p->causal != ATTN_CAUSAL_NONE) s = causal_mask(g, s);
  add_op(g, attn_cudnn_matmul(g->b, softmax(g, s), v, o));
}

static void node_ops(graph_ctx *g) {
  static const char what[] = "the SDPA_FWD operation (needs cuDNN 9.13.1)";
  const attn_cudnn_problem *p = g->p;
  const cudnnDataType_t io = io_dtype(p);
  const int64_t qd[4] = {p->b, p->hq, p->sq, p->d}, kd[4] = {p->b, p->hkv, p->sk, p->d};
  attn_cudnn_desc t[6];
  t[0] = io_tensor(g, ATTN_CUDNN_UID_Q, io, qd, p->q_strides);
  t[1] = io_tensor(g, ATTN_CUDNN_UID_K, io, kd, p->k_strides);
  t[2] = io_tensor(g, ATTN_CUDNN_UID_V, io, kd, p->v_strides);
  t[3] = io_tensor(g, ATTN_CUDNN_UID_O, io, qd, p->o_strides);
  t[4] = scalar(g, ATTN_CUDNN_UID_SCALE, CUDNN_DATA_FLOAT);
  t[5] = p->lse ? stats_tensor(g) : NULL;
  static const cudnnBackendAttributeName_t attr[6] = {
      CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC,     CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC,     CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC};
  attn_cudnn_desc op = attn_cudnn_create(g->b, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, what);
  for (int i = 0; i < 6; i++)
    if (t[i]) attn_cudnn_set(g->b, op, attr[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[i], what);
  attn_cudnn_finalize(g->b, op, what);
  add_op(g, op);
}

/* ---- several sequences: lengths, paged loads, padding mask ----------------- */

/* A [B, 1, 1, 1] int32 length per sequence, in device memory. */
static attn_cudnn_desc lens_tensor(graph_ctx *g, int64_t uid) {
  const int64_t dims[4] = {g->p->b, 1, 1, 1}, strides[4] = {1, 1, 1, 1};
  return io_tensor(g, uid, CUDNN_DATA_INT32, dims, strides);
}

/* y (virtual, dims/strides given) = the pages of `pool` the table lists,
 * up to each sequence's length (PAGED_CACHE_LOAD, cuDNN 9.5+). */
static attn_cudnn_desc paged_load(graph_ctx *g, attn_cudnn_desc pool, attn_cudnn_desc table,
                                  attn_cudnn_desc lens, const int64_t dims[4],
                                  const int64_t strides[4]) {
  static const char what[] = "a PAGED_CACHE_LOAD operation (cuDNN 9.5+)";
  attn_cudnn_tensor_spec t = {.uid = g->next_uid++, .dtype = io_dtype(g->p), .is_virtual = 1};
  memcpy(t.dims, dims, sizeof t.dims);
  memcpy(t.strides, strides, sizeof t.strides);
  attn_cudnn_desc y = attn_cudnn_tensor(g->b, &t);
  attn_cudnn_builder *b = g->b;
  attn_cudnn_desc op =
      attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pool, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &table, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &lens, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 1, &y, what);
  attn_cudnn_finalize(b, op, what);
  add_op(g, op);
  return y;
}

/* Kᵀ [B, Hkv, D, Sk] and V [B, Hkv, Sk, D]: loaded from the page pools, or
 * the contiguous cache itself (K's last two dims swapped, no copy). */
static void seqs_kv(graph_ctx *g, attn_cudnn_desc len_kv, attn_cudnn_desc *kt, attn_cudnn_desc *v) {
  const attn_cudnn_problem *p = g->p;
  const cudnnDataType_t io = io_dtype(p);
  const int64_t ktd[4] = {p->b, p->hkv, p->d, p->sk}, vd[4] = {p->b, p->hkv, p->sk, p->d};
  if (p->seqs_kv != ATTN_KV_PAGED) {
    const int packed = p->seqs_kv == ATTN_KV_PACKED;
    attn_cudnn_desc kr = packed ? ragged_tensor(g, ATTN_CUDNN_UID_K_RAGGED) : NULL;
    attn_cudnn_desc vr = packed ? ragged_tensor(g, ATTN_CUDNN_UID_V_RAGGED) : NULL;
    const int64_t *ks = p->k_strides, kts[4] = {ks[0], ks[1], ks[3], ks[2]};
    *kt = io_tensor_r(g, ATTN_CUDNN_UID_K, io, ktd, kts, kr);
    *v = io_tensor_r(g, ATTN_CUDNN_UID_V, io, vd, p->v_strides, vr);
    return;
  }
  const int64_t pool[4] = {p->pages, p->hkv, p->page_size, p->d};
  const int64_t td[4] = {p->b, 1, p->max_pages, 1},
                ts[4] = {p->table_stride, p->table_stride, 1, 1};
  attn_cudnn_desc kpool = io_tensor(g, ATTN_CUDNN_UID_K, io, pool, p->k_strides);
  attn_cudnn_desc vpool = io_tensor(g, ATTN_CUDNN_UID_V, io, pool, p->v_strides);
  attn_cudnn_desc table = io_tensor(g, ATTN_CUDNN_UID_PAGE_TABLE, CUDNN_DATA_INT32, td, ts);
  const int64_t hds = p->d * p->sk;
  const int64_t kts[4] = {p->hkv * hds, hds, 1, p->d}, vs[4] = {p->hkv * hds, hds, p->d, 1};
  *kt = paged_load(g, kpool, table, len_kv, ktd, kts);
  *v = paged_load(g, vpool, table, len_kv, vd, vs);
}

/* S -> -inf outside row < n_new and col < kv_len (cudnn-frontend's padding
 * mask: INT32 indices, BOOLEAN compares, AND, select). */
static attn_cudnn_desc padding_mask(graph_ctx *g, attn_cudnn_desc s, attn_cudnn_desc len_q,
                                    attn_cudnn_desc len_kv, attn_cudnn_desc ninf) {
  const cudnnDataType_t i32 = CUDNN_DATA_INT32, bo = CUDNN_DATA_BOOLEAN;
  attn_cudnn_desc row, col;
  score_indices(g, s, i32, &row, &col);
  attn_cudnn_desc row_ok = pw(g, CUDNN_POINTWISE_CMP_LT, bo, row, len_q, virt(g, bo, 1));
  attn_cudnn_desc col_ok = pw(g, CUDNN_POINTWISE_CMP_LT, bo, col, len_kv, virt(g, bo, 1));
  attn_cudnn_desc ok = pw(g, CUDNN_POINTWISE_LOGICAL_AND, bo, row_ok, col_ok, virt(g, bo, 1));
  attn_cudnn_desc out = virt(g, CUDNN_DATA_FLOAT, 1);
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, s, ninf,
                                 ok, out));
  return out;
}

/* S -> -inf right of each sequence's own bottom-right diagonal:
 * keep row + kv_len - n_new >= col. */
static attn_cudnn_desc causal_br_lens(graph_ctx *g, attn_cudnn_desc s, attn_cudnn_desc len_q,
                                      attn_cudnn_desc len_kv, attn_cudnn_desc ninf) {
  const cudnnDataType_t i32 = CUDNN_DATA_INT32, f32 = CUDNN_DATA_FLOAT;
  attn_cudnn_desc row, col;
  score_indices(g, s, f32, &row, &col);
  attn_cudnn_desc r1 = virt(g, i32, 1), r2 = virt(g, i32, 1);
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_ADD, i32, 3, row, len_kv, NULL, r1));
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_SUB, i32, 3, r1, len_q, NULL, r2));
  attn_cudnn_desc keep =
      pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, r2, col, virt(g, CUDNN_DATA_BOOLEAN, 1));
  attn_cudnn_desc out = virt(g, f32, 1);
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_BINARY_SELECT, f32, -1, s, ninf, keep, out));
  return out;
}

static void seqs_ops(graph_ctx *g) {
  const attn_cudnn_problem *p = g->p;
  const cudnnDataType_t io = io_dtype(p), f32 = CUDNN_DATA_FLOAT;
  const int64_t qd[4] = {p->b, p->hq, p->sq, p->d};
  attn_cudnn_desc qr = p->q_packed ? ragged_tensor(g, ATTN_CUDNN_UID_Q_RAGGED) : NULL;
  attn_cudnn_desc orr = p->q_packed ? ragged_tensor(g, ATTN_CUDNN_UID_O_RAGGED) : NULL;
  attn_cudnn_desc q = io_tensor_r(g, ATTN_CUDNN_UID_Q, io, qd, p->q_strides, qr);
  attn_cudnn_desc o = io_tensor_r(g, ATTN_CUDNN_UID_O, io, qd, p->o_strides, orr);
  attn_cudnn_desc len_q = lens_tensor(g, ATTN_CUDNN_UID_LEN_Q);
  attn_cudnn_desc len_kv = lens_tensor(g, ATTN_CUDNN_UID_LEN_KV);
  attn_cudnn_desc kt, v;
  seqs_kv(g, len_kv, &kt, &v);
  attn_cudnn_desc scale = scalar(g, ATTN_CUDNN_UID_SCALE, f32);
  attn_cudnn_desc ninf = scalar(g, ATTN_CUDNN_UID_NEG_INF, f32);
  attn_cudnn_desc s = virt(g, f32, 1);
  add_op(g, matmul_ov(g->b, q, kt, s, len_q, len_kv, NULL, 1));
  s = pw(g, CUDNN_POINTWISE_MUL, f32, s, scale, virt(g, f32, 1));
  s = padding_mask(g, s, len_q, len_kv, ninf);
  if (p->causal == ATTN_CAUSAL_BOTTOM_RIGHT) s = causal_br_lens(g, s, len_q, len_kv, ninf);
  add_op(g, matmul_ov(g->b, softmax(g, s), v, o, len_q, NULL, len_kv, 0));
}

attn_cudnn_desc attn_cudnn_sdpa_graph(attn_cudnn_builder *b, cudnnHandle_t handle,
                                      const attn_cudnn_problem *p, attn_cudnn_graph_kind kind,
                                      unsigned char uses[ATTN_CUDNN_UID_COUNT]) {
  static const char what[] = "the operation graph";
  graph_ctx g = {.b = b, .p = p, .uses = uses, .next_uid = ATTN_CUDNN_UID_COUNT};
  memset(uses, 0, ATTN_CUDNN_UID_COUNT);
  if (p->seqs_kv) seqs_ops(&g);
  else if (kind == ATTN_CUDNN_GRAPH_NODE) node_ops(&g);
  else composite_ops(&g);
  attn_cudnn_desc og = attn_cudnn_create(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what);
  attn_cudnn_set(b, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g.n_ops,
                 g.ops, what);
  attn_cudnn_set(b, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, what);
  attn_cudnn_finalize(b, og, what);
  return b->status == CUDNN_STATUS_SUCCESS ? og : NULL;
}

/* ---- the plan: heuristics, engine configs, workspace ---------------------- */
enum { MAX_CONFIGS = 64 };

/* The engine behind a config: its global index and whether it compiles at
 * run time. Best effort: only used in descriptions. */
static void engine_facts(const attn_cudnn_api *api, attn_cudnn_desc cfg,
                         attn_cudnn_plan_choice *c) {
  attn_cudnn_desc eng = NULL;
  int64_t n = 0;
  c->engine = -1;
  if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng)) return;
  if (!api->BackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &n, &eng)) {
    api->BackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                             &c->engine);
    cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    if (!api->BackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, notes))
      for (int64_t i = 0; i < n; i++)
        if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) c->runtime_compiled = 1;
  }
  api->BackendDestroyDescriptor(eng);
}

/* Finalizes a plan for one config; the plan or NULL (status in *st). */
static attn_cudnn_desc try_config(const attn_cudnn_api *api, cudnnHandle_t handle,
                                  attn_cudnn_desc cfg, cudnnStatus_t *st) {
  attn_cudnn_desc plan = NULL;
  if ((*st = api->BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)))
    return NULL;
  if (!(*st = api->BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                       &handle)) &&
      !(*st = api->BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg)) &&
      !(*st = api->BackendFinalize(plan)))
    return plan;
  api->BackendDestroyDescriptor(plan);
  return NULL;
}

/* The configs heuristics `mode` offers for the graph; returns the count. */
static int64_t heuristic_configs(attn_cudnn_builder *b, attn_cudnn_desc graph,
                                 cudnnBackendHeurMode_t mode, attn_cudnn_desc *cfgs) {
  static const char what[] = "the engine heuristics";
  const attn_cudnn_api *api = b->api;
  attn_cudnn_builder hb;
  attn_cudnn_builder_init(&hb, api);
  attn_cudnn_desc heur = attn_cudnn_create(&hb, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what);
  attn_cudnn_set(&hb, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &graph, what);
  attn_cudnn_set(&hb, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, what);
  attn_cudnn_finalize(&hb, heur, what);
  int64_t n = 0, got = 0;
  if (hb.status == CUDNN_STATUS_SUCCESS) {
    cudnnStatus_t st = api->BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
    if (st) attn_cudnn_fail(&hb, st, "the heuristics' result count");
  }
  if (n > MAX_CONFIGS) n = MAX_CONFIGS;
  for (int64_t i = 0; i < n; i++)
    if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i])) n = i;
  if (n > 0) {
    cudnnStatus_t st = api->BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs);
    if (st) attn_cudnn_fail(&hb, st, "the heuristics' results"), got = 0;
  }
  for (int64_t i = got; i < n; i++) api->BackendDestroyDescriptor(cfgs[i]);
  if (hb.status != CUDNN_STATUS_SUCCESS) attn_cudnn_fail(b, hb.status, hb.failed_call);
  attn_cudnn_desc_release(&hb);
  return got;
}

static int try_mode(attn_cudnn_builder *b, cudnnHandle_t handle, attn_cudnn_desc graph,
                    cudnnBackendHeurMode_t mode, attn_cudnn_plan_choice *c) {
  const attn_cudnn_api *api = b->api;
  attn_cudnn_desc cfgs[MAX_CONFIGS];
  int64_t n = heuristic_configs(b, graph, mode, cfgs), won = -1;
  cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
  for (int64_t i = 0; i < n && won < 0; i++, c->configs_tried++)
    if ((c->plan = try_config(api, handle, cfgs[i], &st))) won = i;
  if (won < 0 && n > 0) {
    char what[96];
    snprintf(what, sizeof what, "finalize of each of %lld execution plans (heuristics %s)",
             (long long)n, mode == CUDNN_HEUR_MODE_A ? "A" : "FALLBACK");
    attn_cudnn_fail(b, st, what);
  }
  if (won >= 0) {
    engine_facts(api, cfgs[won], c);
    int64_t m = 0;
    api->BackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                             &m, &c->workspace);
    if (!attn_cudnn_adopt(b, cfgs[won])) won = -1; /* ENOMEM: give up */
    else if (!attn_cudnn_adopt(b, c->plan)) cfgs[won] = NULL, won = -1;
  }
  for (int64_t i = 0; i < n; i++)
    if (i != won && cfgs[i]) api->BackendDestroyDescriptor(cfgs[i]);
  return won >= 0;
}

int attn_cudnn_plan_build(attn_cudnn_builder *b, cudnnHandle_t handle, attn_cudnn_desc graph,
                          attn_cudnn_plan_choice *c) {
  *c = (attn_cudnn_plan_choice){.engine = -1};
  if (b->status != CUDNN_STATUS_SUCCESS) return 1;
  if (try_mode(b, handle, graph, CUDNN_HEUR_MODE_A, c)) {
    c->heuristics = "A";
    return 0;
  }
  /* Mode A may fail where FALLBACK works: forget its failure and retry. */
  cudnnStatus_t a_status = b->status;
  char a_call[sizeof b->failed_call];
  snprintf(a_call, sizeof a_call, "%s", b->failed_call);
  b->status = CUDNN_STATUS_SUCCESS;
  if (try_mode(b, handle, graph, CUDNN_HEUR_MODE_FALLBACK, c)) {
    c->heuristics = "FALLBACK";
    return 0;
  }
  if (b->status == CUDNN_STATUS_SUCCESS && a_status != CUDNN_STATUS_SUCCESS)
    attn_cudnn_fail(b, a_status, a_call); /* FALLBACK offered nothing: A's reason */
  else if (b->status == CUDNN_STATUS_SUCCESS)
    attn_cudnn_fail(b, CUDNN_STATUS_NOT_SUPPORTED, "the heuristics (no engine offered)");
  return 1;
}
