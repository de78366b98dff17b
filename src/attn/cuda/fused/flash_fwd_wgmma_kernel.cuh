// flash on Hopper (sm_90a only): the online-softmax loop of
// flash_fwd_kernel.cuh with both products on wgmma, the warpgroup-wide
// asynchronous tensor-core instruction that mma.sync cannot reach on sm_90
// (written from the PTX ISA; no code copied). flash_cuda.cu runs it on compute
// capability 9.0 for D 64/128/256 where the ws kernel refuses (strides TMA
// cannot take: zero, negative or 2^40 bytes and over; a driver without
// cuTensorMapEncodeTiled), or when opts.flash_kernel = wgmma forces it.
//
// Tile: kBM = 128 query rows x kBN keys per step (kBN = 128, 64 at D = 256),
// 256 threads = 2 warpgroups. Warpgroup w owns query rows 64w..64w+63 of
// the CTA; inside it warp i owns rows 16i..16i+15, and a lane holds rows g
// and g + 8 (g = lane / 4) of its warp, so a row's statistics live in one
// quad, as in the mma.sync kernel.
// Per key tile (K/V double-buffered; tile n-1 is copied while tile n runs):
//   wait tile n + barrier | issue copy of tile n-1 |
//   S = Q K^T: kD/16 wgmma m64 n{kBN} k16, Q and K read by the tensor cores
//   from shared memory (K-major, 128-byte swizzle: the fused_swz layout)
//   mask (tail or diagonal tiles only), online softmax in registers, P
//   rounded to 16 bits in place as wgmma's register A fragment
//   O += P V: kBN/16 wgmma m64 n{kD} k16, V read N-major (imm-trans-b)
// Each warpgroup waits for its own products (wgmma.wait_group 0) before the
// softmax and before the next tile, so a barrier per tile is the only
// cross-warpgroup synchronisation. The copies are cp.async by every thread
// (fused_load_tile); a proxy fence makes them visible to the tensor cores.
// Shared memory: Q [128 x kD] + 2 x (K, V [kBN x kD]), 16-bit, 1024-byte
// aligned (the swizzle pattern repeats every 1024 bytes): 80 KB at D64,
// 160 KB at D128, 192 KB at D256; one CTA per SM.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FLASH_FWD_WGMMA_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FLASH_FWD_WGMMA_KERNEL_CUH

#include "attn/cuda/fused/flash_fwd_kernel.cuh"
#include "attn/cuda/fused/wgmma_ops.cuh"

template <int kD>
struct wgmma_cfg {
  static constexpr int kBM = 128, kBN = kD == 256 ? 64 : 128, kThreads = 256;
  static constexpr int kSmem = 1024 + (kBM + 4 * kBN) * kD * 2;
};

FUSED_DEV void wg_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
FUSED_DEV void wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
FUSED_DEV void wg_wait_all(void) {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

// Keeps the compiler from moving reads of accumulators above the wait (or
// writes below the issue): each register passes through an empty asm.
template <int R>
FUSED_DEV void wg_hold(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// cp.async writes through the generic proxy; wgmma reads through the async
// proxy: the fence orders the first before the second.
FUSED_DEV void wg_fence_smem(void) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Shared-memory matrix descriptor with the 128-byte swizzle (mode 1 in bits
// 62-63): start address, leading and stride byte offsets, each >> 4.
// K-major (Q, K): stride = 1024 bytes between 8-row groups; the leading
// offset is unused. N-major (V): leading = bytes between 64-column blocks,
// stride = 1024 bytes between 8-key groups.
FUSED_DEV uint64_t wg_desc(uint32_t addr, uint32_t lead, uint32_t stride) {
  return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)((lead >> 4) & 0x3FFFu) << 16) |
         ((uint64_t)((stride >> 4) & 0x3FFFu) << 32) | (1ull << 62);
}

// Hides keys past Sk and, under a causal rule, past each row's limit.
template <int kSR>
FUSED_DEV void wg_mask(float (&s)[kSR], const attn_fused_params &p, int row_g, int n0, int t4) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int row = row_g + 8 * hh;
    const int lim = p.causal ? min(p.sk - 1, row + p.causal_off) : p.sk - 1;
#pragma unroll
    for (int j = 0; j < kSR / 4; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (n0 + j * 8 + 2 * t4 + e > lim) s[4 * j + 2 * hh + e] = -INFINITY;
  }
}

