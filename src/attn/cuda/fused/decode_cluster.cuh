// Split-KV decode for small grids in ONE kernel (sm_90): the splits of one
// (sequence, KV head) form a thread-block cluster and merge their partial
// outputs through distributed shared memory, so no combine kernel runs and
// no partial goes through global memory (issue 13: at B=1 KV=2k the combine
// and its launch were 2.3 of 8.6 us).
//
// Work split. Grid (C, Hkv, B), cluster (C, 1, 1), C = p.splits in 2..16.
// CTA c owns keys [c * chunk, (c + 1) * chunk) of its sequence (chunk =
// p.cl_chunk, a multiple of 16, at most DECODE_CLUSTER_KEYS(kD)) and all R =
// G * nq <= 16 query rows of its KV head (one m16 row atom; row r = t * G +
// g as in decode_kernel.cuh). 8 warps; warp w owns the 16-key slices w, w +
// 8, ... of the chunk for S = Q K^T, its softmax and (by keys, the default)
// P V, or (column split, ATTNPROF_DECODE_CL_COLS=1) columns [w * kD / 8,
// +kD / 8) of P V over all the chunk's keys.
// Loads: all of a CTA's bytes in flight at once, so its chain pays one
// round trip, and S = Q K^T runs while V lands. kBulk = 0: Q, every K row
// and every V row in three cp.async groups of 16-byte copies (four with
// p.cl_vhalf: V's halves; run 18, slower, off); kBulk = 1: Q
// by cp.async, each warp's own K and V rows by one bulk copy a row on its two
// mbarriers (decode_cl_bulk), rows padded instead of swizzled. Contiguous K/V (DENSE,
// CACHE) are addressed without the sequence's length: rows up to the cache's
// capacity go out before kv_len arrives, and V rows past the keys are zeroed
// once they land (a garbage V row times p = 0 could be NaN).
// Softmax: a warp holds all its scores in registers, so it is one pass.
// P V, column split (p.cl_cols = 1; run 17: slower, see below): each warp publishes its exp'd scores
// (bf16 A fragments) and its rows' max and sum in its own slices' K rows,
// one CTA barrier (the one V's arrival needs anyway with cp.async), then
// each warp takes every warp's P, rescaled to the CTA's row max, times its
// kD / 8 columns of V, and writes those columns of the CTA's normalized
// partial P [16 x kD] fp32 (and warp 0 the lse, log2): no merge between
// warps, whose 8 partial O through shared memory cost 0.74 us at 2k (run
// 15). By keys (p.cl_cols = 0, the default): each warp P V over its own
// slices, all columns, then the 8 warps merge through shared memory into P
// and lse (4 columns of a row a thread, decode_merge_groups4; by element,
// decode_merge_groups, under ATTNPROF_DECODE_FIX=3). Then a cluster barrier; CTA c merges columns [c * kD / C, (c + 1) * kD / C) of every row
// from all C CTAs' P and lse (ld.shared::cluster: C adjacent threads, one
// remote lse and float4 each, merged by shuffles) and writes out and lse; a
// last cluster barrier (relaxed) keeps each CTA's shared memory alive until
// its peers have read it.
// Shared memory (sized by the chunk): Q [16 x kD], then K and V [chunk x kD]
// as 16-row slices each XOR-swizzled (fused_swz<16, kD>), 16-bit, or with
// bulk copies [chunk x (kD + 8)]; after S the column split's P, m and l
// reuse a warp's own K slices (1 KB of each 2-8 KB), after P V by keys the
// warps' merge slab reuses the region; P [16 x (kD + 8)] and lse apart
// (peers read them); the mbarriers last.
// Measured (H200, bf16, D128, GQA 32/8, one new token, graph-timed; NOTES.md run
// 13-14): B=1 KV=2k 7.4 us per call at C=8 with cp.async against 8.2 with
// bulk copies and 8.7 for split + combine (cuDNN via PyTorch 7.4), KV=1k 6.3
// against 6.9 and 8.0 (6.7); paged p16 with bulk copies 8.5 against 12.6 with
// cp.async and 9.4 for split + combine at 2k, 7.3 / 9.1 / 8.4 at 1k: the plan
// gives pages bulk copies and unpaged K/V cp.async (decode_cuda.cu). Run 15
// (one remote load a thread, relaxed end): 7.0-7.3 us at 2k, 6.2-6.3 at 1k;
// of the 7.2 us, K/V land 3.1 us in (the floor of this row pattern), then
// P V 0.6, the warps' merge 0.7, the cluster barrier 0.45 and the cross-CTA
// merge 1.1 (bench/serving/decode_stamps.cu). Run 17: the column split
// took the warps' merge from ~1,480 to ~420-630 cycles but made P V 2.5x as
// long (2k: 3,151 cycles after V against 1,271; each slice a branch of its
// own, so every slice waited out its P load and ldmatrix), 8.0-8.3 us
// against 7.4 (same session), 1k 7.0 against 6.4-6.5. Run 20: the warps'
// merge by 4 columns, 1,529 -> 992 cycles, B=1 KV=2k 7.56 -> 7.09 us (table:
// 7.2 against cuDNN's 7.3), KV=1k 6.52 -> 6.08; the column split without
// branches inside a group of 8 slices, P V 2,105 cycles after V, 7.71 us.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_CLUSTER_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_CLUSTER_CUH

