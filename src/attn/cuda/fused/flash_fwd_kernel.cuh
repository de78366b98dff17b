// The fused forward on mma.sync (FlashAttention-2 scheme, written from the
// published algorithm and the PTX ISA; no code copied). Two kernels come out
// of one body: flash_fwd_kernel (no mask tensor, scores kept raw and scaled
// inside the exponent) and efficient_fwd_kernel (adds a boolean/additive mask
// read with any strides, scales explicitly, head dims padded up to kD).
// On compute capability 9.0 flash runs the Hopper kernels instead for D
// 64/128/256; efficient always runs this one.
//
// Work split. Grid (ceil(Sq / kBM), Hq, B); a CTA owns kBM query rows of one
// (b, h) and walks its key/value tiles of kBN rows from the last to the
// first, so the tiles that need a mask (the sequence tail, the causal
// diagonal) come first and the rest run unmasked. blockIdx.x is reversed:
// under a causal rule the CTAs with the most tiles start first.
// Each of the kBM / kWarpM warps owns kWarpM query rows (one or two 16-row
// mma atoms) from start to end; the copies are shared (every thread issues
// its part of each tile's cp.async).
//
// Per key tile (single buffers for K and V, as FA2):
//   wait K[n] + barrier | issue V[n] (+ mask tile) | S = Q K^T     (mma/gemm.cuh)
//   wait V[n] + barrier | issue K[n-1] | mask                      (mma/mask.cuh)
//   online softmax in registers                                    (mma/softmax.cuh)
//   O = O * alpha + P V, P never leaving registers                 (below)
// then O / l and lse (mma/epilogue.cuh). Shared memory: Q [kBM x kD], K and V
// [kBN x kD], 16-bit, XOR-swizzled (mma/tile_load.cuh): no bank conflicts on
// cp.async writes or ldmatrix reads.
// efficient: s <- s c + bias log2 e (or -inf) first, then the softmax's c = 1.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FLASH_FWD_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FLASH_FWD_KERNEL_CUH

#include <math.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/fused_launch.h"
#include "attn/cuda/fused/fused_mma.cuh"
#include "attn/cuda/fused/mma/cta.cuh"
#include "attn/cuda/fused/mma/epilogue.cuh"
#include "attn/cuda/fused/mma/gemm.cuh"
#include "attn/cuda/fused/mma/mask.cuh"
#include "attn/cuda/fused/mma/softmax.cuh"
#include "attn/cuda/fused/mma/tile_load.cuh"

// Tile shape by head dim: kBM query rows x kBN keys per step, kWarpM rows per
// warp, kMinB CTAs per SM for __launch_bounds__ (255 / 170 registers for 2 / 3
// CTAs of 128 threads), kFlags (FUSED_STATS_SMEM). Registers per thread are
// dominated by O (kWarpM * kD / 32 fp32) and S (kWarpM * kBN / 32 fp32); every
// shape below compiles with zero spills (ptxas -v, sm_80 and sm_90).
//  D64, D96, D128: 128x64, 4 warps x 32 rows (FA2's tile); at D96 and D128
//        the row statistics live in shared memory, which is what makes it
//        spill-free at D128. D256: 64x64, 16 rows per warp.
//  efficient adds the mask handling (about 40-60 more registers): 16 rows
//        per warp, and 32 keys per step at D256; the mask tile is copied into
//        shared memory when its rows allow 16-byte copies (mask_vec).
template <int kD, bool kMask>
struct flash_cfg;
#define FUSED_CFG(D, MASK, BM, BN, WM, MINB, FLAGS)                                     \
  template <>                                                                           \
  struct flash_cfg<D, MASK> {                                                           \
    static constexpr int kBM = BM, kBN = BN, kWarpM = WM, kMinB = MINB, kFlags = FLAGS; \
  }
FUSED_CFG(64, false, 128, 64, 32, 2, 0);
FUSED_CFG(96, false, 128, 64, 32, 2, FUSED_STATS_SMEM);
FUSED_CFG(128, false, 128, 64, 32, 2, FUSED_STATS_SMEM);
FUSED_CFG(256, false, 64, 64, 16, 2, 0);
FUSED_CFG(64, true, 64, 64, 16, 2, 0);
FUSED_CFG(96, true, 64, 64, 16, 2, 0);
FUSED_CFG(128, true, 64, 64, 16, 2, 0);
FUSED_CFG(256, true, 64, 32, 16, 2, 0);
#undef FUSED_CFG

