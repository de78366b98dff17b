/* Captured forwards of the cuBLAS-driven backends, kept in the handle's
 * cache (see graph_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/baselines/graph_cache.h"

/* Everything a captured graph bakes in: the arguments field by field (no
 * struct padding compared), the device, and the context's buffers. */
typedef struct {
  int tag, causal, mask_kind, device;
  double scale;
  attn_tensor q, k, v, out, mask;
  const void *lse, *scratch, *keep, *blas_ws;
} graph_key;

/* A graph in the handle's cache. */
typedef struct {
  int device;
  cudaGraphExec_t exec;
} graph_entry;

struct attn_cuda_graphs {
  graph_key last; /* the previous call's key: a repeat is captured */
  int have_last;
  cudaStream_t capture; /* private stream: the legacy stream cannot capture */
  int broken;           /* capture failed once here: eager from then on */
};

static graph_key key_of(int tag, const attn_args *a, const attn_cuda_ctx *c, const void *keep) {
  graph_key k;
  memset(&k, 0, sizeof k);
  k.tag = tag, k.causal = a->causal, k.mask_kind = a->mask_kind, k.scale = a->scale;
  k.device = c->device;
  k.q = a->q, k.k = a->k, k.v = a->v, k.out = a->out;
  if (a->mask_kind != ATTN_MASK_NONE) k.mask = a->mask;
  k.lse = a->lse, k.scratch = c->scratch, k.keep = keep, k.blas_ws = c->blas_ws;
  return k;
}

static void entry_free(void *v) {
  graph_entry *e = v;
  if (cudaSetDevice(e->device) == cudaSuccess) cudaGraphExecDestroy(e->exec);
  free(e);
}

void attn_cuda_graphs_free(attn_cuda_ctx *c) {
  if (!c->graphs) return;
  if (c->graphs->capture) cudaStreamDestroy(c->graphs->capture);
  free(c->graphs);
  c->graphs = NULL;
}

/* cuBLAS back on the context's stream with its workspace (setting a stream
 * resets the workspace). */
/* Captures ops into a graph and instantiates it; *exec NULL on failure
 * (the capture is ended and every sticky-free error cleared). */
static attn_status capture(attn_cuda_ctx *c, const attn_args *a, attn_cuda_ops_fn ops, void *state,
                           cudaGraphExec_t *exec) {
  struct attn_cuda_graphs *g = c->graphs;
  cudaGraph_t graph = NULL;
  *exec = NULL;
  if (!g->capture) ATTN_CUDA_TRY(cudaStreamCreateWithFlags(&g->capture, cudaStreamNonBlocking));
  attn_status st = attn_cuda_ctx_blas_on(c, g->capture);
  cudaError_t begin =
      st ? cudaSuccess : cudaStreamBeginCapture(g->capture, cudaStreamCaptureModeThreadLocal);
  if (st || begin != cudaSuccess) { /* cuBLAS must not stay on the capture stream */
    attn_cuda_ctx_blas_on(c, c->stream);
    return st ? st : attn_cuda_fail(begin, "cudaStreamBeginCapture");
  }
  st = ops(a, c, g->capture, state);
  cudaError_t end = cudaStreamEndCapture(g->capture, &graph);
  attn_status back = attn_cuda_ctx_blas_on(c, c->stream);
  if (!st && end != cudaSuccess) st = attn_cuda_fail(end, "cudaStreamEndCapture");
  if (!st && (end = cudaGraphInstantiate(exec, graph, 0)) != cudaSuccess) {
    *exec = NULL;
    st = attn_cuda_fail(end, "cudaGraphInstantiate");
  }
  if (graph) cudaGraphDestroy(graph);
  if (!st) st = back;
  if (st) {
    if (*exec) cudaGraphExecDestroy(*exec);
    *exec = NULL;
    cudaGetLastError();
  }
  return st;
}

/* Graphs apply: enabled, not broken here, and the caller's stream is not
 * itself being captured. */
static int graphs_apply(attn_cuda_ctx *c, cudaStream_t user) {
  enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (!c->owner->opts.cuda_graphs) return 0;
  if (!c->graphs && !(c->graphs = calloc(1, sizeof *c->graphs))) return 0;
  if (c->graphs->broken) return 0;
  if (cudaStreamIsCapturing(user, &cap) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return cap == cudaStreamCaptureStatusNone;
}

attn_status attn_cuda_graph_run(attn_cuda_ctx *c, int tag, const attn_args *a, const void *keep,
                                attn_cuda_ops_fn ops, void *state) {
  cudaStream_t user = (cudaStream_t)a->stream;
  if (!graphs_apply(c, user)) return ops(a, c, user, state);
  struct attn_cuda_graphs *g = c->graphs;
  graph_key k = key_of(tag, a, c, keep);
  attn_cache *cache = c->owner->cache;
  graph_entry *e = attn_cache_find(cache, ATTN_CACHE_CUDA_GRAPH, &k, sizeof k);
  if (!e) {
    int repeat = g->have_last && !memcmp(&g->last, &k, sizeof k);
    g->last = k, g->have_last = 1;
    cudaGraphExec_t exec;
    if (!repeat) return ops(a, c, user, state);
    if (capture(c, a, ops, state, &exec) != ATTN_STATUS_OK) {
      g->broken = 1; /* say nothing: the eager path is the same forward */
      return ops(a, c, user, state);
    }
    if (!(e = malloc(sizeof *e))) {
      cudaGraphExecDestroy(exec);
      return ops(a, c, user, state);
    }
    e->device = c->device, e->exec = exec;
    if (attn_cache_put(cache, ATTN_CACHE_CUDA_GRAPH, &k, sizeof k, e, entry_free))
      return ops(a, c, user, state);
  }
  ATTN_CUDA_TRY(cudaGraphLaunch(e->exec, user));
  return ATTN_STATUS_OK;
}