#include "attn/cuda/fused/decode_kernel.cuh"
#include "attn/cuda/fused/ws_sync.cuh"

#define DECODE_CL_WARPS 8
#define DECODE_CL_THREADS (DECODE_CL_WARPS * 32)

// A K/V row's stride in elements: kD swizzled (cp.async), kD + 8 with bulk
// copies, which write rows whole: the 16-byte pad puts the 8 rows of one
// ldmatrix phase in 8 different bank groups.
template <int kD, int kBulk>
__host__ __device__ constexpr int decode_cl_row(void) {
  return kBulk ? kD + 8 : kD;
}
// The K/V region of a CTA of `chunk` keys, which the warps' merge slab reuses.
template <int kD, int kBulk>
__host__ __device__ constexpr int decode_cl_region_bytes(int chunk) {
  return 2 * chunk * decode_cl_row<kD, kBulk>() * 2 >
                 (DECODE_CL_WARPS * 16 * (kD + 8) + 2 * DECODE_CL_WARPS * 16) * 4
             ? 2 * chunk * decode_cl_row<kD, kBulk>() * 2
             : (DECODE_CL_WARPS * 16 * (kD + 8) + 2 * DECODE_CL_WARPS * 16) * 4;
}
// A row of the CTA's partial P in floats: 8 more than kD, so that the 8 rows
// of one float2 store of the column split (decode_cl_cols_put) fall in
// different banks.
#define DECODE_CL_PART(kD) ((kD) + 8)
// Q, the region, P, the 16 rows' lse and two mbarriers a warp (bulk copies).
// Sized by the chunk, so that where it allows two CTAs an SM the device can
// place 16-CTA clusters (run 13, call 1: at 143 KB, one CTA an SM, an H200
// ran fewer than 8 clusters of 16).
template <int kD, int kBulk>
__host__ __device__ constexpr int decode_cl_smem_bytes(int chunk) {
  return 16 * kD * 2 + decode_cl_region_bytes<kD, kBulk>(chunk) + 16 * DECODE_CL_PART(kD) * 4 +
         16 * 4 +
         2 * DECODE_CL_WARPS * 8;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Shared address a of this CTA, as the same offset in CTA rank's window.
FUSED_DEV uint32_t decode_cluster_map(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
FUSED_DEV float decode_cluster_ld(uint32_t a) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
  return v;
}
FUSED_DEV float4 decode_cluster_ld4(uint32_t a) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(a)
               : "memory");
  return v;
}

// Element offset of chunk ch (8 elements) of key row r in the K or V region.
template <int kD, int kBulk>
FUSED_DEV int decode_cl_at(int r, int ch) {
  return kBulk ? r * decode_cl_row<kD, kBulk>() + ch * 8
               : (r / 16) * 16 * kD + fused_swz<16, kD>(r % 16, ch);
}

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
// warp's K rows go out first, a lane a row, then its V rows (run 14: no
// faster than K and V of a slice side by side, 8.2 against 8.1 us at B=1
// KV=2k, 7.3 against 6.9 paged at 1k; this order is the one tested on the
// device); rows [n, n16) are zeroed by plain stores. Lane 0 sets the barriers up,
// expecting the warp's bytes, before any copy is issued.
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

// Rows [0, n) of this CTA's keys, K (kV 0) or V (kV 1), by cp.async; rows
// [n, n16) zero-filled. Thread tid copies chunk tid % kChunks of rows
// tid / kChunks + kPass * i. Unpaged K/V: one base address per thread and a
// fixed stride per row (run 13, call 1: a lookup and two 64-bit multiplies
// per 16-byte copy, ~50 instructions each, on 32 copies a thread); pages:
// each row's page from the table.
// Rows from lo (a multiple of kPass) to hi only: V's halves (p.cl_vhalf).
template <typename T, int kD, int kV>
FUSED_DEV void decode_cl_copy(const attn_decode_params &p, int b, int hk, int k_begin, int n,
                              int n16, T *dst, int lo = 0, int hi = 1 << 30) {
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
      if (r >= n16 || r >= hi) break;
      if (r < lo) continue;
      T *at = dst + decode_cl_at<kD, 0>(r, ch);
      fused_cp_async16(fused_smem_addr(at), r < n ? src : g, r < n ? 16 : 0);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kIters; i++) {
    const int r = lr0 + i * kPass;
    if (r >= n16 || r >= hi) break;
    if (r < lo) continue;
    if (r < n) decode_kv_at(p, b, k_begin + r, &tb, &row);
    const T *src = r < n ? g + tb * sb + hk * sh + (int64_t)row * ss + ch * 8 : g;
    T *at = dst + decode_cl_at<kD, 0>(r, ch);
    fused_cp_async16(fused_smem_addr(at), src, r < n ? 16 : 0);
  }
}
#endif

