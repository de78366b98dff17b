/* The `cudnn` backend: cuDNN's fused SDPA kernel through the graph backend
 * C API (cudnn_graph.c builds the graph, cudnn_plan.c the plan), with plans
 * cached per problem so that a call after the first only executes.
 *
 * Per call (host): key the problem, find its plan, point the handle at the
 * stream if it changed, reuse the variant pack if the pointers repeat,
 * cudnnBackendExecute. The why-not check is the same plan lookup: inputs no
 * engine takes are refused with cuDNN's status, and the refusal is cached.
 *
 * libcudnn is opened at run time: without it the backend reports why in its
 * `available` hook and everything else works. *
 * The state it keeps lives in the engine handle (cudnn_state.h): per-device
 * handles and workspaces, plans in the handle's cache. */
#include "attn/cuda/cudnn/cudnn_cuda.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/cudnn/cudnn_ragged.h"
#include "attn/cuda/cudnn/cudnn_seqs.h"
#include "attn/cuda/cudnn/cudnn_state.h"

/* ---- checks ---------------------------------------------------------------- */
static attn_status cudnn_available(char *why, size_t len) {
  attn_status s = attn_cuda_available(why, len);
  if (s) return s;
  /* Loaded once per process, thread-safe: handles on other threads may ask. */
  return attn_cudnn_api_get(why, len) ? ATTN_STATUS_OK : ATTN_STATUS_UNSUPPORTED;
}

/* cuDNN works on the current device: make it the tensors' one for a call. */
static int device_enter(int device) {
  int prev = -1;
  if (cudaGetDevice(&prev) == cudaSuccess && prev != device) cudaSetDevice(device);
  return prev;
}

static void device_leave(int prev, int device) {
  if (prev >= 0 && prev != device) cudaSetDevice(prev);
}

/* Packed queries or K/V: [B, H, most rows of a sequence, D] with ragged
 * offsets; the batch stride is not used but set to a whole sequence. */
static void packed_dims(const attn_args *a, attn_cudnn_problem *p) {
  attn_seqs_view v;
  int64_t max_q = 1, max_kv = 1;
  if (!attn_seqs_view_make(a, &v)) { /* checked before (why-not): cannot fail here */
    max_q = v.max_q > 1 ? v.max_q : 1, max_kv = v.max_kv > 1 ? v.max_kv : 1;
    attn_seqs_view_free(&v);
  }
  if (a->seqs->q_offsets) {
    p->q_packed = 1, p->sq = max_q;
    p->q_strides[0] = max_q * p->q_strides[2], p->o_strides[0] = max_q * p->o_strides[2];
  }
  if (a->seqs->kv_offsets) {
    p->sk = max_kv;
    p->k_strides[0] = max_kv * p->k_strides[2], p->v_strides[0] = max_kv * p->v_strides[2];
  }
}

static void problem_of(const attn_ctx *ctx, const attn_args *a, attn_cudnn_problem *p) {
  memset(p, 0, sizeof *p);
  p->b = attn_batch(a), p->hq = attn_heads_q(a), p->hkv = attn_heads_kv(a);
  p->sq = attn_seq_q(a), p->sk = attn_seq_k(a), p->d = attn_head_dim(a);
  memcpy(p->q_strides, a->q.strides, sizeof p->q_strides);
  memcpy(p->k_strides, a->k.strides, sizeof p->k_strides);
  memcpy(p->v_strides, a->v.strides, sizeof p->v_strides);
  memcpy(p->o_strides, a->out.strides, sizeof p->o_strides);
  p->dtype = a->q.dtype;
  /* With Sq == Sk the two alignments are one mask: share the plan. */
  p->causal = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT && p->sq == p->sk ? ATTN_CAUSAL_TOP_LEFT
                                                                      : (int32_t)a->causal;
  p->lse = a->lse != NULL;
  p->device = a->q.device;
  p->graph = ctx->opts.cudnn_graph;
  p->fault = ctx->cudnn_fault;
  const attn_seqs *sq = a->seqs;
  if (!sq || (!sq->kv_lens && !sq->block_table && !sq->q_offsets && !sq->kv_offsets))
    return; /* dense: the graphs above */
  /* Several sequences against a cache, or packed (cudnn_seqs.c refused the rest). */
  p->b = sq->batch;
  p->seqs_kv = sq->block_table ? ATTN_KV_PAGED : sq->kv_offsets ? ATTN_KV_PACKED : ATTN_KV_CACHE;
  if (sq->q_offsets || sq->kv_offsets) packed_dims(a, p);
  if (p->seqs_kv == ATTN_KV_PAGED) {
    p->page_size = a->k.shape[2], p->pages = a->k.shape[0], p->max_pages = sq->max_pages;
    p->table_stride = sq->table_stride ? sq->table_stride : sq->max_pages;
    p->sk = p->max_pages * p->page_size;
  }
  /* One new token: bottom-right causal hides nothing the lengths do not. */
  p->causal = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT && p->sq > 1 ? ATTN_CAUSAL_BOTTOM_RIGHT
                                                                 : ATTN_CAUSAL_NONE;
}

