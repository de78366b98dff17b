/* TMA tensor maps of the warp-specialized flash kernel (flash_fwd_ws_kernel.cuh):
 * encoded on the host through the driver's cuTensorMapEncodeTiled, reached by
 * cudaGetDriverEntryPoint (no link against libcuda), from the tensors' own
 * strides (BSHD, BHSD or anything else with a unit head-dim stride), no copies.
 * Each map is 4-D (D, S, H, B) with the 128-byte swizzle, boxes of 64 columns. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TMA_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TMA_H

#include <cuda.h>
#include <stddef.h>

#include "attn/cuda/fused/fused_params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  CUtensorMap q, k, v, o;
} attn_ws_maps;

/* 1 when TMA takes every stride and base of q, k, v, out (16-byte aligned
 * bases and strides below 2^40 bytes, dims below 2^31); else 0 with the
 * tensor and stride named in why. */
int attn_ws_tma_ok(const attn_args *a, char *why, size_t why_len);

/* The four maps for p: boxes of 64 x q_rows (q), 64 x kv_rows (k, v) and
 * 64 x o_rows (out). Served from the handle's cache (p->ctx) keyed by the
 * problem (pointers are unique across devices); encodes on a miss. */
attn_status attn_ws_maps_get(const attn_fused_params *p, int bf16, int q_rows, int kv_rows,
                             int o_rows, const attn_ws_maps **out);

#ifdef __cplusplus
}
#endif
#endif