// A warp's one-pass softmax over its kSl slices of scores s (m16n8 C
// fragments, rows g4 and g4 + 8 as hh = 0, 1), each row's max so far in m:
// m across the row's 4 lanes, base (0 for a row that saw no key), s =
// 2^(s - base), and their sum added to l (this lane's part).
template <int kSl>
FUSED_DEV void decode_cl_exp(float (&s)[kSl][2][4], float (&m)[2], float (&l)[2],
                             float (&base)[2]) {
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    m[hh] = fmaxf(m[hh], __shfl_xor_sync(0xffffffffu, m[hh], 1));
    m[hh] = fmaxf(m[hh], __shfl_xor_sync(0xffffffffu, m[hh], 2));
    base[hh] = m[hh] == -INFINITY ? 0.f : m[hh];
  }
#pragma unroll
  for (int i = 0; i < kSl; i++)
#pragma unroll
    for (int e = 0; e < 8; e++) {
      const int hh = (e % 4) >> 1;
      s[i][e / 4][e % 4] = fused_exp2(s[i][e / 4][e % 4] - base[hh]);
      l[hh] += s[i][e / 4][e % 4];
    }
}

// A row's sum l across its 4 lanes (both rows of a lane's fragment).
FUSED_DEV void decode_cl_quad_sum(float (&l)[2]) {
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], 1);
    l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], 2);
  }
}

