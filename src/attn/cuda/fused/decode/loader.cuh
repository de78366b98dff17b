// The decode kernels' K/V loaders, on decode/seq.cuh's key addressing
// (decode_kv_at: batch, packed row or page): the split kernel's ring of
// 64-key blocks with its block-table prefetch, and the cluster kernel's
// whole-chunk copies (16-byte cp.async, zero-filled past the keys, or one
// bulk copy a key row on per-warp mbarriers).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LOADER_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LOADER_CUH

#include "attn/cuda/fused/decode/seq.cuh"
#include "attn/cuda/fused/ws_sync.cuh"

#define DECODE_BK 64        // keys a step of the split kernel
#define DECODE_THREADS 128  // the split kernel's threads

// The split kernel's K/V ring: kStages buffers of a 64-key block of K then
// V, each fused_swz<DECODE_BK, kD>, and two slots of 64 key rows' addresses
// (LOOKUP: (batch or page, row) pairs; OFFSETS: element offsets) filled one
// step before the copies need them, from block-table entries read one step
// before that into registers (next_tb, next_row), so that no warp waits on
// a table load inside a step and each key row is looked up once per CTA.
// LINEAR walks fixed strides from one base per thread (no lookup, no 64-bit
// multiply per chunk). Thread tid copies chunk tid % kChunks of rows
// tid / kChunks + kPass * i (LINEAR, OFFSETS), or every kThreads-th chunk.
// The parameters come with each call, not as a member: a held reference
// changed the generated copy loops.
template <typename T, int kD, int kStages, int kPath>
struct decode_ring {
  static constexpr int kChunks = kD / 8, kTile = DECODE_BK * kD;
  static constexpr int kPass = DECODE_THREADS / kChunks;  // rows one pass of the threads covers
  T *ring;                                                // [kStages][2][kTile]
  int *rows;                                              // [2][DECODE_BK][2] (batch or page, row)
  int64_t *offs;  // [2][DECODE_BK], the same bytes (OFFSETS)
  const T *kgp, *vgp, *klin, *vlin;
  int b, hk, tid, lr0, lch, k_begin, k_stop, nblocks, next_tb, next_row;
  int64_t head_off;

  __device__ __forceinline__ decode_ring(const attn_decode_params &p, T *ring_, int b_, int hk_,
                                         int k_begin_, int k_stop_, int nblocks_)
      : ring(ring_),
        rows((int *)(ring_ + kStages * 2 * kTile)),
        offs((int64_t *)rows),
        kgp((const T *)p.k),
        vgp((const T *)p.v),
        b(b_),
        hk(hk_),
        tid(threadIdx.x),
        lr0((int)threadIdx.x / kChunks),
        lch((int)threadIdx.x % kChunks),
        k_begin(k_begin_),
        k_stop(k_stop_),
        nblocks(nblocks_),
        head_off((int64_t)hk_ * p.k_sh) {
    // unpaged K/V: key j's row is row0 + j of the sequence's base
    const int64_t kv_row0 = p.kv_kind == DECODE_KV_PACKED ? p.kv_off[b] : 0;
    const int64_t kv_tb = p.kv_kind == DECODE_KV_PACKED ? 0 : b;
    klin = kgp + kv_tb * p.k_sb + hk * p.k_sh + (kv_row0 + k_begin + lr0) * p.k_ss + lch * 8;
    vlin = vgp + kv_tb * p.v_sb + hk * p.v_sh + (kv_row0 + k_begin + lr0) * p.v_ss + lch * 8;
  }

  __device__ __forceinline__ T *tile(int blk) const { return ring + (blk % kStages) * 2 * kTile; }

  // Key tid of block blk as (batch or page, row); row -1: past the split
  // (zero-filled). Thread tid < 64 reads one block table entry.
  __device__ __forceinline__ void entry_of(const attn_decode_params &p, int blk, int *tb,
                                           int *row) const {
    const int j = k_begin + blk * DECODE_BK + tid;
    int64_t t = 0;
    *row = -1;
    if (tid < DECODE_BK && blk < nblocks && j < k_stop) decode_kv_at(p, b, j, &t, row);
    *tb = (int)t;
  }

  // Block blk's addresses into slot blk % 2, then block blk + 1's entry.
  __device__ __forceinline__ void block_offsets(const attn_decode_params &p, int blk) {
    if (kPath == DECODE_PATH_LINEAR) return;  // LINEAR addresses rows itself: no slots to fill
    if (tid < DECODE_BK && blk < nblocks) {
      if (kPath == DECODE_PATH_OFFSETS) {
        offs[(blk & 1) * DECODE_BK + tid] =
            next_row < 0 ? -1 : (int64_t)next_tb * p.k_sb + (int64_t)next_row * p.k_ss + head_off;
      } else {
        int *o = rows + ((blk & 1) * DECODE_BK + tid) * 2;
        o[0] = next_tb, o[1] = next_row;
      }
    }
    entry_of(p, blk + 1, &next_tb, &next_row);
  }

