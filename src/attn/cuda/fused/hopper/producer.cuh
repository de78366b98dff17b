// The producer of the warp-specialized flash kernel: one thread issues every
// TMA load of every tile of its CTA, Q once per tile and K, V through the
// rings, in the order K0, Q, K1, V0, K2, V1, ... (Q first with two Q
// buffers), so that S of key tile j + 1 can start before V j lands.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_PRODUCER_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_HOPPER_PRODUCER_CUH

#include "attn/cuda/fused/hopper/pipeline.cuh"
#include "attn/cuda/fused/hopper/scheduler.cuh"
#include "attn/cuda/fused/hopper/tile_traits.cuh"
#include "attn/cuda/fused/ws_tma.h"

template <int kD, int kTile>
FUSED_DEV void ws_produce(const attn_fused_params &p, const attn_ws_maps &mp, ws_bars br,
                          uint32_t aQ, uint32_t aK, uint32_t aV) {
  using C = ws_cfg<kD, kTile>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages, nq = C::kQBufs;
  uint32_t it = 0;  // key tiles so far
  for (int r = 0; r < p.ws.rounds; ++r) {
    ws_tile w;
    if (!ws_tile_at<kBM, kBN>(p, r, w)) continue;
    const uint32_t tc = (uint32_t)r;  // its tile count: rounds without a tile come after the last
    const int qb = ws_qbuf(tc, nq);
    const int hk = ws_div(p.ws.div[WS_DIV_GRP], w.h), n = w.n_blocks;
    auto load_kv = [&](const CUtensorMap *map, uint32_t dst, uint32_t bar, int key) {
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk)
        ws_tma_load(dst + (uint32_t)(blk * kBN * 128), map, bar, blk * 64, key, hk, w.b);
    };
    // The empty slots waited with acquire at cluster scope: the form this
    // code was measured in.
    auto load_k = [&](int i) {
      const uint32_t j = it + i, s = j % kS;
      ws_bar_wait<true>(br.k_empty(s), ((j / kS) & 1) ^ 1);
      ws_bar_expect(br.k_full(s), C::kKV);
      load_kv(&mp.k, aK + s * C::kKV, br.k_full(s), (n - 1 - i) * kBN);
    };
    auto load_v = [&](int i) {
      const uint32_t j = it + i, s = j % kS;
      ws_bar_wait<true>(br.v_empty(s), ((j / kS) & 1) ^ 1);
      ws_bar_expect(br.v_full(s), C::kKV);
      load_kv(&mp.v, aV + s * C::kKV, br.v_full(s), (n - 1 - i) * kBN);
    };
    auto load_q = [&]() {
      ws_bar_wait(br.q_empty(qb), ws_qpar(tc, nq) ^ 1);
      ws_bar_expect(br.q_full(qb), C::kQ);
#pragma unroll
      for (int blk = 0; blk < kD / 64; ++blk)
        ws_tma_load(aQ + qb * C::kQ + blk * kBM * 128, &mp.q, br.q_full(qb), blk * 64, w.m0, w.h,
                    w.b);
    };
    // One Q buffer: K0 first (Q waits for the last tile's epilogue). Two: Q
    // first, its slot is free and it then lands under the last tile's loop.
    if (nq > 1) load_q();
    if (n > 0) load_k(0);
    if (nq == 1) load_q();
    for (int i = 1; i < n; ++i) {
      load_k(i);
      load_v(i - 1);
    }
    if (n > 0) load_v(n - 1);
    it += (uint32_t)n;
  }
}

#endif