// o = P V over a warp's slices (P = its exp'd scores s, as mma A fragments):
// slice i is key slice slice(i) (16 keys; skipped from nsl on), whose V
// chunk ch (8 columns) of key row r sits at shared address vaddr(r, ch)
// (ldmatrix.trans); then l summed across each row's 4 lanes (decode_cl_pv).
// decode_cl_pv_add: o += the slices i in [lo, hi) only, no zeroing, l untouched.
template <typename T, int kD, int kSl, typename Slice, typename Vaddr>
FUSED_DEV void decode_cl_pv_add(const float (&s)[kSl][2][4], float (&o)[kD / 8][4], int lane,
                                Slice slice, int nsl, Vaddr vaddr, int lo, int hi) {
  const int mi = lane / 8, r8 = lane % 8;
#pragma unroll
  for (int i = 0; i < kSl; i++) {
    if (i < lo || i >= hi) continue;
    const int sl = slice(i);
    if (sl >= nsl) continue;
    const uint32_t a[4] = {
        fused_pack2<T>(s[i][0][0], s[i][0][1]), fused_pack2<T>(s[i][0][2], s[i][0][3]),
        fused_pack2<T>(s[i][1][0], s[i][1][1]), fused_pack2<T>(s[i][1][2], s[i][1][3])};
#pragma unroll
    for (int dn = 0; dn < kD / 16; dn++) {
      uint32_t bf[4];
      fused_ldmatrix_x4_trans(bf, vaddr(sl * 16 + (mi % 2) * 8 + r8, dn * 2 + mi / 2));
      fused_mma<T>(o[2 * dn], a, bf[0], bf[1]);
      fused_mma<T>(o[2 * dn + 1], a, bf[2], bf[3]);
    }
  }
}
template <typename T, int kD, int kSl, typename Slice, typename Vaddr>
FUSED_DEV void decode_cl_pv(const float (&s)[kSl][2][4], float (&l)[2], float (&o)[kD / 8][4],
                            int lane, Slice slice, int nsl, Vaddr vaddr) {
#pragma unroll
  for (int i = 0; i < kD / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  decode_cl_pv_add<T, kD, kSl>(s, o, lane, slice, nsl, vaddr, 0, kSl);
  decode_cl_quad_sum(l);
}

// The column split (p.cl_cols), step 1: a warp publishes what the others
// need of its keys, in the K rows of its own slices (only it reads them, and
// it has): at slot(sl) (slice sl's K rows) its P as mma A fragments, 16 bytes
// a lane (the reader lane takes the same lane's: no shuffles, no bank
// conflicts), and after them, in its first slice, each lane's (m, m, l, l)
// of its two rows, l summed across the row's lanes first.
template <typename T, int kSl, typename Slot>
FUSED_DEV void decode_cl_publish(const float (&s)[kSl][2][4], const float (&m)[2], float (&l)[2],
                                 int warp, int lane, int nsl, Slot slot) {
  decode_cl_quad_sum(l);
  __syncwarp(); // every lane's ldmatrix of these K rows is done
#pragma unroll
  for (int i = 0; i < kSl; i++) {
    const int sl = warp + DECODE_CL_WARPS * i;
    if (sl < nsl)
      slot(sl)[lane] = make_uint4(
          fused_pack2<T>(s[i][0][0], s[i][0][1]), fused_pack2<T>(s[i][0][2], s[i][0][3]),
          fused_pack2<T>(s[i][1][0], s[i][1][1]), fused_pack2<T>(s[i][1][2], s[i][1][3]));
  }
  if (warp < nsl) ((float4 *)slot(warp))[32 + lane] = make_float4(m[0], m[1], l[0], l[1]);
}

// Step 2, after one CTA barrier: this warp's kD / 8 columns (n-tiles warp *
// kN ..) of the CTA's O over all nsl slices: the slices of publishing warp
// w into t[w], then o = sum_w 2^(m_w - M) t[w] with M the CTA's row max; L
// the CTA's row sum. Same mma count as decode_cl_pv (all slices x kN tiles
// against the warp's slices x kD / 8), and no merge between warps after.
// One accumulator set per publishing warp, so that the mma chains are as
// short as decode_cl_pv's (run 17, call 1: one set rescaled after each
// warp's slices made P V 2.1x as long at 1k, 1,735 cycles against 816).
template <typename T, int kD, int kSl, typename Slot, typename Vaddr>
FUSED_DEV void decode_cl_cols(float (&o)[kD / 64][4], float (&M)[2], float (&L)[2], int nsl,
                              int warp, int lane, Slot slot, Vaddr vaddr) {
  constexpr int kN = kD / 64; // 8-column n-tiles a warp
  const int mi = lane / 8, r8 = lane % 8;
  float t[DECODE_CL_WARPS][kN][4];
#pragma unroll
  for (int w = 0; w < DECODE_CL_WARPS; w++)
#pragma unroll
    for (int n = 0; n < kN; n++) t[w][n][0] = t[w][n][1] = t[w][n][2] = t[w][n][3] = 0.f;
#pragma unroll
  for (int i = 0; i < kSl; i++) {
    if (DECODE_CL_WARPS * i >= nsl) break; // uniform, once per 8 slices
#pragma unroll
    for (int w = 0; w < DECODE_CL_WARPS; w++) {
      // No branch inside a group of 8 slices, so that their P loads and
      // ldmatrix issue ahead of the mma (run 17, call 2: a branch a slice
      // made each slice wait out both; P V 3,151 cycles at 2k against the
      // by-keys form's 1,271). A slice past nsl takes the last slice's V
      // (finite: zeroed past the keys) times P = 0.
      const int sl = w + DECODE_CL_WARPS * i, slc = min(sl, nsl - 1);
      uint4 pa = slot(slc)[lane];
      if (sl >= nsl) pa = make_uint4(0u, 0u, 0u, 0u);
      const uint32_t a[4] = {pa.x, pa.y, pa.z, pa.w};
#pragma unroll
      for (int dn = 0; dn < (kN + 1) / 2; dn++) { // one x4 load: two n-tiles (kN = 1: one, twice)
        uint32_t bf[4];
        const int ch = warp * kN + (kN == 1 ? 0 : 2 * dn + mi / 2);
        fused_ldmatrix_x4_trans(bf, vaddr(slc * 16 + (mi % 2) * 8 + r8, ch));
        fused_mma<T>(t[w][2 * dn], a, bf[0], bf[1]);
        if constexpr (kN > 1) fused_mma<T>(t[w][2 * dn + 1], a, bf[2], bf[3]);
      }
    }
  }
  float4 ml[DECODE_CL_WARPS];
  M[0] = M[1] = -INFINITY, L[0] = L[1] = 0.f;
#pragma unroll
  for (int w = 0; w < DECODE_CL_WARPS; w++) {
    ml[w] = w < nsl ? ((const float4 *)slot(w))[32 + lane]
                    : make_float4(-INFINITY, -INFINITY, 0.f, 0.f);
    M[0] = fmaxf(M[0], ml[w].x), M[1] = fmaxf(M[1], ml[w].y);
  }
#pragma unroll
  for (int n = 0; n < kN; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
#pragma unroll
  for (int w = 0; w < DECODE_CL_WARPS; w++) {
    const float f0 = ml[w].x == -INFINITY ? 0.f : fused_exp2(ml[w].x - M[0]);
    const float f1 = ml[w].y == -INFINITY ? 0.f : fused_exp2(ml[w].y - M[1]);
    L[0] += f0 * ml[w].z, L[1] += f1 * ml[w].w;
#pragma unroll
    for (int n = 0; n < kN; n++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[n][e] += (e < 2 ? f0 : f1) * t[w][n][e];
  }
}

// Step 3: the warp's columns of rows < R, normalized, into the CTA's partial
// P (row stride kPR), and warp 0 the rows' lse (log2), which the cross-CTA
// merge reads as it read the warps' merge's.
template <int kD, int kPR>
FUSED_DEV void decode_cl_cols_put(const float (&o)[kD / 64][4], const float (&M)[2],
                                  const float (&L)[2], float *part, float *part_lse, int R,
                                  int warp, int lane) {
  constexpr int kN = kD / 64;
  const int g4 = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int r = g4 + 8 * hh;
    if (r >= R) continue;
    const bool any = L[hh] > 0.f;
    const float inv = any ? 1.f / L[hh] : 0.f; // one division a row, not one a value
#pragma unroll
    for (int n = 0; n < kN; n++)
      *(float2 *)(part + r * kPR + (warp * kN + n) * 8 + 2 * t4) =
          make_float2(o[n][2 * hh] * inv, o[n][2 * hh + 1] * inv);
    if (warp == 0 && t4 == 0) part_lse[r] = any ? M[hh] + log2f(L[hh]) : -INFINITY;
  }
}

// By keys, after P V: the 8 warps' O merged through shared memory (buf,
// the K/V region) into the CTA's partial P (row stride DECODE_CL_PART) and
// lse; by4 (ATTNPROF_DECODE_FIX bit 3, as in the split kernel): 4 columns a
// thread, the weights, 1 / L and lse once per 4 outputs, float4 loads and
// stores (at 4 rows x D128: one pass of 128 threads instead of two of 256;
// run 20: 992 cycles against 1,529 at B=1 KV=2k, NOTES.md).
template <int kD>
FUSED_DEV void decode_cl_merge_warps(float (&o)[kD / 8][4], const float (&m)[2],
                                     const float (&l)[2], float *buf, float *part,
                                     float *part_lse, int R, int warp, int lane, bool by4) {
  if (by4)
    decode_merge_groups4<kD, 16, DECODE_CL_WARPS, DECODE_CL_THREADS>(
        o, m, l, buf, 0, R, 0, warp, lane, [&](int r, int col, float4 val, float lse2) {
          *(float4 *)(part + r * DECODE_CL_PART(kD) + col) = val;
          if (col == 0) part_lse[r] = lse2;
        });
  else
    decode_merge_groups<kD, 16, DECODE_CL_WARPS, DECODE_CL_THREADS>(
        o, m, l, buf, 0, R, 0, warp, lane, [&](int r, int col, float val, float lse2) {
          part[r * DECODE_CL_PART(kD) + col] = val;
          if (col == 0) part_lse[r] = lse2;
        });
}

// Its phase stamps (DECODE_STAMP, bench only): start, copies issued, Q+K
// landed, softmax done, V landed, P V done, warps merged, cluster barrier
// passed, out written, end.
template <typename T, int kD, int kBulk>
__global__ void __launch_bounds__(DECODE_CL_THREADS, 1)
    decode_cluster_kernel(const attn_decode_params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kSl = DECODE_CLUSTER_KEYS(kD) / 16 / DECODE_CL_WARPS; // slices per warp, most
  constexpr int kChunks = kD / 8;
  extern __shared__ __align__(128) unsigned char decode_smem[];
  T *qs = (T *)decode_smem;
  constexpr int kRow = decode_cl_row<kD, kBulk>();
  T *ks = qs + 16 * kD, *vs = ks + p.cl_chunk * kRow;
  unsigned char *after = decode_smem + 16 * kD * 2 + decode_cl_region_bytes<kD, kBulk>(p.cl_chunk);
  constexpr int kPR = DECODE_CL_PART(kD);
  float *part = (float *)after, *part_lse = part + 16 * kPR; // [16][kPR], [16]
  // this warp's K and V mbarriers (bulk copies)
  const uint32_t bar = fused_smem_addr(part_lse + 16) + 16 * (threadIdx.x / 32);

  const int b = blockIdx.z, hk = blockIdx.y, C = p.splits;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // V in two groups (p.cl_vhalf): the rows of each warp's first kSl / 2
  // slices, then the rest (cp.async, by keys, at least two slices a warp).
  constexpr int kHalf = kSl / 2 * 16 * DECODE_CL_WARPS;
  const bool vh = !kBulk && kSl >= 2 && p.cl_vhalf && !p.cl_cols;
  DECODE_STAMP_BEGIN;
  decode_pdl_wait();
  const decode_seq sq = decode_seq_of(p, b);
  const int G = p.group, R = G * sq.nq;
  const int chunk = p.cl_chunk, k_begin = blockIdx.x * chunk;
  // One row group: its last token sees all keys. No rows (an empty query run): no keys.
  const int k_stop = R == 0 ? k_begin : max(k_begin, min(sq.nk, k_begin + chunk));
  const bool early = p.kv_kind == DECODE_KV_DENSE || p.kv_kind == DECODE_KV_CACHE;
  int n = R == 0 ? 0 : early ? min(chunk, p.sk - k_begin) : k_stop - k_begin;
  n = max(n, 0);
  const int n16 = (n + 15) / 16 * 16;

  decode_load_q<T, kD, 16, DECODE_CL_THREADS>(p, sq, hk, 0, R, qs);
  if constexpr (kBulk) {
    decode_cl_bulk<T, kD>(p, b, hk, k_begin, n, n16, ks, vs, bar, warp, lane);
  } else {
    decode_cl_copy<T, kD, 0>(p, b, hk, k_begin, n, n16, ks);
    fused_cp_async_commit();
    decode_cl_copy<T, kD, 1>(p, b, hk, k_begin, n, n16, vs, 0, vh ? kHalf : 1 << 30);
    fused_cp_async_commit();
    if (vh) { // V's second half: a group of its own, possibly empty
      decode_cl_copy<T, kD, 1>(p, b, hk, k_begin, n, n16, vs, kHalf);
      fused_cp_async_commit();
    }
  }
  DECODE_STAMP(1);

  const int keys = k_stop - k_begin, nsl = (keys + 15) / 16;
  const int g4 = lane / 4, t4 = lane % 4, mi = lane / 8, r8 = lane % 8;
  // V rows past the keys in the last slice, once they landed: zero (cp.async).
  auto zero_tail = [&]() {
    if constexpr (!kBulk) {
      if (n > keys && keys % 16) { // uniform
        for (int c = tid; c < (16 - keys % 16) * kChunks; c += DECODE_CL_THREADS) {
          const int r = keys + c / kChunks;
          if (r < n) *(uint4 *)(vs + decode_cl_at<kD, 0>(r, c % kChunks)) = make_uint4(0, 0, 0, 0);
        }
        __syncthreads();
      }
    }
  };
  int lim[2];
  for (int hh = 0; hh < 2; hh++)
    lim[hh] = p.causal ? (g4 + 8 * hh) / G + sq.nk - sq.nq : 0x7fffffff;

  if constexpr (kBulk) {
    fused_cp_async_wait<0>();
    __syncthreads(); // Q landed
    ws_bar_wait(bar, 0); // this warp's K rows landed
    __syncwarp();        // and its zeroed rows are written
  } else {
    if (vh)
      fused_cp_async_wait<2>();
    else
      fused_cp_async_wait<1>();
    __syncthreads(); // Q and K landed
  }
  DECODE_STAMP(2);
  float s[kSl][2][4];
#pragma unroll
  for (int i = 0; i < kSl; i++) {
#pragma unroll
    for (int e = 0; e < 8; e++) s[i][e / 4][e % 4] = 0.f;
    const int sl = warp + DECODE_CL_WARPS * i;
    if (sl >= nsl) continue;
#pragma unroll
    for (int kk = 0; kk < kD / 16; kk++) {
      uint32_t a[4], bf[4];
      const int qa = fused_swz<16, kD>((mi % 2) * 8 + r8, kk * 2 + mi / 2);
      const int ka = decode_cl_at<kD, kBulk>(sl * 16 + (mi / 2) * 8 + r8, kk * 2 + mi % 2);
      fused_ldmatrix_x4(a, fused_smem_addr(qs + qa));
      fused_ldmatrix_x4(bf, fused_smem_addr(ks + ka));
      fused_mma<T>(s[i][0], a, bf[0], bf[1]);
      fused_mma<T>(s[i][1], a, bf[2], bf[3]);
    }
  }
  // Mask (past the keys, causal bottom-right), then one-pass softmax.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < kSl; i++)
#pragma unroll
    for (int e = 0; e < 8; e++) {
      const int sl = warp + DECODE_CL_WARPS * i, hh = (e % 4) >> 1;
      const int j = k_begin + sl * 16 + (e / 4) * 8 + 2 * t4 + (e & 1);
      const bool vis = sl < nsl && j < k_stop && j <= lim[hh];
      s[i][e / 4][e % 4] = vis ? s[i][e / 4][e % 4] * p.scale_log2 : -INFINITY;
      m[hh] = fmaxf(m[hh], s[i][e / 4][e % 4]);
    }
  float base[2];
  decode_cl_exp<kSl>(s, m, l, base);
  // slice sl's K rows, where the column split publishes its P (and m, l)
  auto slot = [&](int sl) { return (uint4 *)(ks + decode_cl_at<kD, kBulk>(sl * 16, 0)); };
  if (p.cl_cols) decode_cl_publish<T, kSl>(s, m, l, warp, lane, nsl, slot);
  DECODE_STAMP(3);

  if constexpr (kBulk) {
    ws_bar_wait(bar + 8, 0); // this warp's V rows landed
    // V rows past the keys in this warp's last slice: zero (a lane a row)
#pragma unroll
    for (int i = 0; i < kSl; i++) {
      const int r = (warp + DECODE_CL_WARPS * i) * 16 + lane;
      if (lane < 16 && r >= keys && r < n && r < nsl * 16)
#pragma unroll
        for (int c = 0; c < kChunks; c++)
          *(uint4 *)(vs + decode_cl_at<kD, 1>(r, c)) = make_uint4(0, 0, 0, 0);
    }
    __syncwarp();
    if (p.cl_cols) __syncthreads(); // every warp's V rows, P, m and l in place
  } else {
    if (vh)
      fused_cp_async_wait<1>();
    else
      fused_cp_async_wait<0>();
    __syncthreads(); // V (its first half) landed (and, column split, every warp's P, m and l)
    if (!vh || keys < kHalf) zero_tail();
  }
  DECODE_STAMP(4);
  auto vaddr = [&](int r, int ch) { return fused_smem_addr(vs + decode_cl_at<kD, kBulk>(r, ch)); };
  auto mine = [&](int i) { return warp + DECODE_CL_WARPS * i; };
  if (vh) { // by keys: the first half's slices, then the second's once it lands
    float o[kD / 8][4];
#pragma unroll
    for (int i = 0; i < kD / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    decode_cl_pv_add<T, kD, kSl>(s, o, lane, mine, nsl, vaddr, 0, kSl / 2);
    fused_cp_async_wait<0>();
    __syncthreads(); // V's second half landed
    if (keys >= kHalf) zero_tail();
    decode_cl_pv_add<T, kD, kSl>(s, o, lane, mine, nsl, vaddr, kSl / 2, kSl);
    decode_cl_quad_sum(l);
    DECODE_STAMP(5);
    __syncthreads(); // K and V are read: the region becomes the warps' merge slab
    decode_cl_merge_warps<kD>(o, m, l, (float *)ks, part, part_lse, R, warp, lane, p.fix & 8);
  } else if (p.cl_cols) {
    float o[kD / 64][4], M[2], L[2];
    decode_cl_cols<T, kD, kSl>(o, M, L, nsl, warp, lane, slot, vaddr);
    DECODE_STAMP(5);
    decode_cl_cols_put<kD, kPR>(o, M, L, part, part_lse, R, warp, lane);
  } else { // run 15's (ATTNPROF_DECODE_CL_COLS=0): by keys, then the warps' merge
    float o[kD / 8][4];
    decode_cl_pv<T, kD, kSl>(s, l, o, lane, mine, nsl, vaddr);
    DECODE_STAMP(5);
    __syncthreads(); // K and V are read: the region becomes the warps' merge slab
    decode_cl_merge_warps<kD>(o, m, l, (float *)ks, part, part_lse, R, warp, lane, p.fix & 8);
  }
  DECODE_STAMP(6);
  ws_cluster_sync(); // every CTA's P and lse written
  DECODE_STAMP(7);

  // Columns [rank * cols, +cols) of every row, 4 a thread from one CTA: C
  // adjacent threads take the same 4 columns from the C CTAs (one remote
  // load each) and merge them by shuffles (run 15: 16 threads each loading
  // from all C in turn spent ~2,300 cycles here).
  const uint32_t rank = ws_cluster_rank();
  const int cols = kD / C, q4 = cols / 4, work = R * q4 * C;
  const uint32_t part_a = fused_smem_addr(part), lse_a = fused_smem_addr(part_lse);
  for (int i0 = 0; p.cl_wide && i0 < work; i0 += DECODE_CL_THREADS) { // uniform: shuffles
    const int idx = i0 + tid, item = idx / C, c = idx % C;
    const int r = item / q4, col = (int)rank * cols + (item % q4) * 4;
    const bool on = idx < work;
    const float ls = on ? decode_cluster_ld(decode_cluster_map(lse_a + r * 4, c)) : -INFINITY;
    const float4 x = on ? decode_cluster_ld4(decode_cluster_map(part_a + (r * kPR + col) * 4, c))
                        : make_float4(0.f, 0.f, 0.f, 0.f);
    float M = ls;
    for (int off = 1; off < C; off *= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
    const float w = ls == -INFINITY ? 0.f : fused_exp2(ls - M);
    float L = w, acc[4] = {w * x.x, w * x.y, w * x.z, w * x.w};
    for (int off = 1; off < C; off *= 2) {
      L += __shfl_xor_sync(0xffffffffu, L, off);
#pragma unroll
      for (int e = 0; e < 4; e++) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], off);
    }
#pragma unroll
    for (int e = 0; e < 4; e++) acc[e] = L > 0.f ? acc[e] / L : 0.f;
    if (on && c == 0) decode_out<T, 4>(p, sq, hk, r, col, acc, L > 0.f ? M + log2f(L) : -INFINITY);
  }
  if (!p.cl_wide) { // run 14's (A/B, ATTNPROF_DECODE_CL_WIDE=0): R x q4 threads, C loads each
    for (int idx = tid; idx < R * q4; idx += DECODE_CL_THREADS) {
      const int r = idx / q4, col = (int)rank * cols + (idx % q4) * 4;
      float ls[16];
      float4 x[16];
      float M = -INFINITY;
#pragma unroll
      for (int c = 0; c < 16; c++) {
        ls[c] = c < C ? decode_cluster_ld(decode_cluster_map(lse_a + r * 4, c)) : -INFINITY;
        x[c] = c < C ? decode_cluster_ld4(decode_cluster_map(part_a + (r * kPR + col) * 4, c))
                     : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int c = 0; c < 16; c++) M = fmaxf(M, ls[c]);
      float L = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int c = 0; c < 16; c++) {
        const float w = ls[c] == -INFINITY ? 0.f : fused_exp2(ls[c] - M);
        L += w, acc[0] += w * x[c].x, acc[1] += w * x[c].y;
        acc[2] += w * x[c].z, acc[3] += w * x[c].w;
      }
#pragma unroll
      for (int e = 0; e < 4; e++) acc[e] = L > 0.f ? acc[e] / L : 0.f;
      decode_out<T, 4>(p, sq, hk, r, col, acc, L > 0.f ? M + log2f(L) : -INFINITY);
    }
  }
  DECODE_STAMP(8);
  // No CTA's shared memory goes while a peer may read it. Relaxed (the
  // default; ATTNPROF_DECODE_CL_RELAX=0 for the release form): the peers'
  // loads above have returned (their values are used) before they arrive.
  if (p.cl_relax)
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n"
                 "barrier.cluster.wait.aligned;\n" ::: "memory");
  else
    ws_cluster_sync();
  DECODE_STAMP(9);
  DECODE_STAMP_END
#else
  __trap(); // built for sm_90 only; the plan never picks it elsewhere
#endif
}