  // Block blk's K and V rows by fixed strides from klin, vlin (LINEAR).
  __device__ __forceinline__ void load_linear(const attn_decode_params &p, int blk) const {
    const int left = k_stop - (k_begin + blk * DECODE_BK) - lr0;  // rows r < left are keys
    T *ks = ring + (blk % kStages) * 2 * kTile, *vs = ks + kTile;
    const T *kb = klin + (int64_t)blk * DECODE_BK * p.k_ss;
    const T *vb = vlin + (int64_t)blk * DECODE_BK * p.v_ss;
#pragma unroll
    for (int i = 0; i < DECODE_BK / kPass; i++) {
      const bool ok = i * kPass < left;
      const int at = fused_swz<DECODE_BK, kD>(lr0 + i * kPass, lch);
      fused_cp_async16(fused_smem_addr(ks + at), ok ? kb + (int64_t)i * kPass * p.k_ss : kgp,
                       ok ? 16 : 0);
      fused_cp_async16(fused_smem_addr(vs + at), ok ? vb + (int64_t)i * kPass * p.v_ss : vgp,
                       ok ? 16 : 0);
    }
  }

  // Block blk's rows from the slot's element offsets (OFFSETS).
  __device__ __forceinline__ void load_offsets(const attn_decode_params &p, int blk) const {
    T *ks = tile(blk), *vs = ks + kTile;
    const int64_t *o = offs + (blk & 1) * DECODE_BK;
#pragma unroll
    for (int i = 0; i < DECODE_BK / kPass; i++) {
      const int r = lr0 + i * kPass;
      const int64_t off = o[r];
      const bool ok = off >= 0;
      const int at = fused_swz<DECODE_BK, kD>(r, lch);
      fused_cp_async16(fused_smem_addr(ks + at), ok ? kgp + off + lch * 8 : kgp, ok ? 16 : 0);
      fused_cp_async16(fused_smem_addr(vs + at), ok ? vgp + off + lch * 8 : vgp, ok ? 16 : 0);
    }
  }

  // Block blk's chunks from the slot's (batch or page, row) pairs (LOOKUP).
  __device__ __forceinline__ void load_lookup(const attn_decode_params &p, int blk) const {
    T *ks = tile(blk), *vs = ks + kTile;
    const int *o = rows + (blk & 1) * DECODE_BK * 2;
    for (int c = tid; c < DECODE_BK * kChunks; c += DECODE_THREADS) {
      const int r = c / kChunks, ch = c % kChunks;
      const int64_t tb = o[2 * r];
      const int row = o[2 * r + 1];
      const int64_t ko = tb * p.k_sb + hk * p.k_sh + (int64_t)row * p.k_ss + ch * 8;
      const int64_t vo = tb * p.v_sb + hk * p.v_sh + (int64_t)row * p.v_ss + ch * 8;
      const bool ok = row >= 0;
      const int at = fused_swz<DECODE_BK, kD>(r, ch);
      fused_cp_async16(fused_smem_addr(ks + at), ok ? kgp + ko : kgp, ok ? 16 : 0);
      fused_cp_async16(fused_smem_addr(vs + at), ok ? vgp + vo : vgp, ok ? 16 : 0);
    }
  }

  // Issues block blk's copies (its addresses visible after a barrier), one
  // commit group; empty groups past the blocks keep the count uniform.
  __device__ __forceinline__ void load(const attn_decode_params &p, int blk) const {
    if (blk < nblocks) {
      if (kPath == DECODE_PATH_LINEAR) load_linear(p, blk);
      else if (kPath == DECODE_PATH_OFFSETS) load_offsets(p, blk);
      else load_lookup(p, blk);
    }
    fused_cp_async_commit();
  }

  // The first kStages - 1 blocks in flight and block kStages - 1's addresses
  // stored (used in step 0, after its barrier).
  __device__ __forceinline__ void prologue(const attn_decode_params &p) {
    entry_of(p, 0, &next_tb, &next_row);
    for (int s = 0; s < kStages - 1; s++) {
      block_offsets(p, s);
      __syncthreads();
      load(p, s);
    }
    block_offsets(p, kStages - 1);
  }
};

// The cluster kernel's CTA: 8 warps, up to DECODE_CLUSTER_KEYS(kD) keys.
#define DECODE_CL_WARPS 8
#define DECODE_CL_THREADS (DECODE_CL_WARPS * 32)

// A K/V row's stride in elements: kD swizzled (cp.async), kD + 8 with bulk
// copies, which write rows whole: the 16-byte pad puts the 8 rows of one
// ldmatrix phase in 8 different bank groups.
template <int kD, int kBulk>
__host__ __device__ constexpr int decode_cl_row(void) {
  return kBulk ? kD + 8 : kD;
}