/* Several sequences: what cudnn_seqs.c refuses, and 16-byte aligned tables
 * (every cuDNN tensor is declared so). */
static attn_status seqs_why_not(const attn_args *a, char *why, size_t len) {
  const attn_cudnn_api *api = cudnn_state_api(why, len);
  if (!api) return ATTN_STATUS_UNSUPPORTED;
  attn_seqs_view v;
  attn_status s = attn_seqs_view_make(a, &v);
  if (s) return snprintf(why, len, "%s", attn_last_error()), s;
  s = attn_cudnn_seqs_why_not(api->version, a, &v, why, len);
  attn_seqs_view_free(&v);
  const void *tabs[2] = {a->seqs->kv_lens, a->seqs->block_table};
  for (int i = 0; i < 2 && !s; i++)
    if ((uintptr_t)tabs[i] % 16)
      s = attn_cudnn_refuse(why, len, "cudnn_cuda needs 16-byte aligned %s (it is %d bytes off)",
                            i ? "block_table" : "kv_lens", (int)((uintptr_t)tabs[i] % 16));
  return s;
}

/* What cuDNN's fused kernels cannot take, said before asking cuDNN. */
static attn_status inputs_why_not(const attn_args *a, char *why, size_t len) {
  static const char *const names[4] = {"q", "k", "v", "out"};
  const attn_tensor *t[4] = {&a->q, &a->k, &a->v, &a->out};
  if (a->mask_kind != ATTN_MASK_NONE)
    return attn_cudnn_refuse(why, len,
                             "cudnn_cuda takes no explicit mask (causal only): use efficient or "
                             "math");
  for (int i = 0; i < 4; i++) {
    if (t[i]->strides[3] != 1)
      return attn_cudnn_refuse(why, len,
                               "cudnn_cuda needs D contiguous: %s has stride[3] = %lld (want 1)",
                               names[i], (long long)t[i]->strides[3]);
    if ((uintptr_t)t[i]->data % 16)
      return attn_cudnn_refuse(why, len,
                               "cudnn_cuda needs 16-byte aligned tensors: %s is %d bytes off",
                               names[i], (int)((uintptr_t)t[i]->data % 16));
    /* Every row must start 16-byte aligned too: cuDNN 9.14 accepts rows of
     * D + 3 elements and reads them as if aligned (NaN out, seen on the H200). */
    for (int dim = 0; dim < 3; dim++)
      if (t[i]->shape[dim] > 1 && t[i]->strides[dim] * (int64_t)attn_dtype_size(t[i]->dtype) % 16)
        return attn_cudnn_refuse(why, len,
                                 "cudnn_cuda needs every row of %s to start 16-byte aligned: "
                                 "stride[%d] = %lld elements is not a multiple of 8",
                                 names[i], dim, (long long)t[i]->strides[dim]);
  }
  if ((uintptr_t)a->lse % 16)
    return attn_cudnn_refuse(why, len,
                             "cudnn_cuda needs a 16-byte aligned lse (it is %d bytes off)",
                             (int)((uintptr_t)a->lse % 16));
  if (attn_head_dim(a) % 8)
    return attn_cudnn_refuse(why, len,
                             "cuDNN's fused attention takes head dims that are multiples of 8; "
                             "got D=%lld",
                             (long long)attn_head_dim(a));
  const attn_seqs *sq = a->seqs; /* the seqs graph masks per sequence (cudnn_seqs.c) */
  const int cache = sq && (sq->kv_lens || sq->block_table || sq->q_offsets || sq->kv_offsets);
  if (!cache && a->causal == ATTN_CAUSAL_BOTTOM_RIGHT && attn_seq_q(a) > attn_seq_k(a))
    return attn_cudnn_refuse(why, len,
                             "bottom-right causal with Sq > Sk (by %lld) leaves rows with no key: "
                             "cuDNN's graph gives NaN there, attn.h wants 0: use math or flash",
                             (long long)(attn_seq_q(a) - attn_seq_k(a)));
  return ATTN_STATUS_OK;
}