// Raises the shared-memory limit, allows clusters of 16 (non-portable on
// sm_90) and asks for the largest carveout, once per device.
template <typename T, int kD, int kBulk>
attn_status decode_cluster_prepare(void) {
  static int done[64];
  int dev = 0;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  if (dev >= 0 && dev < 64 && done[dev]) return ATTN_STATUS_OK;
  const void *fn = (const void *)decode_cluster_kernel<T, kD, kBulk>;
  ATTN_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     decode_cl_smem_bytes<kD, kBulk>(DECODE_CLUSTER_KEYS(kD))));
  ATTN_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  ATTN_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
  if (dev >= 0 && dev < 64) done[dev] = 1;
  return ATTN_STATUS_OK;
}

// The launch configuration of clusters of c CTAs; attr holds its attributes.
static inline cudaLaunchConfig_t decode_cl_config(dim3 grid, int c, int smem, int pdl,
                                                  cudaStream_t stream, cudaLaunchAttribute *attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid, cfg.blockDim = dim3(DECODE_CL_THREADS), cfg.dynamicSmemBytes = (size_t)smem;
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = (unsigned)c;
  attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
  attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[1].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr, cfg.numAttrs = pdl ? 2 : 1;
  return cfg;
}

template <typename T, int kD, int kBulk>
attn_status decode_cluster_run(const attn_decode_params &p, cudaStream_t stream) {
  attn_status st = decode_cluster_prepare<T, kD, kBulk>();
  if (st) return st;
  cudaLaunchAttribute attr[2];
  const dim3 grid((unsigned)p.splits, (unsigned)p.hkv, (unsigned)p.batch);
  cudaLaunchConfig_t cfg = decode_cl_config(grid, p.splits, decode_cl_smem_bytes<kD, kBulk>(p.cl_chunk),
                                            p.pdl, stream, attr);
  cudaError_t e = cudaLaunchKernelEx(&cfg, decode_cluster_kernel<T, kD, kBulk>, p);
  return e == cudaSuccess ? ATTN_STATUS_OK : attn_cuda_fail(e, "launch of decode_cluster_kernel");
}

