// Split-KV decode (flash-decoding) on mma.sync, for serving: a few new query
// tokens per sequence against a long KV cache, paged or contiguous, and
// packed variable-length queries (written from the published algorithm and
// the PTX ISA; no code copied).
//
// Work split. Grid (splits x row_groups, Hkv, B). A CTA owns one KV head of
// one sequence and a range of its keys (its split), and ALL the query rows
// that read that head (decode/seq.cuh). Rows past 16 * kWM go to further
// row groups (more CTAs, same keys; prefill).
// Tile: kRows = 16 * kWM query rows x DECODE_BK = 64 keys per step; 4 warps,
// kWM row atoms x kWK = 4 / kWM key groups: warp (wm, kg) owns rows
// wm*16..+15 and keys kg*kNK..+kNK-1 of each step, with its own online
// softmax; the key groups merge once at the end (decode/combine.cuh).
// Per step: the K and V tiles arrive in a ring of kStages buffers
// (decode/loader.cuh's decode_ring), then S = Q K^T, mask (split end, causal
// bottom-right per sequence), online softmax in the exp2 domain, O += P V.
// End: with one split the CTA writes out and lse; with several it writes its
// normalized partial O and its lse (fp32) and decode_combine_kernel merges
// the splits.
// Shared memory: Q [kRows x kD], K and V rings [kStages x 64 x kD], 16-bit,
// XOR-swizzled (fused_swz); the fp32 merge buffer reuses the rings; two
// slots of 64 key rows' addresses.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_KERNEL_CUH

#include "attn/cuda/fused/decode/combine.cuh"
#include "attn/cuda/fused/decode/launch.cuh"
#include "attn/cuda/fused/decode/loader.cuh"
#include "attn/cuda/fused/decode/mma.cuh"
#include "attn/cuda/fused/decode/softmax.cuh"

// Q tile, K/V ring, two slots of 64 key rows' (batch or page, row) pairs.
// D128 with 64 query rows (8 new tokens under GQA 8) comes to 115,712
// bytes: two CTAs fill an SM's 228 KB exactly (with the 1 KB each reserves).
template <int kD, int kWM>
constexpr int decode_smem_bytes() {
  return (16 * kWM * kD + decode_cfg<kD>::kStages * 2 * DECODE_BK * kD) * 2 + 2 * DECODE_BK * 8;
}

// Keys [k_begin, k_stop) of the split: causal hides keys past the diagonal
// of the CTA's last token (query row last_row); splits of whole blocks.
FUSED_DEV void decode_split_keys(const attn_decode_params &p, const decode_seq &sq, int split,
                                 int last_row, int *k_begin, int *k_stop) {
  const int t_last = min(sq.nq - 1, last_row / p.group);
  int kv_end = p.causal ? min(sq.nk, t_last + 1 + sq.nk - sq.nq) : sq.nk;
  kv_end = max(kv_end, 0);
  int chunk = (kv_end + p.splits - 1) / p.splits;
  chunk = (chunk + DECODE_BK - 1) / DECODE_BK * DECODE_BK;
  *k_begin = min(split * chunk, kv_end), *k_stop = min(kv_end, *k_begin + chunk);
}