/* With the tensors' device current: the plan for a (built on first sight),
 * or a status with the reason in why. */
static attn_status plan_for(attn_ctx *ctx, const attn_args *a, cudnn_device **dev,
                            cudnn_plan **plan, char *why, size_t len) {
  attn_cudnn_problem p;
  problem_of(ctx, a, &p);
  if (!(*dev = cudnn_state_device(ctx, a->q.device))) {
    snprintf(why, len, "%s", attn_last_error());
    return ATTN_STATUS_BACKEND_ERROR;
  }
  if (!(*plan = cudnn_state_plan(ctx, *dev, &p))) {
    snprintf(why, len, "cudnn_cuda: out of host memory building a plan");
    return ATTN_STATUS_OUT_OF_MEMORY;
  }
  if ((*plan)->status) snprintf(why, len, "cuDNN cannot run these inputs: %s", (*plan)->why);
  return (*plan)->status;
}

static attn_status cudnn_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t len) {
  attn_status s = a->seqs ? seqs_why_not(a, why, len) : ATTN_STATUS_OK;
  if (!s) s = inputs_why_not(a, why, len);
  if (s) return s;
  cudnn_device *dev;
  cudnn_plan *plan;
  int prev = device_enter(a->q.device);
  s = plan_for(ctx, a, &dev, &plan, why, len);
  device_leave(prev, a->q.device);
  size_t limit = ctx->opts.workspace_limit;
  if (!s && limit && (size_t)plan->choice.workspace > limit)
    return snprintf(why, len,
                    "cuDNN's plan needs %lld bytes of workspace, past the handle's "
                    "workspace_limit of %zu bytes",
                    (long long)plan->choice.workspace, limit),
           ATTN_STATUS_OUT_OF_MEMORY;
  return s;
}

/* ---- execution (device current) ------------------------------------------ */

/* The workspace of `stream`, at least `need` bytes. A stream new here takes
 * a free slot or the least recently used one; taking one over, or growing
 * one, waits for the device first, since work queued earlier may still use
 * the block. Neither happens in a steady state, so no call pays for it. */
static attn_status workspace_for(const attn_ctx *ctx, cudnn_device *d, cudaStream_t stream,
                                 size_t need, void **out) {
  size_t limit = ctx->opts.workspace_limit;
  if (limit && need > limit)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY,
                     "cuDNN's plan needs %zu bytes of workspace, past the handle's "
                     "workspace_limit of %zu bytes",
                     need, limit);
  cudnn_workspace *w = NULL, *lru = &d->ws[0];
  for (int i = 0; i < CUDNN_WORKSPACES && !w; i++) {
    if (d->ws[i].used && d->ws[i].stream == stream) w = &d->ws[i];
    else if (!d->ws[i].used || (lru->used && d->ws[i].last_use < lru->last_use)) lru = &d->ws[i];
  }
  if (!w) {
    w = lru;
    if (w->used && w->ptr) ATTN_CUDA_TRY(cudaDeviceSynchronize());
    w->stream = stream, w->used = 1;
  }
  w->last_use = ++d->tick;
  if (need > w->bytes) {
    size_t bytes = (need + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1); /* whole MiB */
    if (w->ptr) {
      ATTN_CUDA_TRY(cudaDeviceSynchronize());
      cudaFree(w->ptr);
    }
    w->ptr = NULL, w->bytes = 0;
    ATTN_CUDA_TRY(cudaMalloc(&w->ptr, bytes));
    w->bytes = bytes;
  }
  *out = w->ptr;
  return ATTN_STATUS_OK;
}

/* Points the handle at `stream` when it changed (cudnnSetStream is cheap
 * but not free: only on a change). */
static attn_status stream_for(const attn_cudnn_api *api, cudnn_device *d, cudaStream_t stream) {
  if (d->stream_set && d->stream == stream) return ATTN_STATUS_OK;
  cudnnStatus_t s = api->SetStream(d->handle, stream);
  if (s != CUDNN_STATUS_SUCCESS)
    return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cudnnSetStream failed: %s",
                     api->GetErrorString(s));
  d->stream = stream, d->stream_set = 1;
  return ATTN_STATUS_OK;
}