template <typename T, int kD, int kBM, int kBN, int kWarpM, int kFlags>
FUSED_DEV void fused_fwd_body(const attn_fused_params &p, char *smem) {
  using SM = fused_smem<kD, kBM, kBN, kWarpM, kFlags>;
  constexpr bool kMask = (kFlags & FUSED_MASK) != 0, kStats = (kFlags & FUSED_STATS_SMEM) != 0;
  constexpr int kThreads = SM::kThreads, kMA = SM::kMA;
  constexpr int kNT = kBN / 8, kDT = kD / 8;
  static_assert(kWarpM == 16 || kWarpM == 32, "a warp owns one or two 16-row mma atoms");
  static_assert(kBN % 16 == 0 && kD % 32 == 0 && (kBN == 32 || kBN >= 64), "tile sizes");

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const auto [b, h, hk, m0, rows_q, n_blocks, qg, kg, vg] = fused_cta_of<T, kBM, kBN>(p);
  const int d_chunks = kMask ? p.d / 8 : kD / 8;  // flash: D == kD
  if (n_blocks == 0) {                            // every row hidden
    fused_store_hidden_rows<T, kThreads>(p, b, h, m0, rows_q, tid);
    return;
  }
  const auto t = fused_tiles<T, kD, kBM, kBN, kWarpM, kFlags>::carve(smem);

  int nb = n_blocks - 1;  // the last key tile first: the only one with a tail
  fused_load_tile<T, kBM, kD, kThreads>(t.aQ, qg, p.q_ss, rows_q, d_chunks, tid);
  fused_load_tile<T, kBN, kD, kThreads>(t.aK, kg + (int64_t)nb * kBN * p.k_ss, p.k_ss,
                                        p.sk - nb * kBN, d_chunks, tid);
  fused_cp_async_commit();
  const fused_mma_lanes ln = fused_mma_lanes_of<kD, kWarpM>(t.aQ, t.aK, t.aV, warp, lane);

  float acc_o[kMA][kDT][4];
  float row_m[kMA][2], row_l[kMA][2];
  fused_row_stats<kMA, kThreads, kStats> st{row_m, row_l, t.sStats, tid};
  fused_softmax_init(acc_o, st);
  // flash keeps raw scores and folds the scale into the exponent's FFMA;
  // efficient has already scaled them (bias added), so its factor is 1.
  const float c = kMask ? 1.f : p.scale_log2;
  const int row0 = m0 + warp * kWarpM;  // first query row of this warp
  const fused_mask_src msrc = fused_mask_src_of<kMask>(p, b, h);

  for (; nb >= 0; --nb) {
    fused_cp_async_wait<0>();
    __syncthreads();  // K[nb] landed; every warp is done with V[nb + 1] (and the mask tile)
    const int n0 = nb * kBN;
    fused_load_tile<T, kBN, kD, kThreads>(t.aV, vg + (int64_t)n0 * p.v_ss, p.v_ss, p.sk - n0,
                                          d_chunks, tid);
    if (kMask && msrc.tile)
      fused_mask_tile_load<kBM, kBN, kThreads>(msrc, p, t.sMask, m0, n0, rows_q, tid);
    fused_cp_async_commit();

    float s[kMA][kNT][4];  // S = Q K^T
#pragma unroll
    for (int mi = 0; mi < kMA; ++mi)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)
      fused_qk_step<T, kD, kBM, kBN, kMA, kNT>(s, ln.lq, ln.lk, kk);

    fused_cp_async_wait<0>();
    __syncthreads();  // V[nb] (and the mask tile) landed; every warp is done with K[nb]
    if (nb > 0) {
      fused_load_tile<T, kBN, kD, kThreads>(t.aK, kg + (int64_t)(n0 - kBN) * p.k_ss, p.k_ss,
                                            p.sk - (n0 - kBN), d_chunks, tid);
      fused_cp_async_commit();
    }

    if constexpr (kMask)
      fused_bias<kMA, kNT, SM::kMaskPitch>(
          s, p, msrc.tile ? t.sMask + warp * kWarpM * SM::kMaskPitch : nullptr,
          msrc.bh ? msrc.bh + (((int64_t)row0 * p.m_sq + (int64_t)n0 * p.m_sk) << msrc.esize_log2)
                  : nullptr,
          row0, n0, g, t4, FUSED_TILE_FULL(p, n0, kBN, m0));
    else fused_mask_keys<kBN>(s, p, row0, m0, n0, g, t4);

    uint32_t pk[kMA][kNT][2];
    fused_softmax_tile<T>(s, pk, acc_o, st, c);
    // O += P V (written out here: as a function nvcc orders the loop
    // otherwise). 8-key tiles 2kk and 2kk+1 (keys 16kk..16kk+15) form one A
    // fragment: {row g keys 0-7, row g+8 keys 0-7, row g keys 8-15, row g+8 keys 8-15}.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t pa[kMA][4];
#pragma unroll
      for (int mi = 0; mi < kMA; ++mi) {
        pa[mi][0] = pk[mi][2 * kk][0];
        pa[mi][1] = pk[mi][2 * kk][1];
        pa[mi][2] = pk[mi][2 * kk + 1][0];
        pa[mi][3] = pk[mi][2 * kk + 1][1];
      }
#pragma unroll
      for (int d2 = 0; d2 < kD / 16; ++d2) {
        uint32_t bv[4];
        fused_ldmatrix_x4_trans(bv, fused_lane_off<kBN, kD>(ln.lv, kk * 16, 2 * d2));
#pragma unroll
        for (int mi = 0; mi < kMA; ++mi) {
          fused_mma<T>(acc_o[mi][2 * d2], pa[mi], bv[0], bv[1]);
          fused_mma<T>(acc_o[mi][2 * d2 + 1], pa[mi], bv[2], bv[3]);
        }
      }
    }
  }

  fused_epilogue<T, kD, kBM, kWarpM>(p, acc_o, st, c, t.sQ, b, h, m0, rows_q, d_chunks, warp, lane);
}

