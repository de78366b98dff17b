/* Builds the SDPA forward operation graph (composite or SDPA_FWD node) with
 * cuDNN's backend API; the shapes of the graph are described in
 * cudnn_graph.h. Intermediates are virtual fp32 tensors, as the fused
 * engines expect (only P takes the I/O dtype: it is the second matmul's A). */
#include "attn/cuda/cudnn_graph.h"

#include <string.h>

#include "attnprof/attn.h"

enum { MAX_OPS = 24 };

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

/* A non-virtual tensor the caller owns. */
static attn_cudnn_desc io_tensor(graph_ctx *g, int64_t uid, cudnnDataType_t dt,
                                 const int64_t dims[4], const int64_t strides[4]) {
  attn_cudnn_tensor_spec t = {.uid = uid, .dtype = dt};
  memcpy(t.dims, dims, sizeof t.dims);
  memcpy(t.strides, strides, sizeof t.strides);
  if (g->p->fault && uid == ATTN_CUDNN_UID_Q) t.dims[0] = -1; /* attn_cudnn_set_fault */
  g->uses[uid] = 1;
  return attn_cudnn_tensor(g->b, &t);
}

/* A host scalar passed by value in the variant pack. */
static attn_cudnn_desc scalar(graph_ctx *g, int64_t uid, cudnnDataType_t dt) {
  attn_cudnn_tensor_spec t = {.uid = uid, .dtype = dt, .dims = {1, 1, 1, 1},
                              .strides = {1, 1, 1, 1}, .by_value = 1};
  g->uses[uid] = 1;
  return attn_cudnn_tensor(g->b, &t);
}

/* A virtual [B, Hq, Sq, Sk] tensor (per score), or [B, Hq, Sq, 1] (per row). */
static attn_cudnn_desc virt(graph_ctx *g, cudnnDataType_t dt, int per_score) {
  const attn_cudnn_problem *p = g->p;
  int64_t cols = per_score ? p->sk : 1;
  attn_cudnn_tensor_spec t = {.uid = g->next_uid++, .dtype = dt, .is_virtual = 1,
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

/* S -> S with -inf where the key lies right of the diagonal. The layout
 * (INT32 indices, BOOLEAN compare, select) is the pattern the fused engines
 * recognise; bottom-right shifts the row index by Sk - Sq first. */
static attn_cudnn_desc causal_mask(graph_ctx *g, attn_cudnn_desc s) {
  attn_cudnn_desc row = virt(g, CUDNN_DATA_INT32, 1), col = virt(g, CUDNN_DATA_INT32, 1);
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 2, s, NULL,
                                 NULL, row));
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3, s, NULL,
                                 NULL, col));
  if (g->p->causal == ATTN_CAUSAL_BOTTOM_RIGHT) {
    attn_cudnn_desc skv = scalar(g, ATTN_CUDNN_UID_SEQ_KV, CUDNN_DATA_INT32);
    attn_cudnn_desc sq = scalar(g, ATTN_CUDNN_UID_SEQ_Q, CUDNN_DATA_INT32);
    row = pw(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, skv, virt(g, CUDNN_DATA_INT32, 1));
    row = pw(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row, sq, virt(g, CUDNN_DATA_INT32, 1));
  }
  attn_cudnn_desc keep = pw(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col,
                            virt(g, CUDNN_DATA_BOOLEAN, 1));
  attn_cudnn_desc ninf = scalar(g, ATTN_CUDNN_UID_NEG_INF, CUDNN_DATA_FLOAT);
  attn_cudnn_desc out = virt(g, CUDNN_DATA_FLOAT, 1);
  /* BINARY_SELECT: y = t ? x : b */
  add_op(g, attn_cudnn_pointwise(g->b, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, s,
                                 ninf, keep, out));
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
      CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC,
      CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC};
  attn_cudnn_desc op = attn_cudnn_create(g->b, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, what);
  for (int i = 0; i < 6; i++)
    if (t[i]) attn_cudnn_set(g->b, op, attr[i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[i], what);
  attn_cudnn_finalize(g->b, op, what);
  add_op(g, op);
}

attn_cudnn_desc attn_cudnn_sdpa_graph(attn_cudnn_builder *b, cudnnHandle_t handle,
                                      const attn_cudnn_problem *p, attn_cudnn_graph_kind kind,
                                      unsigned char uses[ATTN_CUDNN_UID_COUNT]) {
  static const char what[] = "the operation graph";
  graph_ctx g = {.b = b, .p = p, .uses = uses, .next_uid = ATTN_CUDNN_UID_COUNT};
  memset(uses, 0, ATTN_CUDNN_UID_COUNT);
  if (kind == ATTN_CUDNN_GRAPH_NODE) node_ops(&g);
  else composite_ops(&g);
  attn_cudnn_desc og = attn_cudnn_create(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what);
  attn_cudnn_set(b, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g.n_ops,
                 g.ops, what);
  attn_cudnn_set(b, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, what);
  attn_cudnn_finalize(b, og, what);
  return b->status == CUDNN_STATUS_SUCCESS ? og : NULL;
}
