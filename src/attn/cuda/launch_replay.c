/* Eager replay of one cuBLAS call's launches (see launch_replay.h). */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/cuda/cuda_common.h"
#include "attn/cuda/launch_replay.h"

enum { REPLAY_SLOTS = 16, REPLAY_OPS = 4, REPLAY_ATTRS = 3 };
enum { SLOT_EMPTY, SLOT_SEEN, SLOT_READY, SLOT_PLAIN };

/* One launch the captured call made: a kernel (its function, geometry,
 * launch attributes and a copy of its parameter bytes) or a 1-D memset. */
typedef struct {
  int is_kernel;
  CUfunction f;
  CUkernel kern;       /* the node's library kernel, if it had one */
  unsigned grid[3], block[3], smem, n_attrs;
  CUlaunchAttribute attrs[REPLAY_ATTRS];
  void **args;         /* args[i] points into buf; NULL: buf goes through extra */
  unsigned char *buf;
  size_t buf_size;
  void *extra[5];      /* CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE over buf */
  void *dst;           /* memset */
  int value;
  size_t bytes;
} replay_op;

typedef struct {
  unsigned char key[ATTN_CUDA_REPLAY_KEY];
  size_t key_len;
  int state, n_ops;
  const char *why_plain; /* why the call could not be replayed */
  replay_op op[REPLAY_OPS];
} replay_slot;

struct attn_cuda_replays {
  replay_slot slot[REPLAY_SLOTS];
  int next;             /* round-robin eviction */
  cudaStream_t capture; /* private stream the call is captured on */
};

/* The driver calls the replay needs, through the runtime's entry points (no
 * link against libcuda). */
static struct {
  PFN_cuGraphKernelNodeGetParams_v12000 node_params;
  PFN_cuGraphKernelNodeGetAttribute_v11000 node_attr;
  PFN_cuFuncGetParamInfo_v12040 param_info;
  PFN_cuKernelGetFunction_v12000 kernel_function;
  PFN_cuLaunchKernelEx_v11060 launch;
  PFN_cuFuncGetName_v12030 func_name;
  PFN_cuGetErrorName_v6000 error_name;
  int ok;
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static int entry(const char *name, void **fn) {
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, fn, 12040, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    *fn = NULL;
  }
  return *fn != NULL;
}

static void drv_load(void) {
  const char *v = getenv("ATTNPROF_GEMM_REPLAY");
  if (v && v[0] == '0') return; /* the A/B switch: plain cuBLAS on every call */
  drv.ok = entry("cuGraphKernelNodeGetParams", (void **)&drv.node_params) &
           entry("cuGraphKernelNodeGetAttribute", (void **)&drv.node_attr) &
           entry("cuFuncGetParamInfo", (void **)&drv.param_info) &
           entry("cuKernelGetFunction", (void **)&drv.kernel_function) &
           entry("cuLaunchKernelEx", (void **)&drv.launch) &
           entry("cuFuncGetName", (void **)&drv.func_name) &
           entry("cuGetErrorName", (void **)&drv.error_name);
}

int attn_cuda_replay_enabled(void) {
  pthread_once(&drv_once, drv_load);
  return drv.ok;
}

static void op_free(replay_op *op) {
  free(op->args);
  free(op->buf);
  memset(op, 0, sizeof *op);
}

static void slot_free(replay_slot *s) {
  for (int i = 0; i < s->n_ops; i++) op_free(&s->op[i]);
  memset(s, 0, sizeof *s);
}

void attn_cuda_replays_clear(attn_cuda_ctx *c) {
  if (!c->replays) return;
  for (int i = 0; i < REPLAY_SLOTS; i++) slot_free(&c->replays->slot[i]);
}

void attn_cuda_replays_free(attn_cuda_ctx *c) {
  if (!c->replays) return;
  attn_cuda_replays_clear(c);
  if (c->replays->capture) cudaStreamDestroy(c->replays->capture);
  free(c->replays);
  c->replays = NULL;
}