/* The variant pack for these pointers: the cached one when they repeat. */
/* Packed sequences' per-call tensors in the workspace's tail: the ragged
 * offsets (4 rows of rs entries, 8 or 4 bytes) and the lengths (2 rows of rs
 * int32). */
typedef struct {
  char *offs;
  int32_t *lens;
  int64_t rs, es;
} ragged_bufs;

static attn_status pack_for(const attn_cudnn_api *api, cudnn_plan *e, const attn_args *a, void *ws,
                            const ragged_bufs *rb) {
  void *ptr[ATTN_CUDNN_UID_COUNT] = {0};
  ptr[ATTN_CUDNN_UID_Q] = a->q.data, ptr[ATTN_CUDNN_UID_K] = a->k.data;
  ptr[ATTN_CUDNN_UID_V] = a->v.data, ptr[ATTN_CUDNN_UID_O] = a->out.data;
  ptr[ATTN_CUDNN_UID_STATS] = a->lse;
  if (a->seqs) {
    const int qp = a->seqs->q_offsets != NULL, kp = a->seqs->kv_offsets != NULL;
    const int64_t row = rb->rs * rb->es; /* bytes of one offsets row */
    ptr[ATTN_CUDNN_UID_LEN_Q] = qp ? (void *)rb->lens : e->len_q;
    ptr[ATTN_CUDNN_UID_LEN_KV] = kp ? (void *)(rb->lens + rb->rs) : (void *)a->seqs->kv_lens;
    ptr[ATTN_CUDNN_UID_PAGE_TABLE] = (void *)a->seqs->block_table;
    ptr[ATTN_CUDNN_UID_Q_RAGGED] = qp ? rb->offs : NULL;
    ptr[ATTN_CUDNN_UID_O_RAGGED] = qp ? rb->offs + row : NULL;
    ptr[ATTN_CUDNN_UID_K_RAGGED] = kp ? rb->offs + 2 * row : NULL;
    ptr[ATTN_CUDNN_UID_V_RAGGED] = kp ? rb->offs + 3 * row : NULL;
  }
  float scale = (float)attn_scale_of(a);
  if (e->pack && e->pack_ws == ws && e->scale == scale && !memcmp(ptr, e->pack_ptrs, sizeof ptr))
    return ATTN_STATUS_OK;
  if (e->pack) api->BackendDestroyDescriptor(e->pack), e->pack = NULL;
  memcpy(e->pack_ptrs, ptr, sizeof ptr);
  e->pack_ws = ws, e->scale = scale;
  /* By-value tensors: host pointers into the plan entry. */
  ptr[ATTN_CUDNN_UID_SCALE] = &e->scale, ptr[ATTN_CUDNN_UID_NEG_INF] = &e->neg_inf;
  ptr[ATTN_CUDNN_UID_SEQ_KV] = &e->seq_kv, ptr[ATTN_CUDNN_UID_SEQ_Q] = &e->seq_q;
  int64_t uids[ATTN_CUDNN_UID_COUNT], n = 0;
  void *ptrs[ATTN_CUDNN_UID_COUNT];
  for (int64_t u = 1; u < ATTN_CUDNN_UID_COUNT; u++)
    if (e->uses[u]) uids[n] = u, ptrs[n++] = ptr[u];
  static const char what[] = "the variant pack";
  attn_cudnn_builder b;
  attn_cudnn_builder_init(&b, api);
  attn_cudnn_desc pack = attn_cudnn_create(&b, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, what);
  attn_cudnn_set(&b, pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids, what);
  attn_cudnn_set(&b, pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs,
                 what);
  attn_cudnn_set(&b, pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, what);
  attn_cudnn_finalize(&b, pack, what);
  if (b.status != CUDNN_STATUS_SUCCESS) {
    char text[320];
    attn_cudnn_status_text(api, b.status, text, sizeof text);
    attn_cudnn_desc_release(&b);
    return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cudnn_cuda: %s failed: %s", b.failed_call, text);
  }
  free(b.owned); /* keep the descriptor itself: it is the cached pack */
  e->pack = pack;
  return ATTN_STATUS_OK;
}

