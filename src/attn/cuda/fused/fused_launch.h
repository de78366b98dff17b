// C++ declarations the fused backends share: the kernel instances (defined in
// the generated files instances/*.cu, so that flash_cuda.cu and
// efficient_cuda.cu compile no kernel themselves) and the call helper.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_LAUNCH_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_LAUNCH_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "attn/cuda/common/launch_record.h"
#include "attn/cuda/fused/fused_params.h"

typedef attn_status (*fused_fn)(const attn_fused_params &, cudaStream_t);

// Tensor-core instance for (storage type, padded head dim); kMask: the
// efficient kernel (mask, explicit scale), else the flash kernel.
template <typename T, int kD, bool kMask>
attn_status fused_run(const attn_fused_params &p, cudaStream_t stream);

// Hopper instance (flash_fwd_wgmma_kernel.cuh, sm_90a only) for head dims
// 64, 128, 256; defined when ATTNPROF_HAVE_WGMMA.
template <typename T, int kD>
attn_status wgmma_run(const attn_fused_params &p, cudaStream_t stream);

// Warp-specialized Hopper instance (fused/flash_fwd_ws_kernel.cuh, launched by
// fused/hopper/launch.cuh; sm_90a
// only) for head dims 64, 128, 256; kTile: WS_TILE_* (fused/ws_tile.h;
// ws_tile_pick chooses).
template <typename T, int kD, int kTile>
attn_status ws_run(const attn_fused_params &p, cudaStream_t stream);

// Scalar instance (efficient_simt_kernel.cuh) for head dims up to kDmax.
template <typename T, int kDmax>
attn_status simt_run(const attn_fused_params &p, cudaStream_t stream);

// Fills the parameters and runs fn on the tensors' device; ctx is the
// handle whose cache holds what a kernel keeps (the ws kernel's TMA maps).
attn_status attn_fused_call(attn_ctx *ctx, fused_fn fn, const attn_args *a);

#endif