template <typename T, int kD, int kBM, int kBN, int kWarpM, int kMinB, int kFlags>
__global__ void __launch_bounds__(kBM / kWarpM * 32, kMinB)
    flash_fwd_kernel(const attn_fused_params p) {
  extern __shared__ __align__(128) char fused_smem_buf[];
  fused_fwd_body<T, kD, kBM, kBN, kWarpM, kFlags>(p, fused_smem_buf);
}

template <typename T, int kD, int kBM, int kBN, int kWarpM, int kMinB, int kFlags>
__global__ void __launch_bounds__(kBM / kWarpM * 32, kMinB)
    efficient_fwd_kernel(const attn_fused_params p) {
  extern __shared__ __align__(128) char fused_smem_buf[];
  fused_fwd_body<T, kD, kBM, kBN, kWarpM, kFlags | FUSED_MASK>(p, fused_smem_buf);
}

// static: one copy per translation unit, as the kernel it launches is per
// unit too (whole-program CUDA); the handle's launch record keys the
// shared-memory opt-in by that kernel's own pointer.
template <typename T, int kD, int kBM, int kBN, int kWarpM, int kMinB, int kFlags>
static attn_status fused_launch(const attn_fused_params &p, cudaStream_t stream) {
  constexpr bool kMask = (kFlags & FUSED_MASK) != 0;
  constexpr int kThreads = kBM / kWarpM * 32;
  constexpr int kSmem = fused_smem<kD, kBM, kBN, kWarpM, kFlags>::kBytes;
  void (*kernel)(const attn_fused_params);
  if constexpr (kMask)
    kernel = efficient_fwd_kernel<T, kD, kBM, kBN, kWarpM, kMinB, kFlags & ~FUSED_MASK>;
  else kernel = flash_fwd_kernel<T, kD, kBM, kBN, kWarpM, kMinB, kFlags>;
  attn_status st = attn_launch_smem_limit(p.ctx, (const void *)kernel, kSmem);
  if (st) return st;
  const dim3 grid((unsigned)((p.sq + kBM - 1) / kBM), (unsigned)p.hq, (unsigned)p.b);
  kernel<<<grid, kThreads, kSmem, stream>>>(p);
  if constexpr (kMask) ATTN_CUDA_CHECK_LAUNCH("efficient_fwd_kernel");
  else ATTN_CUDA_CHECK_LAUNCH("flash_fwd_kernel");
  return ATTN_STATUS_OK;
}

// The instance the backends run for (dtype, head dim); defined in the
// generated files instances/fused_fwd_*.cu.
template <typename T, int kD, bool kMask>
attn_status fused_run(const attn_fused_params &p, cudaStream_t stream) {
  using C = flash_cfg<kD, kMask>;
  return fused_launch<T, kD, C::kBM, C::kBN, C::kWarpM, C::kMinB,
                      C::kFlags | (kMask ? FUSED_MASK : 0)>(p, stream);
}

#endif