// Online softmax of one S tile (exp2 domain, as flash_fwd_kernel.cuh),
// shared by both Hopper kernels: the row statistics m, l move on, P lands in
// pa as the register A fragments of the P V product (16 keys per fragment),
// and alpha is O's rescale factor per row half. O is not touched here: in
// the ws kernel its previous product may still be in flight.
// tau (log2 units, >= 0): a row's running max m moves only when the tile's
// max exceeds it by more than tau; otherwise alpha is exactly 1 and P may
// reach 2^tau (bf16 and fp16 hold it; l, O and the final O / l stay exact
// to rounding, as m cancels). tau = 0 is the plain online softmax.
// One row half's new running max from this lane's max mx (taken over m too)
// and the quad's: sets m and alpha, returns the exp2 offset m * c.
FUSED_DEV float wg_row_base(float mx, float &m, float &alpha, float c, float tau) {
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
  if (!(mx * c - m * c > tau)) mx = m;  // false for NaN: m stays -inf
  const float base = mx == -INFINITY ? 0.f : mx * c;
  alpha = fused_exp2(m * c - base);
  m = mx;
  return base;
}

// The max of m and this lane's scores of row half hh.
template <int kSR>
FUSED_DEV float wg_row_max(const float (&s)[kSR], int hh, float m) {
#pragma unroll
  for (int j = 0; j < kSR / 4; ++j) m = fmaxf(m, fmaxf(s[4 * j + 2 * hh], s[4 * j + 2 * hh + 1]));
  return m;
}

// P = 2^(s c - base) of row half hh into pa; returns this lane's sum of P.
template <typename T, int kSR>
FUSED_DEV float wg_exp_row(const float (&s)[kSR], uint32_t (&pa)[kSR / 8][4], int hh, float c,
                           float base) {
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < kSR / 4; ++j) {
    const float p0 = fused_exp2(fmaf(s[4 * j + 2 * hh], c, -base));
    const float p1 = fused_exp2(fmaf(s[4 * j + 2 * hh + 1], c, -base));
    sum += p0 + p1;
    // 8-key group j is half of fragment j / 2: registers {row g, row g+8}
    // of keys 0-7, then of keys 8-15.
    pa[j / 2][2 * (j % 2) + hh] = fused_pack2<T>(p0, p1);
  }
  return sum;
}

template <typename T, int kSR>
FUSED_DEV void wg_softmax(float (&s)[kSR], float (&m)[2], float (&l)[2], uint32_t (&pa)[kSR / 8][4],
                          float (&alpha)[2], float c, float tau = 0.f) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float base = wg_row_base(wg_row_max(s, hh, m[hh]), m[hh], alpha[hh], c, tau);
    l[hh] = l[hh] * alpha[hh] + wg_exp_row<T>(s, pa, hh, c, base);
  }
}

// O *= alpha, per row half (registers 4j, 4j+1: row g; 4j+2, 4j+3: row g+8).
template <int kOR>
FUSED_DEV void wg_rescale(float (&o)[kOR], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < kOR / 4; ++j) {
    o[4 * j] *= alpha[0], o[4 * j + 1] *= alpha[0];
    o[4 * j + 2] *= alpha[1], o[4 * j + 3] *= alpha[1];
  }
}