/* The parameter bytes of a captured kernel, copied (the graph goes away):
 * sizes and offsets from cuFuncGetParamInfo. 0 on success. */
static int copy_params(CUfunction f, void **params, replay_op *op) {
  size_t n = 0, end = 0, off, size;
  while (drv.param_info(f, n, &off, &size) == CUDA_SUCCESS) {
    end = off + size > end ? off + size : end;
    n++;
  }
  if (n == 0 || !params) return -1; /* cuBLAS's GEMMs all take parameters */
  op->buf = aligned_alloc(64, (end + 63) & ~(size_t)63);
  op->buf_size = end;
  op->args = malloc(n * sizeof *op->args);
  if (!op->buf || !op->args) return -1;
  for (size_t i = 0; i < n; i++) {
    drv.param_info(f, i, &off, &size);
    memcpy(op->buf + off, params[i], size);
    op->args[i] = op->buf + off;
  }
  return 0;
}

/* The launch attributes a cuBLAS kernel may carry: cluster shape and
 * scheduling, cooperative launch. */
/* Parameters handed over as one packed buffer (CU_LAUNCH_PARAM_BUFFER_*),
 * as cuBLAS's Hopper kernels are: the buffer copied, launched the same way. */
static int copy_extra(void **extra, replay_op *op) {
  void *buf = NULL;
  const size_t *size = NULL;
  for (int i = 0; i < 8 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = extra[i + 1];
    else return -1;
  }
  if (!buf || !size || !*size || !(op->buf = aligned_alloc(64, (*size + 63) & ~(size_t)63)))
    return -1;
  memcpy(op->buf, buf, *size);
  op->buf_size = *size;
  op->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER, op->extra[1] = op->buf;
  op->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE, op->extra[3] = &op->buf_size;
  op->extra[4] = CU_LAUNCH_PARAM_END;
  return 0;
}

static void copy_attrs(CUgraphNode n, replay_op *op) {
  const CUlaunchAttributeID ids[REPLAY_ATTRS] = {
      CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
      CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
  for (int i = 0; i < REPLAY_ATTRS; i++) {
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    if (drv.node_attr(n, ids[i], &v) != CUDA_SUCCESS) continue;
    int set = i == 0 ? v.clusterDim.x > 0 : i == 1 ? v.clusterSchedulingPolicyPreference != 0
                                                   : v.cooperative != 0;
    if (set) op->attrs[op->n_attrs].id = ids[i], op->attrs[op->n_attrs++].value = v;
  }
}

static int take_kernel(CUgraphNode n, replay_op *op, const char **why) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  *why = "kernel node unreadable";
  if (drv.node_params(n, &p) != CUDA_SUCCESS) return -1;
  CUfunction f = p.func;
  if (!f && (!p.kern || drv.kernel_function(&f, p.kern) != CUDA_SUCCESS)) return -1;
  *op = (replay_op){.is_kernel = 1, .f = f, .kern = p.kern, .grid = {p.gridDimX, p.gridDimY, p.gridDimZ},
                    .block = {p.blockDimX, p.blockDimY, p.blockDimZ}, .smem = p.sharedMemBytes};
  copy_attrs(n, op);
  *why = p.extra ? "kernel parameters in an unknown extra form"
                 : "kernel parameter sizes unknown (cuFuncGetParamInfo)";
  return p.extra ? copy_extra(p.extra, op) : copy_params(f, p.kernelParams, op);
}

/* A 1-D memset of bytes (any element size when the value is 0). */
static int take_memset(cudaGraphNode_t n, replay_op *op) {
  struct cudaMemsetParams m;
  if (cudaGraphMemsetNodeGetParams(n, &m) != cudaSuccess || m.height != 1 ||
      (m.value != 0 && m.elementSize != 1))
    return -1;
  *op = (replay_op){.dst = m.dst, .value = (int)m.value, .bytes = m.width * m.elementSize};
  return 0;
}

