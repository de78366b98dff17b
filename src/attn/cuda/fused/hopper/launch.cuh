// The launcher of the warp-specialized flash kernel: the tile schedule made
// for the grid (one CTA per SM, at most one per tile), the shared-memory
// opt-in kept in the handle's launch record, the TMA maps from the handle's
// cache.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_LAUNCH_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_LAUNCH_CUH

#include "attn/cuda/fused/flash_fwd_ws_kernel.cuh"

template <typename T, int kD, int kTile>
attn_status ws_run(const attn_fused_params &p0, cudaStream_t stream) {
  using C = ws_cfg<kD, kTile>;
  void (*kernel)(const attn_fused_params, const attn_ws_maps) = flash_fwd_ws_kernel<T, kD, kTile>;
  attn_status st = attn_launch_smem_limit(p0.ctx, (const void *)kernel, C::kSmem);
  if (st) return st;
  int dev = 0, sms = 132;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  const struct cudaDeviceProp *pr = attn_cuda_props(dev);
  if (pr) sms = pr->multiProcessorCount;
  const int64_t tiles = (int64_t)((p0.sq + C::kBM - 1) / C::kBM) * p0.hq * p0.b;
  const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
  attn_fused_params p = p0;
  ws_sched_make(&p.ws, p.sq, p.b, p.hq, p.hkv, p.causal, C::kBM, (int)grid);
  const attn_ws_maps *mp = nullptr;
  st = attn_ws_maps_get(&p, __is_same(T, __nv_bfloat16), C::kBM, C::kBN, 64, &mp);
  if (st) return st;
  kernel<<<grid, C::kThreads, C::kSmem, stream>>>(p, *mp);
  ATTN_CUDA_CHECK_LAUNCH("flash_fwd_ws_kernel");
  return ATTN_STATUS_OK;
}

#endif
