/* The cudnn backend's process-wide state: lock, per-device handles, the
 * plan cache and the plan builder it calls on a miss. See cudnn_state.h. */
#include "attn/cuda/cudnn_state.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn/cuda/cuda_common.h"
#include "attn/cuda/cudnn_cuda.h"

enum { MAX_DEVICES = 16, DEFAULT_CAPACITY = 64 };

static struct {
  pthread_mutex_t lock;
  const attn_cudnn_api *api;
  cudnn_device dev[MAX_DEVICES];
  attn_plan_cache *cache;
  size_t capacity; /* 0: not chosen yet (env or default) */
  int graph_kind;  /* -1: not chosen yet */
  int fault;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .graph_kind = -1};

void cudnn_state_lock(void) { pthread_mutex_lock(&st.lock); }
void cudnn_state_unlock(void) { pthread_mutex_unlock(&st.lock); }

const attn_cudnn_api *cudnn_state_api(char *why, size_t why_len) {
  if (!st.api) st.api = attn_cudnn_api_get(why, why_len);
  else if (why && why_len) why[0] = '\0';
  return st.api;
}

attn_cudnn_graph_kind cudnn_state_graph_kind(void) {
  if (st.graph_kind < 0) {
    const char *e = getenv("ATTNPROF_CUDNN_GRAPH");
    st.graph_kind = !e ? ATTN_CUDNN_GRAPH_AUTO
                    : strcmp(e, "composite") == 0 ? ATTN_CUDNN_GRAPH_COMPOSITE
                    : strcmp(e, "node") == 0      ? ATTN_CUDNN_GRAPH_NODE
                                                  : ATTN_CUDNN_GRAPH_AUTO;
  }
  return (attn_cudnn_graph_kind)st.graph_kind;
}