// Clusters of c CTAs of `chunk` keys the device runs at once (0 when it
// cannot say), asked once per device, c and chunk.
template <typename T, int kD, int kBulk>
int decode_cluster_fit(int c, int chunk) {
  constexpr int kSizes = DECODE_CLUSTER_KEYS(kD) / 16 + 1;
  static int fit[64][5][kSizes]; // c = 2^i, chunk / 16; 0 unknown, else fit + 1
  int dev = 0, lg = 0;
  while ((1 << lg) < c && lg < 4) lg++;
  const int ci = chunk / 16;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64 || ci < 0 || ci >= kSizes)
    return 0;
  if (fit[dev][lg][ci]) return fit[dev][lg][ci] - 1;
  int n = 0;
  cudaLaunchAttribute attr[2];
  cudaLaunchConfig_t cfg = decode_cl_config(dim3((unsigned)c), c, decode_cl_smem_bytes<kD, kBulk>(chunk),
                                            0, 0, attr);
  if (decode_cluster_prepare<T, kD, kBulk>() ||
      cudaOccupancyMaxActiveClusters(&n, decode_cluster_kernel<T, kD, kBulk>, &cfg) !=
          cudaSuccess)
    n = 0, cudaGetLastError();
  fit[dev][lg][ci] = n + 1;
  return n;
}

#define DECODE_CLUSTER_INSTANCE_B(T, D, B)                                                  \
  template attn_status decode_cluster_run<T, D, B>(const attn_decode_params &, cudaStream_t); \
  template int decode_cluster_fit<T, D, B>(int, int);
#define DECODE_CLUSTER_INSTANCE(T, D)                                                    \
  DECODE_CLUSTER_INSTANCE_B(T, D, 0)                                                     \
  DECODE_CLUSTER_INSTANCE_B(T, D, 1)

#endif