// The Hopper kernels' epilogue, per accumulator row: l summed over the
// quad (wg_row_sum), and lse (natural log) of row r when asked, by the
// quad's first lane, for the rows below rows; lse points at the tile's row 0.
FUSED_DEV float wg_row_sum(float l) {
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  return l + __shfl_xor_sync(0xffffffffu, l, 2);
}
FUSED_DEV void wg_put_lse(float *lse, float m, float sum, float c, int r, int t4, int rows) {
  if (lse && t4 == 0 && r < rows)
    lse[r] = (m == -INFINITY || sum == 0.f) ? -INFINITY : (m * c + __log2f(sum)) * FUSED_LN2;
}

// Epilogue of both Hopper kernels: O / l rounded into rows r0 and r0 + 8 of
// the swizzled tile at sQ (the caller's own rows), and lse.
template <typename T, int kBM, int kD, int kOR>
FUSED_DEV void wg_stage_out(T *sQ, const float (&o)[kOR], const float (&m)[2], const float (&l)[2],
                            int r0, int t4, float c, float *lse, int rows) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float sum = wg_row_sum(l[hh]), inv = sum == 0.f ? 0.f : __fdividef(1.f, sum);
    const int r = r0 + 8 * hh;
#pragma unroll
    for (int j = 0; j < kOR / 4; ++j)
      *(uint32_t *)(sQ + fused_swz<kBM, kD>(r, j) + 2 * t4) =
          fused_pack2<T>(o[4 * j + 2 * hh] * inv, o[4 * j + 2 * hh + 1] * inv);
    wg_put_lse(lse, m[hh], sum, c, r, t4, rows);
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(256, 1) flash_fwd_wgmma_kernel(const attn_fused_params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = wgmma_cfg<kD>;
  constexpr int kBM = C::kBM, kBN = C::kBN, kThreads = C::kThreads;
  constexpr int kSR = kBN / 2, kOR = kD / 2;                   // S and O registers per thread
  constexpr uint32_t kTile = kBN * kD * 2, kPair = 2 * kTile;  // one K (or V) tile; K + V
  extern __shared__ __align__(1024) char smem[];

  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
  const int wrow = wg * 64 + ((tid >> 5) & 3) * 16;  // this warp's first row in the CTA
  const auto [b, h, hk, m0, rows_q, n_blocks, qg, kg, vg] = fused_cta_of<T, kBM, kBN>(p);
  if (n_blocks == 0) {  // every row hidden
    fused_store_hidden_rows<T, kThreads>(p, b, h, m0, rows_q, tid);
    return;
  }

  char *base = smem + ((1024u - (fused_smem_addr(smem) & 1023u)) & 1023u);
  T *sQ = (T *)base;
  const uint32_t aQ = fused_smem_addr(base), aKV = aQ + kBM * kD * 2;

  // Tiles run from the last (the only one that may be partial) to the first.
  int nb = n_blocks - 1;
  fused_load_tile<T, kBM, kD, kThreads>(aQ, qg, p.q_ss, rows_q, kD / 8, tid);
  {
    const uint32_t kv = aKV + (uint32_t)(nb & 1) * kPair;
    const int rows = p.sk - nb * kBN;
    fused_load_tile<T, kBN, kD, kThreads>(kv, kg + (int64_t)nb * kBN * p.k_ss, p.k_ss, rows, kD / 8,
                                          tid);
    fused_load_tile<T, kBN, kD, kThreads>(kv + kTile, vg + (int64_t)nb * kBN * p.v_ss, p.v_ss, rows,
                                          kD / 8, tid);
  }
  fused_cp_async_commit();

  float o[kOR], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < kOR; ++i) o[i] = 0.f;
  const float c = p.scale_log2;

  for (; nb >= 0; --nb) {
    fused_cp_async_wait<0>();
    wg_fence_smem();
    __syncthreads();  // tile nb landed; both warpgroups are done with tile nb + 1
    const uint32_t kv = aKV + (uint32_t)(nb & 1) * kPair;
    const int n0 = nb * kBN;
    if (nb > 0) {  // tile nb - 1 (whole) into the other buffer pair
      const uint32_t kv2 = aKV + (uint32_t)((nb - 1) & 1) * kPair;
      fused_load_tile_full<T, kBN, kD, kThreads>(kv2, kg + (int64_t)(n0 - kBN) * p.k_ss, p.k_ss,
                                                 tid);
      fused_load_tile_full<T, kBN, kD, kThreads>(kv2 + kTile, vg + (int64_t)(n0 - kBN) * p.v_ss,
                                                 p.v_ss, tid);
      fused_cp_async_commit();
    }

    // S = Q K^T. Step kk covers D columns 16kk..16kk+15: column block kk / 4
    // of the swizzled tiles, 32 bytes into its 128-byte rows per step.
    float s[kSR];
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      const uint32_t off = (uint32_t)((kk % 4) * 32);
      const uint64_t da =
          wg_desc(aQ + (uint32_t)((kk / 4) * kBM * 128 + wg * 64 * 128) + off, 16, 1024);
      const uint64_t db = wg_desc(kv + (uint32_t)((kk / 4) * kBN * 128) + off, 16, 1024);
      wgmma_op<T, kBN>::ss(s, da, db, kk > 0);
    }
    wg_commit();
    wg_wait_all();
    wg_hold(s);

    if (n0 + kBN > p.sk || (p.causal && n0 + kBN - 1 > m0 + p.causal_off))
      wg_mask(s, p, m0 + wrow + g, n0, t4);
    uint32_t pa[kSR / 8][4];
    float alpha[2];
    wg_softmax<T>(s, m, l, pa, alpha, c);
    wg_rescale(o, alpha);

    // O += P V. Step kk covers keys 16kk..16kk+15: 16 rows of 128 bytes.
    wg_hold(o);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
      wgmma_op<T, kD>::rs(o, pa[kk],
                          wg_desc(kv + kTile + (uint32_t)(kk * 16 * 128), kBN * 128, 1024));
    wg_commit();
    wg_wait_all();
    wg_hold(o);
  }

  // Epilogue: l over the quad, O / l, lse; O staged in this warp's own Q
  // rows (its warpgroup's products are done with them), then 16-byte stores.
  // (Output pointers are formed here, not kept live through the loop.)
  T *og = (T *)p.o + b * p.o_sb + h * p.o_sh + (int64_t)m0 * p.o_ss;
  float *lse = p.lse ? p.lse + ((int64_t)b * p.hq + h) * p.sq + m0 : nullptr;
  wg_stage_out<T, kBM, kD>(sQ, o, m, l, wrow + g, t4, c, lse, rows_q);
  __syncwarp();
