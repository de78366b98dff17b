// Split-KV decode for small grids in ONE kernel (sm_90): the splits of one
// (sequence, KV head) form a thread-block cluster and merge their partial
// outputs through distributed shared memory, so no combine kernel runs and
// no partial goes through global memory.
//
// Work split. Grid (C, Hkv, B), cluster (C, 1, 1), C = p.splits in 2..16.
// CTA c owns keys [c * chunk, (c + 1) * chunk) of its sequence (chunk =
// p.cl_chunk, a multiple of 16, at most DECODE_CLUSTER_KEYS(kD)) and all R =
// G * nq <= 16 query rows of its KV head (one m16 row atom). 8 warps; warp w
// owns the 16-key slices w, w + 8, ... of the chunk for S = Q K^T, its
// softmax and P V.
// Loads (decode/loader.cuh): all of a CTA's bytes in flight at once, so its
// chain pays one round trip, and S = Q K^T runs while V lands. kBulk = 0: Q,
// every K row and every V row in three cp.async groups of 16-byte copies;
// kBulk = 1: Q by cp.async, each warp's own K and V rows by one bulk copy a
// row on its two mbarriers, rows padded instead of swizzled. Contiguous K/V
// (DENSE, CACHE) are addressed without the sequence's length: rows up to the
// cache's capacity go out before kv_len arrives, and V rows past the keys
// are zeroed once they land (a garbage V row times p = 0 could be NaN).
// Softmax: a warp holds all its scores in registers, so it is one pass.
// Merges (decode/combine.cuh): the 8 warps' O through shared memory into the
// CTA's partial P and lse; a cluster barrier; CTA c merges columns [c * kD /
// C, +kD / C) of every row from all C CTAs' P and lse and writes out and
// lse; a last cluster barrier keeps each CTA's shared memory alive until its
// peers have read it.
// Shared memory (sized by the chunk): Q [16 x kD], then K and V [chunk x kD]
// as 16-row slices each XOR-swizzled (fused_swz<16, kD>), 16-bit, or with
// bulk copies [chunk x (kD + 8)]; after P V the warps' merge slab reuses
// that region; P [16 x (kD + 8)] and lse apart (peers read them); the
// mbarriers last.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_CLUSTER_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_CLUSTER_CUH

#include "attn/cuda/fused/decode_kernel.cuh"

