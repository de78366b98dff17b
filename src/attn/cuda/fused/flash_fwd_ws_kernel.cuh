// flash on Hopper, warp-specialized (sm_90a only; FlashAttention-3's design,
// written from the paper and the PTX ISA, no code copied). The kernel only
// composes the pieces in hopper/:
//   tile_traits.cuh  shapes per (D, tile), shared-memory layout, the forms run
//   ws_sched.h       the persistent tile schedule (plain C, host-made)
//   scheduler.cuh    its walk on the device (ws_tile_at)
//   pipeline.cuh     mbarriers, Q and K/V ring hand-backs (../ws_sync.cuh: PTX)
//   producer.cuh     the TMA loads (one thread of warpgroup 0)
//   consumer.cuh     QK^T and PV issue, ping-pong turns, the key loop
//   softmax.cuh      the stale-max softmax and its fallback, O's rescale
//   mask.cuh         the tail / diagonal mask and the first tile's votes
//   epilogue.cuh     O / l and lse out
//   launch.cuh       the host launcher (ws_run)
// CTA: 1 + kCons warpgroups (384 threads; 512 for FA3's D64 tile), one CTA
// per SM, persistent: the producer gives its registers away (setmaxnreg),
// the consumers take them.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_FLASH_FWD_WS_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_FLASH_FWD_WS_KERNEL_CUH

#include "attn/cuda/fused/hopper/consumer.cuh"
#include "attn/cuda/fused/hopper/epilogue.cuh"
#include "attn/cuda/fused/hopper/producer.cuh"

template <typename T, int kD, int kTile>
__global__ void __launch_bounds__(ws_cfg<kD, kTile>::kThreads, 1)
    flash_fwd_ws_kernel(const __grid_constant__ attn_fused_params p,
                        const __grid_constant__ attn_ws_maps mp) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = ws_cfg<kD, kTile>;
  using Cons = ws_consumer<T, kD, kTile>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kS = C::kStages, kCons = C::kCons, nq = C::kQBufs;
  extern __shared__ __align__(1024) char smem[];
  char *base = smem + ((1024u - (fused_smem_addr(smem) & 1023u)) & 1023u);
  const uint32_t aQ = fused_smem_addr(base), aK = aQ + C::kQBufs * C::kQ, aV = aK + kS * C::kKV;
  const ws_bars br{aQ + C::kBars};
  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;

  if (tid == 0) ws_bars_init<kS, kCons>(br);
  __syncthreads();

  if (wg == 0) {  // producer
    ws_regs_dec<C::kProdRegs>();
    if (tid == 0) {
      ws_tma_prefetch_map(&mp.q), ws_tma_prefetch_map(&mp.k), ws_tma_prefetch_map(&mp.v);
      ws_produce<kD, kTile>(p, mp, br, aQ, aK, aV);
    }
    __syncwarp();
    return;
  }

  ws_regs_inc<C::kConsRegs>();
  const int cw = wg - 1, ctid = tid & 127, g = lane >> 2, t4 = lane & 3;
  const int wrow = cw * 64 + (ctid >> 5) * 16;  // this warp's first row in the tile
  const float c = p.scale_log2;
  if (cw == kCons - 1) ws_named_arrive(1, 256);  // consumer 0 takes the first turn
  uint32_t it = 0;                               // key tiles so far
  int q_held = -1;                               // a Q buffer whose O store may still be reading it
  for (int r = 0; r < p.ws.rounds; ++r) {
    ws_tile w;
    if (!ws_tile_at<kBM, kBN>(p, r, w)) continue;
    const uint32_t tc = (uint32_t)r;  // its tile count: rounds without a tile come after the last
    const int qb = ws_qbuf(tc, nq);
    const uint32_t aQt = aQ + (uint32_t)qb * C::kQ;  // this tile's Q (then O)
    float o[C::kOR], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < C::kOR; ++i) o[i] = 0.f;
    asm volatile("" : "+f"(m[0]), "+f"(m[1]));  // else c * -inf is held across tiles
    ws_bar_wait(br.q_full(qb), ws_qpar(tc, nq));
    const int n = w.n_blocks, mrow0 = w.m0 + cw * 64;  // first row of this warpgroup
    Cons cons{p, br, aK, aV, aQt, it, cw, lane, qb, ws_rows{mrow0, wrow, w.m0 + wrow + g, t4, n},
              c, o,  m,  l};
    if (n == 0) cons.q_done(-1);
    if (n > 0) cons.run(q_held, ctid);
    it += (uint32_t)n;
    ws_tile_again<kBM, kBN>(p, r, w);

    // Epilogue. The Q buffer goes back to the producer once O has left it:
    // with one, O goes from registers (Q was handed back after the last S);
    // with two, under the next tile's first S.
    ws_q_release(br, q_held, ctid);  // still held only when this tile had no key tile
    float *lse = p.lse ? p.lse + ((int64_t)w.b * p.hq + w.h) * p.sq + w.m0 : nullptr;
    if constexpr (Cons::kQEarly) {
      T *og = (T *)p.o + w.b * p.o_sb + w.h * p.o_sh + (int64_t)w.m0 * p.o_ss;
      ws_store_out<T, kD>(og, p.o_ss, o, m, l, wrow + g, t4, c, lse, p.sq - w.m0);
    } else {
      ws_store_tma<T, kBM, kD>(mp, (T *)(base + qb * C::kQ), aQt, o, m, l, wrow + g, t4, c, lse,
                               p.sq - w.m0, 1 + kCons + cw, ctid, cw, w.m0 + cw * 64, p.sq, w.h,
                               w.b);
      q_held = qb;
    }
  }
  ws_q_release(br, q_held, ctid);
  // The last hand-over of the ping-pong has no taker: consume it so that no
  // named barrier is left half-arrived at exit.
  if (cw == 0) ws_named_sync(1, 256);
  if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  __syncwarp();
#else
  __trap();  // built for sm_90a only; flash_cuda.cu never launches it elsewhere
#endif
}

#endif
