/* What the cudnn backend shows tests and benches beyond attn.h: its plan
 * cache's counters and bound, the graph form to build, and a description of
 * the plan serving given inputs. No cuDNN or CUDA type appears here. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDA_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/attn.h"

typedef struct {
  size_t entries, capacity;         /* plans held now, and the bound */
  uint64_t hits, misses, evictions; /* misses = plans built (failed ones too) */
  size_t workspace_bytes;           /* device memory held for workspaces */
  size_t version;                   /* cudnnGetVersion(), 0 if not loaded */
  char library[512];                /* the file loaded */
} attn_cudnn_info;

void attn_cudnn_info_get(attn_cudnn_info *out);

/* Bounds the plan cache (default 64, or $ATTNPROF_CUDNN_PLAN_CACHE),
 * evicting down to n now. */
void attn_cudnn_set_cache_capacity(size_t n);

/* Which graph later plans are built from: 0 auto (the SDPA_FWD node where
 * it may apply, else the composite graph), 1 composite only, 2 node only.
 * Default from $ATTNPROF_CUDNN_GRAPH ("composite", "node"). The choice is
 * part of the cache key. */
void attn_cudnn_set_graph(int kind);

/* Test hook: while on, plans are built with a batch of -1 in Q's
 * descriptor, which cuDNN refuses (CUDNN_STATUS_BAD_PARAM), so the refusal path (cuDNN's status in
 * the reason, the refusal cached) runs on any cuDNN version. Part of the
 * cache key. */
void attn_cudnn_set_fault(int on);

/* Builds (or finds) the plan for these inputs and writes one line: the
 * graph form, engine, heuristics mode, workspace, build time; or why no
 * plan exists. The status is the why-not check's. */
attn_status attn_cudnn_describe(const attn_args *a, char *buf, size_t len);

#endif
