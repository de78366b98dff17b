/* Captured forwards of the cuBLAS-driven backends (see graph_cache.h). */
#include <stdlib.h>
#include <string.h>

#include "attn/cuda/cuda_common.h"
#include "attn/cuda/graph_cache.h"

enum { GRAPH_SLOTS = 16 };

/* Everything a captured graph bakes in: the arguments field by field (no
 * struct padding compared), and the context's buffers. */
typedef struct {
  int tag, causal, mask_kind, zero_;
  double scale;
  attn_tensor q, k, v, out, mask;
  const void *lse, *scratch, *keep;
} graph_key;

typedef struct {
  graph_key key;
  cudaGraphExec_t exec; /* NULL: empty slot */
} graph_slot;

struct attn_cuda_graphs {
  graph_slot slot[GRAPH_SLOTS];
  int next;             /* round-robin eviction */
  graph_key last;       /* the previous call's key: a repeat is captured */
  int have_last;
  cudaStream_t capture; /* private stream: the legacy stream cannot capture */
  int broken;           /* capture failed once here: eager from then on */
};

static int graphs_enabled(void) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *v = getenv("ATTNPROF_CUDA_GRAPHS");
    enabled = v && v[0] == '1';
  }
  return enabled;
}

static graph_key key_of(int tag, const attn_args *a, const attn_cuda_ctx *c) {
  graph_key k;
  memset(&k, 0, sizeof k);
  k.tag = tag, k.causal = a->causal, k.mask_kind = a->mask_kind, k.scale = a->scale;
  k.q = a->q, k.k = a->k, k.v = a->v, k.out = a->out;
  if (a->mask_kind != ATTN_MASK_NONE) k.mask = a->mask;
  k.lse = a->lse, k.scratch = c->scratch, k.keep = c->causal_keep;
  return k;
}

void attn_cuda_graphs_clear(attn_cuda_ctx *c) {
  if (!c->graphs) return;
  for (int i = 0; i < GRAPH_SLOTS; i++)
    if (c->graphs->slot[i].exec) cudaGraphExecDestroy(c->graphs->slot[i].exec);
  memset(c->graphs->slot, 0, sizeof c->graphs->slot);
  c->graphs->have_last = 0;
}

void attn_cuda_graphs_free(attn_cuda_ctx *c) {
  if (!c->graphs) return;
  attn_cuda_graphs_clear(c);
  if (c->graphs->capture) cudaStreamDestroy(c->graphs->capture);
  free(c->graphs);
  c->graphs = NULL;
}

/* cuBLAS back on the context's stream with its workspace (setting a stream
 * resets the workspace). */
/* Captures ops into a graph and instantiates it; *exec NULL on failure
 * (the capture is ended and every sticky-free error cleared). */
static attn_status capture(attn_cuda_ctx *c, const attn_args *a, attn_cuda_ops_fn ops,
                           void *state, cudaGraphExec_t *exec) {
  struct attn_cuda_graphs *g = c->graphs;
  cudaGraph_t graph = NULL;
  *exec = NULL;
  if (!g->capture) ATTN_CUDA_TRY(cudaStreamCreateWithFlags(&g->capture, cudaStreamNonBlocking));
  attn_status st = attn_cuda_ctx_blas_on(c, g->capture);
  cudaError_t begin = st ? cudaSuccess : cudaStreamBeginCapture(g->capture,
                                                                cudaStreamCaptureModeThreadLocal);
  if (st || begin != cudaSuccess) { /* cuBLAS must not stay on the capture stream */
    attn_cuda_ctx_blas_on(c, c->stream);
    return st ? st : attn_cuda_fail(begin, "cudaStreamBeginCapture");
  }
  c->capturing = 1; /* the GEMMs issue plain cuBLAS calls into this graph */
  st = ops(a, c, g->capture, state);
  c->capturing = 0;
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

static graph_slot *find(struct attn_cuda_graphs *g, const graph_key *k) {
  for (int i = 0; i < GRAPH_SLOTS; i++)
    if (g->slot[i].exec && !memcmp(&g->slot[i].key, k, sizeof *k)) return &g->slot[i];
  return NULL;
}

static graph_slot *store(struct attn_cuda_graphs *g, const graph_key *k, cudaGraphExec_t exec) {
  graph_slot *s = &g->slot[g->next];
  g->next = (g->next + 1) % GRAPH_SLOTS;
  if (s->exec) cudaGraphExecDestroy(s->exec);
  s->key = *k, s->exec = exec;
  return s;
}

/* Graphs apply: enabled, not broken here, and the caller's stream is not
 * itself being captured. */
static int graphs_apply(attn_cuda_ctx *c, cudaStream_t user) {
  enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (!graphs_enabled()) return 0;
  if (!c->graphs && !(c->graphs = calloc(1, sizeof *c->graphs))) return 0;
  if (c->graphs->broken) return 0;
  if (cudaStreamIsCapturing(user, &cap) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return cap == cudaStreamCaptureStatusNone;
}

attn_status attn_cuda_graph_run(attn_cuda_ctx *c, int tag, const attn_args *a,
                                attn_cuda_ops_fn ops, void *state) {
  cudaStream_t user = (cudaStream_t)a->stream;
  if (!graphs_apply(c, user)) return ops(a, c, user, state);
  struct attn_cuda_graphs *g = c->graphs;
  graph_key k = key_of(tag, a, c);
  graph_slot *s = find(g, &k);
  if (!s) {
    int repeat = g->have_last && !memcmp(&g->last, &k, sizeof k);
    g->last = k, g->have_last = 1;
    cudaGraphExec_t exec;
    if (!repeat) return ops(a, c, user, state);
    if (capture(c, a, ops, state, &exec) != ATTN_STATUS_OK) {
      g->broken = 1; /* say nothing: the eager path is the same forward */
      return ops(a, c, user, state);
    }
    s = store(g, &k, exec);
  }
  ATTN_CUDA_TRY(cudaGraphLaunch(s->exec, user));
  return ATTN_STATUS_OK;
}