#pragma unroll
  for (int it = 0; it < 16 * (kD / 8) / 32; ++it) {
    const int i = lane + 32 * it, r = wrow + i / (kD / 8), ch = i % (kD / 8);
    if (r < rows_q)
      *(uint4 *)(og + (int64_t)r * p.o_ss + ch * 8) =
          *(const uint4 *)(sQ + fused_swz<kBM, kD>(r, ch));
  }
#else
  __trap();  // built for sm_90a only; flash_cuda.cu never launches it elsewhere
#endif
}

// static: one copy per translation unit (see fused_launch).
template <typename T, int kD>
static attn_status wgmma_launch(const attn_fused_params &p, cudaStream_t stream) {
  using C = wgmma_cfg<kD>;
  void (*kernel)(const attn_fused_params) = flash_fwd_wgmma_kernel<T, kD>;
  attn_status st = attn_launch_smem_limit(p.ctx, (const void *)kernel, C::kSmem);
  if (st) return st;
  const dim3 grid((unsigned)((p.sq + C::kBM - 1) / C::kBM), (unsigned)p.hq, (unsigned)p.b);
  kernel<<<grid, C::kThreads, C::kSmem, stream>>>(p);
  ATTN_CUDA_CHECK_LAUNCH("flash_fwd_wgmma_kernel");
  return ATTN_STATUS_OK;
}

template <typename T, int kD>
attn_status wgmma_run(const attn_fused_params &p, cudaStream_t stream) {
  return wgmma_launch<T, kD>(p, stream);
}

#endif
