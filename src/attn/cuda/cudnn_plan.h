/* From a finalized operation graph to an execution plan: ask the heuristics
 * (mode A, then FALLBACK) for engine configurations and finalize the first
 * plan that works. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_PLAN_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_PLAN_H

#include <stdint.h>

#include "attn/cuda/cudnn_desc.h"

typedef struct {
  attn_cudnn_desc plan; /* owned by the builder */
  int64_t workspace;    /* bytes the plan needs per execution */
  int64_t engine;       /* the engine's global index, -1 if unknown */
  int runtime_compiled; /* the engine compiles its kernel (NVRTC) at finalize */
  const char *heuristics; /* "A" or "FALLBACK" */
  int configs_tried;
} attn_cudnn_plan_choice;

/* 0 when a plan was finalized (choice filled). Otherwise nonzero, with the
 * builder's status and failed_call saying what the last attempt hit. */
int attn_cudnn_plan_build(attn_cudnn_builder *b, cudnnHandle_t handle, attn_cudnn_desc graph,
                          attn_cudnn_plan_choice *choice);

#endif