// One step for warp (wm, kg): S = Q K^T over its kNK keys of the block
// (the first, key j0), mask, online softmax, O rescaled, O += P V.
template <typename T, int kD, int kRows, int kNK>
FUSED_DEV void decode_split_step(const T *qs, const T *ks, const T *vs, float (&o)[kD / 8][4],
                                 float (&m)[2], float (&l)[2], const int (&lim)[2], int j0, int kw,
                                 int k_stop, float scale, int wm, int lane) {
  auto kat = [&](int r, int ch) { return fused_smem_addr(ks + fused_swz<DECODE_BK, kD>(r, ch)); };
  auto vat = [&](int r, int ch) { return fused_smem_addr(vs + fused_swz<DECODE_BK, kD>(r, ch)); };
  float s[kNK / 8][4];
  decode_zero(s);
#pragma unroll
  for (int kk = 0; kk < kD / 16; kk++) {
    uint32_t a[4];
    decode_q_frag<T, kRows, kD>(a, qs, wm * 16, kk, lane);
#pragma unroll
    for (int n2 = 0; n2 < kNK / 16; n2++)
      decode_qk16<T>(a, s[2 * n2], s[2 * n2 + 1], kw + n2 * 16, kk, lane, kat);
  }
  float mx[2] = {m[0], m[1]}, alpha[2];
#pragma unroll
  for (int nt = 0; nt < kNK / 8; nt++)
    decode_mask_tile(s[nt], j0 + nt * 8 + 2 * (lane % 4), true, k_stop, lim, scale, mx);
  decode_online_softmax<kNK / 8>(s, mx, m, l, alpha);
#pragma unroll
  for (int i = 0; i < kD / 8; i++)
    o[i][0] *= alpha[0], o[i][1] *= alpha[0], o[i][2] *= alpha[1], o[i][3] *= alpha[1];
#pragma unroll
  for (int kk = 0; kk < kNK / 16; kk++)
    decode_pv16<T, kD>(s[2 * kk], s[2 * kk + 1], o, kw + kk * 16, lane, vat);
}

template <typename T, int kD, int kWM, int kPath>
__global__ void __launch_bounds__(DECODE_THREADS, 1) decode_fwd_kernel(const attn_decode_params p) {
  constexpr int kStages = decode_cfg<kD>::kStages;
  constexpr int kRows = 16 * kWM, kWK = 4 / kWM, kNK = DECODE_BK / kWK;
  constexpr int kTile = DECODE_BK * kD;
  extern __shared__ __align__(128) unsigned char decode_smem[];
  T *qs = (T *)decode_smem;
  T *ring = qs + kRows * kD;  // [kStages][2][kTile], then the address slots
  static_assert((kWK * kRows * (kD + 8) + 8 * kRows) * 4 <= kStages * 2 * kTile * 2,
                "the warps' merge fits the ring");

  const int b = blockIdx.z, hk = blockIdx.y;
  const int split = blockIdx.x % p.splits, rg = blockIdx.x / p.splits;
  // int, not unsigned, thread index arithmetic: the code the kernel shipped with
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / kWK, kg = warp % kWK;
  const decode_seq sq = decode_seq_of(p, b);
  const int R = p.group * sq.nq, r0 = rg * kRows;
  if (r0 >= R) return;  // rows of no token: nothing to write
  int k_begin, k_stop;
  decode_split_keys(p, sq, split, r0 + kRows - 1, &k_begin, &k_stop);
  const int nblocks = (k_stop - k_begin + DECODE_BK - 1) / DECODE_BK;

  decode_load_q<T, kD, kRows, DECODE_THREADS>(p, sq, hk, r0, R, qs);
  decode_ring<T, kD, kStages, kPath> kv(p, ring, b, hk, k_begin, k_stop, nblocks);
  kv.prologue(p);

  float o[kD / 8][4];
  decode_zero(o);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  int lim[2];
  decode_causal_limits(p, sq, r0 + wm * 16, lane, lim);
  for (int blk = 0; blk < nblocks; blk++) {
    fused_cp_async_wait<kStages - 2>();
    __syncthreads();
    kv.load(p, blk + kStages - 1);
    kv.block_offsets(p, blk + kStages);  // slot (blk + kStages) % 2: not the one just read
    const T *ks = kv.tile(blk);
    decode_split_step<T, kD, kRows, kNK>(qs, ks, ks + kTile, o, m, l, lim,
                                         k_begin + blk * DECODE_BK + kg * kNK, kg * kNK, k_stop,
                                         p.scale_log2, wm, lane);
  }
  fused_cp_async_wait<0>();
  __syncthreads();  // the rings are free: they become the fp32 merge buffer
  decode_quad_sum(l);
  decode_merge_warps<kD, kRows, kWK, DECODE_THREADS>(
      o, m, l, (float *)ring, r0, R, wm, kg, lane, [&](int r, int col, float4 val, float lse2) {
        decode_put4<T, kD>(p, sq, split, hk, r0 + r, col, val, lse2);
      });
}

