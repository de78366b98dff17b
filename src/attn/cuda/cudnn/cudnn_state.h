/* The cudnn backend's state in the engine handle, shared by cudnn_state.c
 * (plans, handles, workspace) and cudnn_cuda.c (checks, execution):
 *
 *  - per device (ctx->cudnn[device]): the handle, the workspaces (one per
 *    stream, grown when a plan needs more, never allocated per call), the
 *    stream the handle is set to;
 *  - plans: entries of the handle's LRU cache, one cudnn_plan per
 *    attn_cudnn_problem, failed builds included (they carry the reason).
 * The handle's thread rule covers it all: no lock here. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_STATE_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_STATE_H

#include <cuda_runtime_api.h>

#include "attn/ctx.h"
#include "attn/cuda/cudnn/cudnn_graph.h"

typedef struct {
  attn_status status; /* OK, or why these inputs cannot run */
  char why[448];
  attn_cudnn_builder descs; /* every descriptor the plan refers to */
  attn_cudnn_plan_choice choice;
  attn_cudnn_graph_kind kind; /* COMPOSITE or NODE: what was built */
  const char *graph_name;     /* "composite graph", "paged-cache graph", ... */
  int32_t *len_q;             /* several sequences: [B] device lengths of the queries */
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

typedef struct cudnn_device {
  int ready;
  cudnnHandle_t handle;
  /* One workspace per stream (executions on two streams may overlap), for
   * the 4 streams used last. */
  cudnn_workspace ws[CUDNN_WORKSPACES];
  uint64_t tick;
  cudaStream_t stream; /* the handle's stream; valid once stream_set */
  int stream_set;
} cudnn_device;

/* The loaded library (loaded once per process; NULL with why when unusable). */
const attn_cudnn_api *cudnn_state_api(char *why, size_t why_len);
/* With `device` current: ctx's state for it, handle created; NULL with
 * attn_last_error() set. */
cudnn_device *cudnn_state_device(attn_ctx *ctx, int device);
/* The plan for p: from ctx's cache or built now (failures cached as plans
 * with a status). NULL only when out of host memory. */
cudnn_plan *cudnn_state_plan(attn_ctx *ctx, cudnn_device *dev, const attn_cudnn_problem *p);
/* Frees ctx's cuDNN workspaces (and handles unless keep_handles), and the
 * bytes they hold (attn_ctx_trim, _destroy, _stats_get). */
void attn_cudnn_release(attn_ctx *ctx, int keep_handles);
size_t attn_cudnn_bytes(const attn_ctx *ctx);

#endif