static int take_node(cudaGraphNode_t n, replay_op *op, const char **why) {
  enum cudaGraphNodeType t;
  *why = "a node other than a kernel or a 1-D memset";
  if (cudaGraphNodeGetType(n, &t) != cudaSuccess) return -1;
  if (t == cudaGraphNodeTypeKernel) return take_kernel((CUgraphNode)n, op, why);
  return t == cudaGraphNodeTypeMemset ? take_memset(n, op) : -1;
}

/* The graph's nodes in order when they form one chain of kernels and
 * memsets (what a cuBLAS GEMM captures to); -1 otherwise. */
static int take_chain(cudaGraph_t g, replay_slot *s) {
  size_t n = 0, roots = 0;
  cudaGraphNode_t cur;
  s->why_plain = "not one chain of at most 4 nodes";
  if (cudaGraphGetNodes(g, NULL, &n) != cudaSuccess || n == 0 || n > REPLAY_OPS ||
      cudaGraphGetRootNodes(g, NULL, &roots) != cudaSuccess || roots != 1 ||
      cudaGraphGetRootNodes(g, &cur, &roots) != cudaSuccess)
    return -1;
  for (size_t i = 0; i < n; i++) {
    cudaGraphNode_t next[REPLAY_OPS];
    cudaGraphEdgeData edges[REPLAY_OPS];
    size_t deps = REPLAY_OPS;
    if (take_node(cur, &s->op[s->n_ops++], &s->why_plain)) return -1;
    s->why_plain = "not one chain of at most 4 nodes";
    if (cudaGraphNodeGetDependentNodes(cur, next, edges, &deps) != cudaSuccess ||
        deps != (i + 1 < n ? 1u : 0u))
      return -1;
    cur = next[0];
  }
  return 0;
}

/* Captures issue() once on the private stream and keeps its launches: the
 * slot becomes READY, or PLAIN when the call cannot be replayed. */
static void capture_call(attn_cuda_ctx *c, replay_slot *s, attn_cuda_issue_fn issue, void *arg,
                         cudaStream_t stream) {
  struct attn_cuda_replays *r = c->replays;
  enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = NULL;
  s->state = SLOT_PLAIN;
  s->why_plain = "the caller's stream is being captured";
  /* Under a caller's own capture, no second capture beside it. */
  if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone ||
      (!r->capture && cudaStreamCreateWithFlags(&r->capture, cudaStreamNonBlocking) != cudaSuccess)) {
    cudaGetLastError();
    return;
  }
  if (attn_cuda_ctx_blas_on(c, r->capture) == ATTN_STATUS_OK &&
      cudaStreamBeginCapture(r->capture, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    attn_status st = issue(arg, r->capture);
    s->why_plain = "the call failed under capture";
    if (cudaStreamEndCapture(r->capture, &graph) == cudaSuccess && !st && !take_chain(graph, s))
      s->state = SLOT_READY;
  }
  attn_cuda_ctx_blas_on(c, stream);
  if (graph) cudaGraphDestroy(graph);
  if (s->state != SLOT_READY) {
    for (int i = 0; i < s->n_ops; i++) op_free(&s->op[i]);
    s->n_ops = 0;
  }
  cudaGetLastError();
}

/* A kernel whose parameters were captured one by one, launched through the
 * runtime as cuBLAS 13.0 launches those (its sm80 FP32 kernels:
 * cudaLaunchKernelExC; a CUkernel is taken as a cudaKernel_t). */
static cudaError_t launch_runtime(const replay_op *op, cudaStream_t stream) {
  cudaLaunchAttribute at[REPLAY_ATTRS];
  _Static_assert(sizeof at[0] == sizeof op->attrs[0], "launch attribute layouts differ");
  memcpy(at, op->attrs, sizeof at);
  cudaLaunchConfig_t cfg = {{op->grid[0], op->grid[1], op->grid[2]},
                            {op->block[0], op->block[1], op->block[2]}, op->smem, stream, at,
                            op->n_attrs};
  return cudaLaunchKernelExC(&cfg, op->kern ? (const void *)op->kern : (const void *)op->f,
                             op->args);
}