// Element offset of chunk ch (8 elements) of key row r in the cluster
// kernel's K or V region: 16-row slices, each fused_swz<16, kD>, or padded rows.
template <int kD, int kBulk>
FUSED_DEV int decode_cl_at(int r, int ch) {
  return kBulk ? r * decode_cl_row<kD, kBulk>() + ch * 8
               : (r / 16) * 16 * kD + fused_swz<16, kD>(r % 16, ch);
}

// Rows [0, n) of this CTA's keys, K (kV 0) or V (kV 1), by cp.async; rows
// [n, n16) zero-filled. Thread tid copies chunk tid % kChunks of rows
// tid / kChunks + kPass * i. Unpaged K/V: one base address per thread and a
// fixed stride per row; pages: each row's page from the table.
template <typename T, int kD, int kV>
FUSED_DEV void decode_cl_copy(const attn_decode_params &p, int b, int hk, int k_begin, int n,
                              int n16, T *dst) {
  constexpr int kChunks = kD / 8, kPass = DECODE_CL_THREADS / kChunks;
  constexpr int kIters = DECODE_CLUSTER_KEYS(kD) / kPass;
  const int lr0 = threadIdx.x / kChunks, ch = threadIdx.x % kChunks;
  const T *g = (const T *)(kV ? p.v : p.k);
  const int64_t sb = kV ? p.v_sb : p.k_sb, sh = kV ? p.v_sh : p.k_sh, ss = kV ? p.v_ss : p.k_ss;
  int64_t tb = 0;
  int row = 0;
  if (p.kv_kind != DECODE_KV_PAGED) {
    decode_kv_at(p, b, k_begin + lr0, &tb, &row);
    const T *src = g + tb * sb + hk * sh + (int64_t)row * ss + ch * 8;
    const int64_t step = (int64_t)kPass * ss;
#pragma unroll
    for (int i = 0; i < kIters; i++, src += step) {
      const int r = lr0 + i * kPass;
      if (r >= n16) break;
      T *at = dst + decode_cl_at<kD, 0>(r, ch);
      fused_cp_async16(fused_smem_addr(at), r < n ? src : g, r < n ? 16 : 0);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kIters; i++) {
    const int r = lr0 + i * kPass;
    if (r >= n16) break;
    if (r < n) decode_kv_at(p, b, k_begin + r, &tb, &row);
    const T *src = r < n ? g + tb * sb + hk * sh + (int64_t)row * ss + ch * 8 : g;
    T *at = dst + decode_cl_at<kD, 0>(r, ch);
    fused_cp_async16(fused_smem_addr(at), src, r < n ? 16 : 0);
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// One row of `bytes` from global src to shared dst (this CTA), completing
// on the mbarrier bar: a single instruction where cp.async takes kD / 8.
FUSED_DEV void decode_bulk_row(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// Bulk copies: each warp loads its own slices (warp + 8 i), K completing on
// mbarrier bar and V on bar + 8, so it waits on no other warp's rows. The
// warp's K rows go out first, a lane a row, then its V rows; rows [n, n16)
// are zeroed by plain stores. Lane 0 sets the barriers up, expecting the
// warp's bytes, before any copy is issued.
template <typename T, int kD>
FUSED_DEV void decode_cl_bulk(const attn_decode_params &p, int b, int hk, int k_begin, int n,
                              int n16, T *ks, T *vs, uint32_t bar, int warp, int lane) {
  constexpr int kSl = DECODE_CLUSTER_KEYS(kD) / 16 / DECODE_CL_WARPS;
  if (lane == 0) {
    int rows = 0;
#pragma unroll
    for (int i = 0; i < kSl; i++) rows += min(max(n - (warp + DECODE_CL_WARPS * i) * 16, 0), 16);
    ws_bar_init(bar, 1);
    ws_bar_init(bar + 8, 1);
    ws_bar_init_fence();
    ws_bar_expect(bar, (uint32_t)rows * kD * 2);
    ws_bar_expect(bar + 8, (uint32_t)rows * kD * 2);
  }
  __syncwarp();
#pragma unroll
  for (int j = lane; j < 2 * kSl * 16; j += 32) {
    const int kv = j / (kSl * 16), i = j % (kSl * 16) / 16;
    const T *g = (const T *)(kv ? p.v : p.k);
    const int64_t sb = kv ? p.v_sb : p.k_sb, sh = kv ? p.v_sh : p.k_sh;
    const int64_t ss = kv ? p.v_ss : p.k_ss;
    const int r = (warp + DECODE_CL_WARPS * i) * 16 + j % 16;
    T *at = (kv ? vs : ks) + decode_cl_at<kD, 1>(r, 0);
    if (r < n) {
      int64_t tb;
      int row;
      decode_kv_at(p, b, k_begin + r, &tb, &row);
      decode_bulk_row(fused_smem_addr(at), g + tb * sb + hk * sh + (int64_t)row * ss, kD * 2,
                      bar + 8 * kv);
    } else if (r < n16) {
#pragma unroll
      for (int c = 0; c < kD / 8; c++) *(uint4 *)(at + c * 8) = make_uint4(0, 0, 0, 0);
    }
  }
}
#endif

#endif