cudnn_device *cudnn_state_device(int device) {
  if (device < 0 || device >= MAX_DEVICES) {
    attn_fail(ATTN_STATUS_UNSUPPORTED, "cudnn_cuda: device %d is past the %d devices it serves",
              device, MAX_DEVICES);
    return NULL;
  }
  cudnn_device *d = &st.dev[device];
  if (d->ready) return d;
  char why[512];
  if (!cudnn_state_api(why, sizeof why)) {
    attn_fail(ATTN_STATUS_UNSUPPORTED, "cudnn_cuda: %s", why);
    return NULL;
  }
  /* cudnnCreate binds the handle to the current device (the caller's). */
  cudnnStatus_t s = st.api->Create(&d->handle);
  if (s != CUDNN_STATUS_SUCCESS) {
    char text[320];
    attn_cudnn_status_text(st.api, s, text, sizeof text);
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

static const char *kind_name(attn_cudnn_graph_kind k) {
  return k == ATTN_CUDNN_GRAPH_NODE ? "SDPA_FWD node" : "composite graph";
}

/* One attempt with one graph kind; on failure appends the reason to e->why. */
static int try_kind(cudnn_plan *e, cudnnHandle_t h, const attn_cudnn_problem *p,
                    attn_cudnn_graph_kind kind) {
  attn_cudnn_builder_init(&e->descs, st.api);
  attn_cudnn_desc graph = attn_cudnn_sdpa_graph(&e->descs, h, p, kind, e->uses);
  if (graph && attn_cudnn_plan_build(&e->descs, h, graph, &e->choice) == 0) {
    e->kind = kind;
    return 1;
  }
  char text[320];
  size_t used = strlen(e->why);
  attn_cudnn_status_text(st.api, e->descs.status, text, sizeof text);
  snprintf(e->why + used, sizeof e->why - used, "%s%s: %s failed: %s", used ? "; " : "",
           kind_name(kind), e->descs.failed_call, text);
  /* NOT_SUPPORTED (3xxx) and BAD_PARAM (2xxx) say "not these inputs"; the
   * rest is cuDNN failing. Either way dispatch moves on. */
  int category = (int)e->descs.status / 1000 * 1000;
  e->status = category == 2000 || category == 3000 ? ATTN_STATUS_UNSUPPORTED
                                                   : ATTN_STATUS_BACKEND_ERROR;
  attn_cudnn_desc_release(&e->descs);
  return 0;
}

/* The cache's builder: NODE first where it may apply (no causal mask on
 * cuDNN < 9.21), then the composite graph. */
static void *plan_build(const void *key, void *ctx, void *arg) {
  const attn_cudnn_problem *p = key;
  cudnn_device *d = arg;
  (void)ctx;
  cudnn_plan *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  double t0 = now_ms();
  attn_cudnn_graph_kind want = (attn_cudnn_graph_kind)p->graph;
  int ok = 0;
  if (want != ATTN_CUDNN_GRAPH_COMPOSITE && p->causal == ATTN_CAUSAL_NONE)
    ok = try_kind(e, d->handle, p, ATTN_CUDNN_GRAPH_NODE);
  else if (want == ATTN_CUDNN_GRAPH_NODE) /* the node would drop the mask silently */
    e->status = ATTN_STATUS_UNSUPPORTED,
    snprintf(e->why, sizeof e->why, "the SDPA_FWD node takes no causal mask before cuDNN 9.21");
  if (!ok && want != ATTN_CUDNN_GRAPH_NODE)
    ok = try_kind(e, d->handle, p, ATTN_CUDNN_GRAPH_COMPOSITE);
  e->build_ms = now_ms() - t0;
  if (ok) e->status = ATTN_STATUS_OK, e->why[0] = '\0';
  /* Below 9.10 the fused engines want the lowest float, not -inf, as the mask value. */
  e->neg_inf = st.api->version < 91000 ? -3.402823466e38f : -INFINITY;
  e->seq_kv = (int32_t)p->sk, e->seq_q = (int32_t)p->sq;
  return e;
}

static void plan_destroy(void *value, void *ctx) {
  cudnn_plan *e = value;
  (void)ctx;
  if (e->pack) st.api->BackendDestroyDescriptor(e->pack);
  attn_cudnn_desc_release(&e->descs);
  free(e);
}

static size_t capacity_chosen(void) {
  if (!st.capacity) {
    const char *e = getenv("ATTNPROF_CUDNN_PLAN_CACHE");
    long n = e ? strtol(e, NULL, 10) : 0;
    st.capacity = n > 0 ? (size_t)n : DEFAULT_CAPACITY;
  }
  return st.capacity;
}

cudnn_plan *cudnn_state_plan(cudnn_device *dev, const attn_cudnn_problem *p) {
  if (!st.cache)
    st.cache =
        attn_plan_cache_create(capacity_chosen(), sizeof *p, plan_build, plan_destroy, NULL);
  return st.cache ? attn_plan_cache_get(st.cache, p, dev) : NULL;
}

/* ---- the introspection of cudnn_cuda.h ---------------------------------- */

void attn_cudnn_set_cache_capacity(size_t n) {
  cudnn_state_lock();
  st.capacity = n ? n : 1;
  if (st.cache) attn_plan_cache_set_capacity(st.cache, st.capacity);
  cudnn_state_unlock();
}

void attn_cudnn_set_graph(int kind) {
  cudnn_state_lock();
  st.graph_kind = kind >= ATTN_CUDNN_GRAPH_AUTO && kind <= ATTN_CUDNN_GRAPH_NODE ? kind : 0;
  cudnn_state_unlock();
}

int cudnn_state_fault(void) { return st.fault; }

void attn_cudnn_set_fault(int on) {
  cudnn_state_lock();
  st.fault = on != 0;
  cudnn_state_unlock();
}

void attn_cudnn_info_get(attn_cudnn_info *out) {
  memset(out, 0, sizeof *out);
  cudnn_state_lock();
  attn_plan_cache_stats s = {0};
  if (st.cache) s = attn_plan_cache_stats_of(st.cache);
  out->entries = s.entries, out->hits = s.hits, out->misses = s.misses;
  out->evictions = s.evictions;
  out->capacity = capacity_chosen();
  for (int i = 0; i < MAX_DEVICES; i++)
    for (int w = 0; w < CUDNN_WORKSPACES; w++) out->workspace_bytes += st.dev[i].ws[w].bytes;
  if (st.api) {
    out->version = st.api->version;
    snprintf(out->library, sizeof out->library, "%s", st.api->path);
  }
  cudnn_state_unlock();
}