static attn_status replay(const replay_slot *s, cudaStream_t stream) {
  for (int i = 0; i < s->n_ops; i++) {
    const replay_op *op = &s->op[i];
    if (!op->is_kernel) {
      ATTN_CUDA_TRY(cudaMemsetAsync(op->dst, op->value, op->bytes, stream));
      continue;
    }
    if (op->args) {
      ATTN_CUDA_TRY(launch_runtime(op, stream));
      continue;
    }
    /* A packed parameter buffer: the driver call cuBLAS uses for its Hopper
     * kernels (cuLaunchKernelEx). */
    CUlaunchConfig cfg = {op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1],
                          op->block[2], op->smem, (CUstream)stream,
                          (CUlaunchAttribute *)op->attrs, op->n_attrs};
    CUresult r = drv.launch(&cfg, op->f, NULL, (void **)op->extra);
    if (r != CUDA_SUCCESS) {
      const char *name = "?";
      drv.error_name(r, &name);
      return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cuLaunchKernelEx (a cuBLAS GEMM replayed) failed: %s",
                       name);
    }
  }
  return ATTN_STATUS_OK;
}

static replay_slot *slot_for(struct attn_cuda_replays *r, const void *key, size_t len) {
  for (int i = 0; i < REPLAY_SLOTS; i++)
    if (r->slot[i].state != SLOT_EMPTY && r->slot[i].key_len == len &&
        !memcmp(r->slot[i].key, key, len))
      return &r->slot[i];
  replay_slot *s = &r->slot[r->next];
  r->next = (r->next + 1) % REPLAY_SLOTS;
  slot_free(s);
  memcpy(s->key, key, len);
  s->key_len = len;
  return s; /* EMPTY: seen for the first time */
}

attn_status attn_cuda_replay_run(attn_cuda_ctx *c, const void *key, size_t key_len,
                                 attn_cuda_issue_fn issue, void *arg, cudaStream_t stream) {
  if (c->capturing || key_len > ATTN_CUDA_REPLAY_KEY || !attn_cuda_replay_enabled() ||
      (!c->replays && !(c->replays = calloc(1, sizeof *c->replays))))
    return issue(arg, stream);
  replay_slot *s = slot_for(c->replays, key, key_len);
  if (s->state == SLOT_EMPTY) { /* once is no pattern: a capture only on a repeat */
    s->state = SLOT_SEEN;
    return issue(arg, stream);
  }
  if (s->state == SLOT_SEEN) capture_call(c, s, issue, arg, stream);
  return s->state == SLOT_READY ? replay(s, stream) : issue(arg, stream);
}

int attn_cuda_replay_describe(const attn_cuda_ctx *c, const void *key, size_t key_len, char *out,
                              size_t len) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; c->replays && i < REPLAY_SLOTS; i++) {
    const replay_slot *s = &c->replays->slot[i];
    if (s->state == SLOT_EMPTY || s->key_len != key_len || memcmp(s->key, key, key_len)) continue;
    if (s->state != SLOT_READY) {
      snprintf(out, len, "not replayed: %s", s->state == SLOT_SEEN ? "seen once" : s->why_plain);
      return 0;
    }
    for (int k = 0; k < s->n_ops && used < len; k++) {
      const replay_op *op = &s->op[k];
      const char *name = "?";
      if (op->is_kernel) drv.func_name(&name, op->f);
      used += op->is_kernel
                  ? (size_t)snprintf(out + used, len - used,
                                     "%skernel %s grid %ux%ux%u block %u smem %u attrs %u "
                                     "params %zu B %s",
                                     k ? "; " : "", name, op->grid[0], op->grid[1], op->grid[2],
                                     op->block[0], op->smem, op->n_attrs, op->buf_size,
                                     op->args ? "(cudaLaunchKernelExC)" : "(cuLaunchKernelEx)")
                  : (size_t)snprintf(out + used, len - used, "%smemset %zu B", k ? "; " : "",
                                     op->bytes);
    }
    return 1;
  }
  return 0;
}