// The K/V region of a CTA of `chunk` keys, which the warps' merge slab reuses.
template <int kD, int kBulk>
__host__ __device__ constexpr int decode_cl_region_bytes(int chunk) {
  return 2 * chunk * decode_cl_row<kD, kBulk>() * 2 >
                 (DECODE_CL_WARPS * 16 * (kD + 8) + 2 * DECODE_CL_WARPS * 16) * 4
             ? 2 * chunk * decode_cl_row<kD, kBulk>() * 2
             : (DECODE_CL_WARPS * 16 * (kD + 8) + 2 * DECODE_CL_WARPS * 16) * 4;
}
// A row of the CTA's partial P in floats.
#define DECODE_CL_PART(kD) ((kD) + 8)
// Q, the region, P, the 16 rows' lse and two mbarriers a warp (bulk copies).
// Sized by the chunk, so that where it allows two CTAs an SM the device can
// place 16-CTA clusters.
template <int kD, int kBulk>
__host__ __device__ constexpr int decode_cl_smem_bytes(int chunk) {
  return 16 * kD * 2 + decode_cl_region_bytes<kD, kBulk>(chunk) + 16 * DECODE_CL_PART(kD) * 4 +
         16 * 4 + 2 * DECODE_CL_WARPS * 8;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Issues Q, K and V: bulk copies (K and V on the warp's mbarriers at bar,
// bar + 8) or cp.async in three groups (Q, K, V).
template <typename T, int kD, int kBulk>
FUSED_DEV void decode_cl_issue(const attn_decode_params &p, const decode_seq &sq, int b, int hk,
                               int R, int k_begin, int n, int n16, T *qs, T *ks, T *vs,
                               uint32_t bar, int warp, int lane) {
  decode_load_q<T, kD, 16, DECODE_CL_THREADS>(p, sq, hk, 0, R, qs);
  if constexpr (kBulk) {
    decode_cl_bulk<T, kD>(p, b, hk, k_begin, n, n16, ks, vs, bar, warp, lane);
  } else {
    decode_cl_copy<T, kD, 0>(p, b, hk, k_begin, n, n16, ks);
    fused_cp_async_commit();
    decode_cl_copy<T, kD, 1>(p, b, hk, k_begin, n, n16, vs);
    fused_cp_async_commit();
  }
}

// Waits until Q and this warp's K rows (bulk; cp.async: every K row) landed.
template <int kBulk>
FUSED_DEV void decode_cl_wait_k(uint32_t bar) {
  if constexpr (kBulk) {
    fused_cp_async_wait<0>();
    __syncthreads();      // Q landed
    ws_bar_wait(bar, 0);  // this warp's K rows landed
    __syncwarp();         // and its zeroed rows are written
  } else {
    fused_cp_async_wait<1>();
    __syncthreads();  // Q and K landed
  }
}

// Waits until the V rows this warp reads landed, and zeroes rows [keys, n)
// of the last slice (copied past the keys: contiguous K/V).
template <typename T, int kD, int kBulk, int kSl>
FUSED_DEV void decode_cl_wait_v(T *vs, uint32_t bar, int keys, int n, int nsl, int warp, int lane) {
  constexpr int kChunks = kD / 8;
  if constexpr (kBulk) {
    ws_bar_wait(bar + 8, 0);  // this warp's V rows landed
#pragma unroll
    for (int i = 0; i < kSl; i++) {  // a lane a row of this warp's slices
      const int r = (warp + DECODE_CL_WARPS * i) * 16 + lane;
      if (lane < 16 && r >= keys && r < n && r < nsl * 16)
#pragma unroll
        for (int c = 0; c < kChunks; c++)
          *(uint4 *)(vs + decode_cl_at<kD, 1>(r, c)) = make_uint4(0, 0, 0, 0);
    }
    __syncwarp();
  } else {
    fused_cp_async_wait<0>();
    __syncthreads();              // V landed
    if (n > keys && keys % 16) {  // uniform
      for (int c = threadIdx.x; c < (16 - keys % 16) * kChunks; c += DECODE_CL_THREADS) {
        const int r = keys + c / kChunks;
        if (r < n) *(uint4 *)(vs + decode_cl_at<kD, 0>(r, c % kChunks)) = make_uint4(0, 0, 0, 0);
      }
      __syncthreads();
    }
  }
}

// S = Q K^T over the warp's slices (s[2 i], s[2 i + 1]: slice warp + 8 i),
// masked (past the keys, causal) and exp'd in one pass; m, l its rows' max
// and (this lane's part of the) sum.
template <typename T, int kD, int kBulk, int kSl>
FUSED_DEV void decode_cl_scores(const attn_decode_params &p, float (&s)[2 * kSl][4], float (&m)[2],
                                float (&l)[2], const T *qs, const T *ks, const int (&lim)[2],
                                int k_begin, int k_stop, int nsl, int warp, int lane) {
  auto kat = [&](int r, int ch) { return fused_smem_addr(ks + decode_cl_at<kD, kBulk>(r, ch)); };
#pragma unroll
  for (int i = 0; i < kSl; i++) {
#pragma unroll
    for (int e = 0; e < 4; e++) s[2 * i][e] = s[2 * i + 1][e] = 0.f;
    const int sl = warp + DECODE_CL_WARPS * i;
    if (sl >= nsl) continue;
#pragma unroll
    for (int kk = 0; kk < kD / 16; kk++) {
      uint32_t a[4];
      decode_q_frag<T, 16, kD>(a, qs, 0, kk, lane);
      decode_qk16<T>(a, s[2 * i], s[2 * i + 1], sl * 16, kk, lane, kat);
    }
  }
  m[0] = m[1] = -INFINITY, l[0] = l[1] = 0.f;
#pragma unroll
  for (int i = 0; i < 2 * kSl; i++) {
    const int sl = warp + DECODE_CL_WARPS * (i / 2);
    decode_mask_tile(s[i], k_begin + sl * 16 + (i % 2) * 8 + 2 * (lane % 4), sl < nsl, k_stop, lim,
                     p.scale_log2, m);
  }
  decode_softmax_once<2 * kSl>(s, m, l);
}

// O = P V over the warp's slices, all columns; l summed across each row's lanes.
template <typename T, int kD, int kBulk, int kSl>
FUSED_DEV void decode_cl_pv(const float (&s)[2 * kSl][4], float (&l)[2], float (&o)[kD / 8][4],
                            const T *vs, int nsl, int warp, int lane) {
  auto vat = [&](int r, int ch) { return fused_smem_addr(vs + decode_cl_at<kD, kBulk>(r, ch)); };
  decode_zero(o);
#pragma unroll
  for (int i = 0; i < kSl; i++) {
    const int sl = warp + DECODE_CL_WARPS * i;
    if (sl >= nsl) continue;
    decode_pv16<T, kD>(s[2 * i], s[2 * i + 1], o, sl * 16, lane, vat);
  }
  decode_quad_sum(l);
}
#endif

template <typename T, int kD, int kBulk>
__global__ void __launch_bounds__(DECODE_CL_THREADS, 1)
    decode_cluster_kernel(const attn_decode_params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kSl = DECODE_CLUSTER_KEYS(kD) / 16 / DECODE_CL_WARPS;  // slices per warp, most
  constexpr int kRow = decode_cl_row<kD, kBulk>(), kPR = DECODE_CL_PART(kD);
  extern __shared__ __align__(128) unsigned char decode_smem[];
  T *qs = (T *)decode_smem;
  T *ks = qs + 16 * kD, *vs = ks + p.cl_chunk * kRow;
  unsigned char *after = decode_smem + 16 * kD * 2 + decode_cl_region_bytes<kD, kBulk>(p.cl_chunk);
  float *part = (float *)after, *part_lse = part + 16 * kPR;  // [16][kPR], [16]
  // this warp's K and V mbarriers (bulk copies)
  const uint32_t bar = fused_smem_addr(part_lse + 16) + 16 * (threadIdx.x / 32);

  const int b = blockIdx.z, hk = blockIdx.y;
  // int, not unsigned, thread index arithmetic: the code the kernel shipped with
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const decode_seq sq = decode_seq_of(p, b);
  const int R = p.group * sq.nq;
  const int chunk = p.cl_chunk, k_begin = blockIdx.x * chunk;
  // One row group: its last token sees all keys. No rows (an empty query run): no keys.
  const int k_stop = R == 0 ? k_begin : max(k_begin, min(sq.nk, k_begin + chunk));
  const bool early = p.kv_kind == DECODE_KV_DENSE || p.kv_kind == DECODE_KV_CACHE;
  const int n = max(R == 0 ? 0 : early ? min(chunk, p.sk - k_begin) : k_stop - k_begin, 0);
  const int n16 = (n + 15) / 16 * 16;
  decode_cl_issue<T, kD, kBulk>(p, sq, b, hk, R, k_begin, n, n16, qs, ks, vs, bar, warp, lane);

  const int keys = k_stop - k_begin, nsl = (keys + 15) / 16;
  int lim[2];
  decode_causal_limits(p, sq, 0, lane, lim);
  decode_cl_wait_k<kBulk>(bar);
  float s[2 * kSl][4], m[2], l[2];
  decode_cl_scores<T, kD, kBulk, kSl>(p, s, m, l, qs, ks, lim, k_begin, k_stop, nsl, warp, lane);
  decode_cl_wait_v<T, kD, kBulk, kSl>(vs, bar, keys, n, nsl, warp, lane);
  float o[kD / 8][4];
  decode_cl_pv<T, kD, kBulk, kSl>(s, l, o, vs, nsl, warp, lane);
  __syncthreads();  // K and V are read: the region becomes the warps' merge slab
  decode_merge_warps<kD, 16, DECODE_CL_WARPS, DECODE_CL_THREADS>(
      o, m, l, (float *)ks, 0, R, 0, warp, lane, [&](int r, int col, float4 val, float lse2) {
        *(float4 *)(part + r * kPR + col) = val;
        if (col == 0) part_lse[r] = lse2;
      });
  ws_cluster_sync();  // every CTA's P and lse written
  decode_cluster_merge<T, kD, kPR, DECODE_CL_THREADS>(p, sq, hk, R, p.splits, part, part_lse, tid);
  // No CTA's shared memory goes while a peer may read it; relaxed: the
  // peers' loads above have returned (their values are used) before they arrive.
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n"
               "barrier.cluster.wait.aligned;\n" ::
                   : "memory");
#else
  __trap();  // built for sm_90 only; the plan never picks it elsewhere
#endif
}

// The shared-memory limit (for the largest chunk), clusters of 16 (non-
// portable on sm_90) and the largest carveout.
template <typename T, int kD, int kBulk>
attn_status decode_cluster_prepare(attn_ctx *ctx) {
  const void *fn = (const void *)decode_cluster_kernel<T, kD, kBulk>;
  attn_status st =
      attn_launch_smem_limit(ctx, fn, decode_cl_smem_bytes<kD, kBulk>(DECODE_CLUSTER_KEYS(kD)));
  if (!st)
    st = decode_attr_once(ctx, fn, DECODE_REC_CLUSTER,
                          cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  if (!st) st = decode_carveout(ctx, fn);
  return st;
}

// The launch configuration of clusters of c CTAs; attr holds its attribute.
static inline cudaLaunchConfig_t decode_cl_config(dim3 grid, int c, int smem, cudaStream_t stream,
                                                  cudaLaunchAttribute *attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid, cfg.blockDim = dim3(DECODE_CL_THREADS), cfg.dynamicSmemBytes = (size_t)smem;
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)c;
  attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr, cfg.numAttrs = 1;
  return cfg;
}

template <typename T, int kD, int kBulk>
attn_status decode_cluster_run(const attn_decode_params &p, attn_ctx *ctx, cudaStream_t stream) {
  attn_status st = decode_cluster_prepare<T, kD, kBulk>(ctx);
  if (st) return st;
  cudaLaunchAttribute attr[1];
  const dim3 grid((unsigned)p.splits, (unsigned)p.hkv, (unsigned)p.batch);
  cudaLaunchConfig_t cfg =
      decode_cl_config(grid, p.splits, decode_cl_smem_bytes<kD, kBulk>(p.cl_chunk), stream, attr);
  cudaError_t e = cudaLaunchKernelEx(&cfg, decode_cluster_kernel<T, kD, kBulk>, p);
  return e == cudaSuccess ? ATTN_STATUS_OK : attn_cuda_fail(e, "launch of decode_cluster_kernel");
}

// Clusters of c CTAs of `chunk` keys the device runs at once (0 when it
// cannot say), recorded per handle, device, c and chunk.
template <typename T, int kD, int kBulk>
int decode_cluster_fit(attn_ctx *ctx, int c, int chunk) {
  const void *fn = (const void *)decode_cluster_kernel<T, kD, kBulk>;
  if (c < 1 || c > 16 || chunk < 0 || chunk > DECODE_CLUSTER_KEYS(kD)) return 0;
  return decode_recorded(ctx, fn, DECODE_REC_FIT + (c << 10 | chunk / 16), 0, [&]() {
    int n = 0;
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t cfg =
        decode_cl_config(dim3((unsigned)c), c, decode_cl_smem_bytes<kD, kBulk>(chunk), 0, attr);
    if (decode_cluster_prepare<T, kD, kBulk>(ctx) ||
        cudaOccupancyMaxActiveClusters(&n, decode_cluster_kernel<T, kD, kBulk>, &cfg) !=
            cudaSuccess)
      return cudaGetLastError(), -1;
    return n;
  });
}

#define DECODE_CLUSTER_INSTANCE_B(T, D, B)                                                 \
  template attn_status decode_cluster_run<T, D, B>(const attn_decode_params &, attn_ctx *, \
                                                   cudaStream_t);                          \
  template int decode_cluster_fit<T, D, B>(attn_ctx *, int, int);
#define DECODE_CLUSTER_INSTANCE(T, D) \
  DECODE_CLUSTER_INSTANCE_B(T, D, 0)  \
  DECODE_CLUSTER_INSTANCE_B(T, D, 1)

#endif