static attn_status execute(const attn_ctx *ctx, cudnn_device *d, cudnn_plan *e,
                           const attn_args *a) {
  const attn_cudnn_api *api = cudnn_state_api(NULL, 0);
  cudaStream_t stream = (cudaStream_t)a->stream;
  void *ws = NULL;
  attn_status s;
  /* Packed sequences: their ragged offsets and lengths after cuDNN's
   * workspace (the stream's own block, so calls on it stay ordered). */
  const int packed = a->seqs && (a->seqs->q_offsets || a->seqs->kv_offsets);
  const int wide = ATTN_CUDNN_RAGGED_WIDE(api->version);
  const size_t plan_ws = ((size_t)e->choice.workspace + 255) & ~(size_t)255;
  ragged_bufs rb = {.rs = packed ? (a->seqs->batch + 4) / 4 * 4 : 0, .es = wide ? 8 : 4};
  const size_t offs_bytes = (size_t)(4 * rb.rs * rb.es); /* rows stay 16-byte aligned */
  if ((s = workspace_for(ctx, d, stream, plan_ws + offs_bytes + (size_t)(2 * rb.rs) * 4, &ws)))
    return s;
  rb.offs = (char *)ws + plan_ws, rb.lens = (int32_t *)(rb.offs + offs_bytes);
  if (packed && (s = attn_cudnn_ragged_fill(a, rb.offs, wide, rb.lens, rb.rs, stream))) return s;
  if ((s = stream_for(api, d, stream))) return s;
  if ((s = pack_for(api, e, a, ws, &rb))) return s;
  cudnnStatus_t cs = api->BackendExecute(d->handle, e->choice.plan, e->pack);
  if (cs != CUDNN_STATUS_SUCCESS) {
    char text[320];
    attn_cudnn_status_text(api, cs, text, sizeof text);
    return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cudnnBackendExecute failed: %s", text);
  }
  return ATTN_STATUS_OK;
}

static attn_status cudnn_forward(attn_ctx *ctx, const attn_args *a) {
  char why[512];
  cudnn_device *dev;
  cudnn_plan *plan;
  int prev = device_enter(a->q.device);
  attn_status s = plan_for(ctx, a, &dev, &plan, why, sizeof why);
  if (s) attn_fail(s, "%s", why);
  else s = execute(ctx, dev, plan, a);
  device_leave(prev, a->q.device);
  return s;
}

attn_status attn_cudnn_describe(attn_ctx *ctx, const attn_args *a, char *buf, size_t len) {
  attn_status s = attn_why_not(ctx, ATTN_BACKEND_CUDNN, a, buf, len);
  if (s) return s;
  cudnn_device *dev;
  cudnn_plan *e;
  int prev = device_enter(a->q.device);
  s = plan_for(ctx, a, &dev, &e, buf, len);
  device_leave(prev, a->q.device);
  if (!s)
    snprintf(buf, len,
             "%s, engine %lld%s (heuristics %s, %d configs tried), workspace %lld B, "
             "built in %.1f ms",
             e->graph_name, (long long)e->choice.engine,
             e->choice.runtime_compiled ? " runtime-compiled" : "", e->choice.heuristics,
             e->choice.configs_tried, (long long)e->choice.workspace, e->build_ms);
  return s;
}

const attn_backend_impl attn_backend_cudnn_cuda = {
    .backend = ATTN_BACKEND_CUDNN,
    .impl = "cudnn_cuda",
    .device_kind = 0,
    .summary = "cuDNN's fused SDPA kernel through the graph backend C API, one plan cached per "
               "problem",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F16) | ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = 256,
    .why_not = cudnn_why_not,
    .forward = cudnn_forward,
    .available = cudnn_available,
    .takes_seqs = 1, /* dense queries against a paged or contiguous cache: cudnn_seqs.h */
};

/* ---- state in the engine handle: devices, plans --------------------------- */
/* The library's function table: loaded once per process (a library, like a
 * dlopen handle, is process state; nothing per call lives here). */
static const attn_cudnn_api *loaded_api;

const attn_cudnn_api *cudnn_state_api(char *why, size_t why_len) {
  if (!loaded_api) loaded_api = attn_cudnn_api_get(why, why_len);
  else if (why && why_len) why[0] = '\0';
  return loaded_api;
}

