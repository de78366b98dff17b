/* The cudnn backend's process-wide state, shared by cudnn_state.c (plans,
 * handles, workspace) and cudnn_cuda.c (checks, execution):
 *
 *  - one lock: a cuDNN handle must not run two calls at once, and the plan
 *    cache is not thread-safe; the per-call work under it is microseconds;
 *  - per device: the handle, the workspaces (owned here, one per stream,
 *    grown when a plan needs more, never allocated per call), the stream the
 *    handle is set to;
 *  - the plan cache: a bounded LRU of cudnn_plan per attn_cudnn_problem,
 *    failed builds included (they carry the reason). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_STATE_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_STATE_H

#include <cuda_runtime_api.h>

#include "attn/cuda/cudnn_graph.h"
#include "attn/cuda/cudnn_plan.h"
#include "attn/cuda/cudnn_plan_cache.h"

typedef struct {
  attn_status status; /* OK, or why these inputs cannot run */
  char why[448];
  attn_cudnn_builder descs; /* every descriptor the plan refers to */
  attn_cudnn_plan_choice choice;
  attn_cudnn_graph_kind kind; /* COMPOSITE or NODE: what was built */
  double build_ms;
  unsigned char uses[ATTN_CUDNN_UID_COUNT];
  /* By-value scalars the variant packs point at (the entry is on the heap,
   * so the addresses hold). */
  float scale, neg_inf;
  int32_t seq_kv, seq_q;
  /* The last variant pack and what it was made for: reused while the
   * pointers, the workspace and the scale repeat. */
  attn_cudnn_desc pack;
  void *pack_ptrs[ATTN_CUDNN_UID_COUNT];
  void *pack_ws;
} cudnn_plan;

/* A workspace block and the stream that uses it. */
typedef struct {
  cudaStream_t stream;
  void *ptr;
  size_t bytes;
  uint64_t last_use;
  int used;
} cudnn_workspace;

enum { CUDNN_WORKSPACES = 4 };

typedef struct {
  int ready;
  cudnnHandle_t handle;
  /* One workspace per stream (executions on two streams may overlap), for
   * the 4 streams used last. */
  cudnn_workspace ws[CUDNN_WORKSPACES];
  uint64_t tick;
  cudaStream_t stream; /* the handle's stream; valid once stream_set */
  int stream_set;
} cudnn_device;

void cudnn_state_lock(void);
void cudnn_state_unlock(void);

/* Under the lock. The loaded library (NULL with why when unusable). */
const attn_cudnn_api *cudnn_state_api(char *why, size_t why_len);
/* Under the lock, with `device` current. The device's state with its
 * handle created; NULL with attn_last_error() set. */
cudnn_device *cudnn_state_device(int device);
/* Under the lock. The plan for p: cached or built now (failures cached as
 * plans with a status). NULL only when out of host memory. */
cudnn_plan *cudnn_state_plan(cudnn_device *dev, const attn_cudnn_problem *p);
/* Under the lock. The graph kind asked for by ATTNPROF_CUDNN_GRAPH or
 * attn_cudnn_set_graph. */
attn_cudnn_graph_kind cudnn_state_graph_kind(void);
/* Under the lock. attn_cudnn_set_fault's setting. */
int cudnn_state_fault(void);

#endif
