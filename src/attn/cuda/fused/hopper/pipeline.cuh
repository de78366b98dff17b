// The pipeline of the warp-specialized flash kernel: its mbarriers in shared
// memory and the hand-backs of Q buffers and K/V ring slots.
//  - Q: one or two buffers (tile tc uses buffer ws_qbuf(tc)), each with a
//    full barrier (the producer's TMA bytes) and an empty one (one arrival
//    per consumer warp once Q, or O staged in it, is no longer read);
//  - K, V: kStages-deep rings, key tile j in slot j % kStages, full and empty
//    barriers per slot, phase parity (j / kStages) & 1.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_PIPELINE_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_PIPELINE_CUH

#include "attn/cuda/fused/ws_sync.cuh"

// Barrier addresses: Q full/empty per Q buffer (two slots), then per stage
// K full, K empty, V full, V empty.
struct ws_bars {
  uint32_t base;
  __device__ __forceinline__ uint32_t q_full(int b) const { return base + 16 * b; }
  __device__ __forceinline__ uint32_t q_empty(int b) const { return base + 16 * b + 8; }
  __device__ __forceinline__ uint32_t k_full(int s) const { return base + 32 + 32 * s; }
  __device__ __forceinline__ uint32_t k_empty(int s) const { return base + 40 + 32 * s; }
  __device__ __forceinline__ uint32_t v_full(int s) const { return base + 48 + 32 * s; }
  __device__ __forceinline__ uint32_t v_empty(int s) const { return base + 56 + 32 * s; }
};

// By one thread, before the CTA's first barrier: the full barriers take the
// producer's one arrival (plus TMA's bytes), the empty ones one per consumer warp.
template <int kStages, int kCons>
FUSED_DEV void ws_bars_init(ws_bars br) {
  for (int b = 0; b < 2; ++b) ws_bar_init(br.q_full(b), 1), ws_bar_init(br.q_empty(b), 4 * kCons);
  for (int s = 0; s < kStages; ++s) {
    ws_bar_init(br.k_full(s), 1), ws_bar_init(br.v_full(s), 1);
    ws_bar_init(br.k_empty(s), 4 * kCons), ws_bar_init(br.v_empty(s), 4 * kCons);
  }
  ws_bar_init_fence();
}

// The Q buffer of this CTA's tile tc and its phase parity, nq (1 or 2) buffers.
FUSED_DEV int ws_qbuf(uint32_t tc, int nq) { return nq > 1 ? (int)(tc & 1u) : 0; }
FUSED_DEV uint32_t ws_qpar(uint32_t tc, int nq) { return (nq > 1 ? tc >> 1 : tc) & 1u; }

// Releases a slot: one arrival per warp once its wgmma are done.
FUSED_DEV void ws_release(uint32_t bar, int lane) {
  __syncwarp();
  if (lane == 0) ws_bar_arrive(bar);
}

// Hands the Q buffer whose O this warpgroup stored back to the producer,
// once the TMA store has read it (thread 0 of the warpgroup issued it).
// Called as late as the next tile's first S issue where two Q buffers let
// the next tile start meanwhile, so the store's read runs under that S.
FUSED_DEV void ws_q_release(ws_bars br, int &q_held, int ctid) {
  if (q_held < 0) return;
  if (ctid == 0) {
    ws_tma_store_wait_read();
    ws_bar_arrive_n(br.q_empty(q_held), 4);  // for the warpgroup's 4 warps
  }
  q_held = -1;
}

#endif