cudnn_device *cudnn_state_device(attn_ctx *ctx, int device) {
  if (device < 0 || device >= ATTN_CTX_MAX_DEVICES) {
    attn_fail(ATTN_STATUS_UNSUPPORTED, "cudnn_cuda: device %d is past the %d devices it serves",
              device, ATTN_CTX_MAX_DEVICES);
    return NULL;
  }
  cudnn_device *d = ctx->cudnn[device];
  if (d && d->ready) return d;
  if (!d && !(d = ctx->cudnn[device] = calloc(1, sizeof *d))) {
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cudnn_cuda: no host memory for device state");
    return NULL;
  }
  char why[512];
  if (!cudnn_state_api(why, sizeof why)) {
    attn_fail(ATTN_STATUS_UNSUPPORTED, "cudnn_cuda: %s", why);
    return NULL;
  }
  /* cudnnCreate binds the handle to the current device (the caller's). */
  cudnnStatus_t s = loaded_api->Create(&d->handle);
  if (s != CUDNN_STATUS_SUCCESS) {
    char text[320];
    attn_cudnn_status_text(loaded_api, s, text, sizeof text);
    attn_fail(ATTN_STATUS_BACKEND_ERROR, "cudnnCreate failed on device %d: %s", device, text);
    return NULL;
  }
  d->ready = 1;
  return d;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static const char *kind_name(const attn_cudnn_problem *p, attn_cudnn_graph_kind k) {
  if (p->seqs_kv == ATTN_KV_PACKED) return "packed-sequence graph (ragged offsets)";
  if (p->seqs_kv) return p->seqs_kv == ATTN_KV_PAGED ? "paged-cache graph" : "KV-cache graph";
  return k == ATTN_CUDNN_GRAPH_NODE ? "SDPA_FWD node" : "composite graph";
}

/* One attempt with one graph kind; on failure appends the reason to e->why. */
static int try_kind(cudnn_plan *e, cudnnHandle_t h, const attn_cudnn_problem *p,
                    attn_cudnn_graph_kind kind) {
  attn_cudnn_builder_init(&e->descs, loaded_api);
  attn_cudnn_desc graph = attn_cudnn_sdpa_graph(&e->descs, h, p, kind, e->uses);
  if (graph && attn_cudnn_plan_build(&e->descs, h, graph, &e->choice) == 0) {
    e->kind = kind, e->graph_name = kind_name(p, kind);
    return 1;
  }
  char text[320];
  size_t used = strlen(e->why);
  attn_cudnn_status_text(loaded_api, e->descs.status, text, sizeof text);
  snprintf(e->why + used, sizeof e->why - used, "%s%s: %s failed: %s", used ? "; " : "",
           kind_name(p, kind), e->descs.failed_call, text);
  used = strlen(e->why);
  if (p->seqs_kv) /* what the graph was built for, so one refusal says it all */
    snprintf(e->why + used, sizeof e->why - used,
             " [B=%lld Hq=%lld Hkv=%lld n_new=%lld D=%lld "
             "reach=%lld pages=%lld page_size=%lld max_pages=%lld causal=%d]",
             (long long)p->b, (long long)p->hq, (long long)p->hkv, (long long)p->sq,
             (long long)p->d, (long long)p->sk, (long long)p->pages, (long long)p->page_size,
             (long long)p->max_pages, (int)p->causal);
  /* NOT_SUPPORTED (3xxx) and BAD_PARAM (2xxx) say "not these inputs"; the
   * rest is cuDNN failing. Either way dispatch moves on. */
  int category = (int)e->descs.status / 1000 * 1000;
  e->status =
      category == 2000 || category == 3000 ? ATTN_STATUS_UNSUPPORTED : ATTN_STATUS_BACKEND_ERROR;
  attn_cudnn_desc_release(&e->descs);
  return 0;
}

/* The plan's [B] device lengths of the queries (n_new each): constant for
 * the plan's key, so written once here. */
static int len_q_make(cudnn_plan *e, const attn_cudnn_problem *p) {
  int32_t *h = malloc((size_t)p->b * sizeof *h);
  cudaError_t err =
      h ? cudaMalloc((void **)&e->len_q, (size_t)p->b * sizeof *h) : cudaErrorMemoryAllocation;
  for (int64_t i = 0; h && i < p->b; i++) h[i] = (int32_t)p->sq;
  if (err == cudaSuccess)
    err = cudaMemcpy(e->len_q, h, (size_t)p->b * sizeof *h, cudaMemcpyHostToDevice);
  free(h);
  if (err == cudaSuccess) return 1;
  e->status = ATTN_STATUS_OUT_OF_MEMORY;
  snprintf(e->why, sizeof e->why, "the plan's query lengths (%lld int32): %s", (long long)p->b,
           cudaGetErrorString(err));
  return 0;
}

/* A cache miss's builder: NODE first where it may apply (no causal mask on
 * cuDNN < 9.21), then the composite graph. */
static cudnn_plan *plan_build(const attn_cudnn_problem *p, cudnn_device *d) {
  cudnn_plan *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  double t0 = now_ms();
  attn_cudnn_graph_kind want = (attn_cudnn_graph_kind)p->graph;
  int ok = 0;
  if (p->seqs_kv) /* one graph for several sequences (the node takes no lengths before 9.21) */
    ok = try_kind(e, d->handle, p, ATTN_CUDNN_GRAPH_COMPOSITE) && (p->q_packed || len_q_make(e, p));
  else if (want != ATTN_CUDNN_GRAPH_COMPOSITE && p->causal == ATTN_CAUSAL_NONE)
    ok = try_kind(e, d->handle, p, ATTN_CUDNN_GRAPH_NODE);
  else if (want == ATTN_CUDNN_GRAPH_NODE) /* the node would drop the mask silently */
    e->status = ATTN_STATUS_UNSUPPORTED,
    snprintf(e->why, sizeof e->why, "the SDPA_FWD node takes no causal mask before cuDNN 9.21");
  if (!ok && !p->seqs_kv && want != ATTN_CUDNN_GRAPH_NODE)
    ok = try_kind(e, d->handle, p, ATTN_CUDNN_GRAPH_COMPOSITE);
  e->build_ms = now_ms() - t0;
  if (ok) e->status = ATTN_STATUS_OK, e->why[0] = '\0';
  /* Below 9.10 the fused engines want the lowest float, not -inf, as the mask value. */
  e->neg_inf = loaded_api->version < 91000 ? -3.402823466e38f : -INFINITY;
  e->seq_kv = (int32_t)p->sk, e->seq_q = (int32_t)p->sq;
  return e;
}

static void plan_destroy(void *value) {
  cudnn_plan *e = value;
  if (e->pack) loaded_api->BackendDestroyDescriptor(e->pack);
  attn_cudnn_desc_release(&e->descs);
  if (e->len_q) cudaFree(e->len_q);
  free(e);
}

cudnn_plan *cudnn_state_plan(attn_ctx *ctx, cudnn_device *dev, const attn_cudnn_problem *p) {
  cudnn_plan *e = attn_cache_find(ctx->cache, ATTN_CACHE_CUDNN_PLAN, p, sizeof *p);
  if (e) return e;
  if (!(e = plan_build(p, dev))) return NULL;
  return attn_cache_put(ctx->cache, ATTN_CACHE_CUDNN_PLAN, p, sizeof *p, e, plan_destroy) ? NULL
                                                                                          : e;
}

void attn_cudnn_release(attn_ctx *ctx, int keep_handles) {
  int cur = -1;
  cudaGetDevice(&cur);
  for (int i = 0; i < ATTN_CTX_MAX_DEVICES; i++) {
    cudnn_device *d = ctx->cudnn[i];
    if (!d || cudaSetDevice(i) != cudaSuccess) continue;
    for (int w = 0; w < CUDNN_WORKSPACES; w++) cudaFree(d->ws[w].ptr); /* waits for the device */
    memset(d->ws, 0, sizeof d->ws);
    if (keep_handles) continue;
    if (d->ready) loaded_api->Destroy(d->handle);
    free(d);
    ctx->cudnn[i] = NULL;
  }
  if (cur >= 0) cudaSetDevice(cur);
}

size_t attn_cudnn_bytes(const attn_ctx *ctx) {
  size_t n = 0;
  for (int i = 0; i < ATTN_CTX_MAX_DEVICES; i++)
    for (int w = 0; ctx->cudnn[i] && w < CUDNN_WORKSPACES; w++) n += ctx->cudnn[i]->ws[w].bytes;
  return n;
}

/* ---- test hook ------------------------------------------------------------ */

void attn_cudnn_set_fault(attn_ctx *ctx, int on) { ctx->cudnn_fault = on != 0; }