// The shared-memory limit and the largest carveout for the kernel and its combine.
template <typename T, int kD, int kWM, int kPath>
attn_status decode_prepare(attn_ctx *ctx) {
  const void *fn = (const void *)decode_fwd_kernel<T, kD, kWM, kPath>;
  attn_status st = attn_launch_smem_limit(ctx, fn, decode_smem_bytes<kD, kWM>());
  if (!st) st = decode_carveout(ctx, fn);
  if (!st) st = decode_carveout(ctx, (const void *)decode_combine_kernel<T, kD>);
  return st;
}

// One launch of fn on grid x threads with smem bytes of dynamic shared memory.
static inline cudaError_t decode_launch_one(void (*fn)(const attn_decode_params), dim3 grid,
                                            int threads, int smem, const attn_decode_params &p,
                                            cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid, cfg.blockDim = dim3(threads), cfg.dynamicSmemBytes = (size_t)smem;
  cfg.stream = stream;
  return cudaLaunchKernelEx(&cfg, fn, p);
}

template <typename T, int kD, int kWM, int kPath>
attn_status decode_run(const attn_decode_params &p, attn_ctx *ctx, cudaStream_t stream) {
  attn_status st = decode_prepare<T, kD, kWM, kPath>(ctx);
  if (st) return st;
  dim3 grid((unsigned)(p.splits * p.row_groups), (unsigned)p.hkv, (unsigned)p.batch);
  cudaError_t e = decode_launch_one(decode_fwd_kernel<T, kD, kWM, kPath>, grid, DECODE_THREADS,
                                    decode_smem_bytes<kD, kWM>(), p, stream);
  if (e != cudaSuccess) return attn_cuda_fail(e, "launch of decode_fwd_kernel");
  if (p.splits > 1) {
    const int rows_per_cta = DECODE_COMBINE_THREADS / 32;
    const unsigned blocks = (unsigned)((p.part_rows + rows_per_cta - 1) / rows_per_cta);
    e = decode_launch_one(decode_combine_kernel<T, kD>, dim3(blocks), DECODE_COMBINE_THREADS, 0, p,
                          stream);
    if (e != cudaSuccess) return attn_cuda_fail(e, "launch of decode_combine_kernel");
  }
  return ATTN_STATUS_OK;
}

// The occupancy API counts the dynamic shared memory against the kernel's
// limit, so the limit is raised first.
template <typename T, int kD, int kWM, int kPath>
int decode_occupancy(attn_ctx *ctx) {
  const void *fn = (const void *)decode_fwd_kernel<T, kD, kWM, kPath>;
  return decode_recorded(ctx, fn, DECODE_REC_OCCUPANCY, 1, [&]() {
    int n = 0;
    if (decode_prepare<T, kD, kWM, kPath>(ctx) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, decode_fwd_kernel<T, kD, kWM, kPath>,
                                                      DECODE_THREADS,
                                                      decode_smem_bytes<kD, kWM>()) != cudaSuccess)
      return -1;
    return n > 0 ? n : 1;
  });
}

#define DECODE_INSTANCE_P(T, D, WM, P)                                                 \
  template attn_status decode_run<T, D, WM, P>(const attn_decode_params &, attn_ctx *, \
                                               cudaStream_t);                          \
  template int decode_occupancy<T, D, WM, P>(attn_ctx *);
#define DECODE_INSTANCE(T, D, WM)                 \
  DECODE_INSTANCE_P(T, D, WM, DECODE_PATH_LOOKUP) \
  DECODE_INSTANCE_P(T, D, WM, DECODE_PATH_LINEAR) \
  DECODE_INSTANCE_P(T, D, WM, DECODE_PATH_OFFSETS)

#endif
