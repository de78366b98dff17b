// A prototype (bench only, issue 13, NOTES.md run 16): decode for small
// grids over a contiguous cache [B, S, Hkv, D] (sm_90) with a CTA per span of
// keys across ALL KV heads, and one merge across the CTAs through L2 behind
// a grid-wide barrier. Why: the heads of one key are Hkv * D * 2 contiguous
// bytes, so a CTA's K and V are two contiguous blocks, where the cluster
// kernel (decode_cluster.cuh) reads one head's 256-byte rows every 2 KB and
// merges twice (its warps, then the cluster).
//
// Work split. Grid (S, B), launched cooperatively (all CTAs resident: the
// barrier spins). CTA s owns keys [s * span, +span) of sequence b (span a
// multiple of 16, at most DECODE_SPAN_MAX) for every KV head. 8 warps; warp w
// takes KV heads w, w + 8, ...: for each, its R = G * nq <= 16 query rows (one
// m16 atom, row r = t * G + g as in decode_kernel.cuh), S = Q K^T by mma (Q's
// fragments straight from global into registers, issued before K lands; K
// by ldmatrix), mask and a one-pass softmax, O = P V (V by ldmatrix.trans),
// and the head's normalized partial O and lse (log2) into o_part / lse_part
// as split s (the split + combine kernels' layout). No merge between warps.
// Loads, kOne = 0: each key's row of all heads, of K and of V, by one bulk
// copy into a padded shared row (stride Hkv * D + 8 elements: ldmatrix's 8
// rows in 8 bank groups); kOne = 1: K and V by one bulk copy each into
// unpadded rows (fewer copies, 8-way conflicted ldmatrix). Two mbarriers (K,
// V). Rows up to the cache's capacity go out before kv_len arrives; a warp
// zeroes its head's V rows past the keys once they land.
// Barrier (decode_span_arrive, _wait): one counter (bar), never reset: CTA 0
// adds 2^31 - (N - 1), the others 1, so the top bit flips exactly when the
// N-th arrives and the low bits are back where they were after it.
// Merge (decode_span_merge): the sequence's nq * Hq * D / 4 column quads are
// dealt to its S CTAs; thread tid takes quad tid % I of its CTA's share (I a
// power of 2, at most 32) and the partials tid / I, + 256 / I, ... (four
// loads in flight), folds them online, then the threads of one quad fold
// theirs by shuffles and through shared memory, and one writes out (and
// lse). (Run 16, call 3: a warp a quad, its lanes over the partials, took
// the merge's loads from 1.1 to 3.9 us: 8x the L2 requests for the same
// lines.)
// Shared memory: two mbarriers (128 B), K and V [span x row] 16-bit, the
// merge's slab [8 warps x 32 quads x 6] floats; at least DECODE_SPAN_MIN_SMEM
// so that one CTA holds an SM.
// kStop != 3 are the bench's floors: 1 the copies alone, 2 copies, partials,
// barrier and merge without the math, 4 the barrier alone, 5 as 2 without the
// barrier (timing only).
#ifndef ATTNPROF_BENCH_SERVING_DECODE_SPAN_CUH
#define ATTNPROF_BENCH_SERVING_DECODE_SPAN_CUH

#include "attn/cuda/fused/decode_cluster.cuh"

#define DECODE_SPAN_WARPS 8
#define DECODE_SPAN_THREADS (DECODE_SPAN_WARPS * 32)
#define DECODE_SPAN_MAX 64           // keys a CTA, most (4 slices of 16 a warp)
#define DECODE_SPAN_MIN_SMEM 120000  // > half an SM's 228 KB: one CTA an SM
#define DECODE_SPAN_QUADS 32         // column quads a CTA merges in one pass, most
#define DECODE_SPAN_RED (DECODE_SPAN_WARPS * DECODE_SPAN_QUADS * 6 * 4) // the merge's slab

// A key row's stride in the K and V regions, in elements.
__host__ __device__ inline int decode_span_row(int hkv, int d, int one) {
  return hkv * d + (one ? 0 : 8);
}
__host__ __device__ inline int decode_span_smem_bytes(int span, int hkv, int d, int one) {
  const int n = 128 + 2 * span * decode_span_row(hkv, d, one) * 2 + DECODE_SPAN_RED;
  return n > DECODE_SPAN_MIN_SMEM ? n : DECODE_SPAN_MIN_SMEM;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Keys [k_begin, k_begin + n) of sequence b, all heads, K then V, K
// completing on bar and V on bar + 8. Warp 0 sets both up, expecting n rows
// each, and issues the copies (kOne: one each; else one a key row, a lane a
// row); the CTA waits for the set-up only.
template <typename T, int kD, int kOne>
FUSED_DEV void decode_span_copy(const attn_decode_params &p, int b, int k_begin, int n, T *ks,
                                T *vs, uint32_t bar) {
  const uint32_t bytes = (uint32_t)p.hkv * kD * 2;
  const int row = decode_span_row(p.hkv, kD, kOne), lane = threadIdx.x % 32;
  if (threadIdx.x < 32) {
    if (lane == 0) {
      ws_bar_init(bar, 1);
      ws_bar_init(bar + 8, 1);
      ws_bar_init_fence();
      ws_bar_expect(bar, (uint32_t)n * bytes);
      ws_bar_expect(bar + 8, (uint32_t)n * bytes);
    }
    __syncwarp();
    const T *kg = (const T *)p.k + b * p.k_sb + (int64_t)k_begin * p.k_ss;
    const T *vg = (const T *)p.v + b * p.v_sb + (int64_t)k_begin * p.v_ss;
    if (kOne) {
      if (lane < 2 && n)
        decode_bulk_row(fused_smem_addr(lane ? vs : ks), lane ? vg : kg, (uint32_t)n * bytes,
                        bar + 8 * lane);
    } else {
      for (int i = lane; i < 2 * n; i += 32) {
        const int kv = i >= n, r = i - kv * n;
        decode_bulk_row(fused_smem_addr((kv ? vs : ks) + r * row),
                        (kv ? vg : kg) + (int64_t)r * (kv ? p.v_ss : p.k_ss), bytes,
                        bar + 8 * kv);
      }
    }
  }
  __syncthreads(); // the barriers are set up before anyone waits on them
}

// Query rows g4 and g4 + 8 of KV head hk as mma A fragments, kD / 16 steps;
// rows past R zero.
template <typename T, int kD>
FUSED_DEV void decode_span_q(const attn_decode_params &p, const decode_seq &sq, int hk, int R,
                             int lane, uint32_t (&qa)[kD / 16][4]) {
  const int g4 = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int rr = g4 + 8 * hh, t = rr / p.group, h = hk * p.group + rr % p.group;
    const uint32_t *src = (const uint32_t *)((const T *)p.q + sq.qb * p.q_sb + h * p.q_sh +
                                             (int64_t)(sq.q0 + t) * p.q_ss + 2 * t4);
#pragma unroll
    for (int kk = 0; kk < kD / 16; kk++) {
      qa[kk][hh] = rr < R ? __ldg(src + kk * 8) : 0u;
      qa[kk][2 + hh] = rr < R ? __ldg(src + kk * 8 + 4) : 0u;
    }
  }
}

// KV head hk's partial over this CTA's keys [k_begin, k_stop) (slices of 16
// up to nsl): Q, then K landed, S, mask, softmax, V landed, P V, normalized
// into o_part / lse_part.
template <typename T, int kD, int kOne>
FUSED_DEV void decode_span_head(const attn_decode_params &p, const decode_seq &sq, int hk,
                                int R, int k_begin, int k_stop, const T *ks, T *vs,
                                uint32_t bar, int lane) {
  constexpr int kSl = DECODE_SPAN_MAX / 16;
  const int row = decode_span_row(p.hkv, kD, kOne), G = p.group;
  const int keys = k_stop - k_begin, nsl = (keys + 15) / 16;
  const int g4 = lane / 4, t4 = lane % 4, mi = lane / 8, r8 = lane % 8;
  const T *kh = ks + hk * kD;
  T *vh = vs + hk * kD;
  uint32_t qa[kD / 16][4];
  decode_span_q<T, kD>(p, sq, hk, R, lane, qa);
  ws_bar_wait(bar, 0); // K landed
  float s[kSl][2][4];
#pragma unroll
  for (int i = 0; i < kSl; i++) {
#pragma unroll
    for (int e = 0; e < 8; e++) s[i][e / 4][e % 4] = 0.f;
    if (i >= nsl) continue;
#pragma unroll
    for (int kk = 0; kk < kD / 16; kk++) {
      uint32_t bf[4];
      fused_ldmatrix_x4(bf, fused_smem_addr(kh + (i * 16 + (mi / 2) * 8 + r8) * row +
                                            (kk * 2 + mi % 2) * 8));
      fused_mma<T>(s[i][0], qa[kk], bf[0], bf[1]);
      fused_mma<T>(s[i][1], qa[kk], bf[2], bf[3]);
    }
  }
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, base[2];
#pragma unroll
  for (int i = 0; i < kSl; i++)
#pragma unroll
    for (int e = 0; e < 8; e++) {
      const int hh = (e % 4) >> 1, j = k_begin + i * 16 + (e / 4) * 8 + 2 * t4 + (e & 1);
      const int lim = p.causal ? (g4 + 8 * hh) / G + sq.nk - sq.nq : 0x7fffffff;
      const bool vis = i < nsl && j < k_stop && j <= lim;
      s[i][e / 4][e % 4] = vis ? s[i][e / 4][e % 4] * p.scale_log2 : -INFINITY;
      m[hh] = fmaxf(m[hh], s[i][e / 4][e % 4]);
    }
  decode_cl_exp<kSl>(s, m, l, base);
  ws_bar_wait(bar + 8, 0); // V landed
  // this head's V rows past the keys in the last slice: zero (a lane a chunk)
  for (int c = lane; c < (nsl * 16 - keys) * (kD / 8); c += 32)
    *(uint4 *)(vh + (keys + c / (kD / 8)) * row + (c % (kD / 8)) * 8) = make_uint4(0, 0, 0, 0);
  __syncwarp();
  float o[kD / 8][4];
  decode_cl_pv<T, kD, kSl>(s, l, o, lane, [](int i) { return i; }, nsl,
                           [&](int r, int ch) { return fused_smem_addr(vh + r * row + ch * 8); });
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int rr = g4 + 8 * hh;
    if (rr >= R) continue;
    const int t = rr / G, h = hk * G + rr % G;
    const int64_t prow = (int64_t)blockIdx.x * p.part_rows +
                         ((int64_t)sq.qb * p.q_rows + sq.q0 + t) * p.hq + h;
    const float inv = l[hh] > 0.f ? 1.f / l[hh] : 0.f;
    float *dst = p.o_part + prow * kD + 2 * t4;
#pragma unroll
    for (int i = 0; i < kD / 8; i++)
      *(float2 *)(dst + i * 8) = make_float2(o[i][2 * hh] * inv, o[i][2 * hh + 1] * inv);
    if (t4 == 0) p.lse_part[prow] = l[hh] > 0.f ? base[hh] + log2f(l[hh]) : -INFINITY;
  }
}

// The bench's floors (kStop 2, 5): head hk's partials zero with lse 0, once V landed.
template <int kD>
FUSED_DEV void decode_span_zero(const attn_decode_params &p, const decode_seq &sq, int hk, int R,
                                uint32_t bar) {
  ws_bar_wait(bar, 0);
  ws_bar_wait(bar + 8, 0);
  const int lane = threadIdx.x % 32;
  for (int rr = 0; rr < R; rr++) {
    const int64_t prow = (int64_t)blockIdx.x * p.part_rows +
                         ((int64_t)sq.qb * p.q_rows + sq.q0 + rr / p.group) * p.hq +
                         hk * p.group + rr % p.group;
    for (int c = lane * 4; c < kD; c += 128)
      *(float4 *)(p.o_part + prow * kD + c) = make_float4(0.f, 0.f, 0.f, 0.f);
    if (lane == 0) p.lse_part[prow] = 0.f;
  }
}

// The grid barrier's two halves (see the top of the file), by one thread
// of each CTA once all its threads' writes are done: the arrival (its old
// count), then the wait until the top bit has flipped.
FUSED_DEV unsigned decode_span_arrive(unsigned *bar) {
  const unsigned n = gridDim.x * gridDim.y;
  __threadfence(); // the CTA's writes reach L2 before the arrival
  return atomicAdd(bar, blockIdx.x == 0 && blockIdx.y == 0 ? 0x80000000u - (n - 1) : 1u);
}
FUSED_DEV void decode_span_wait(const unsigned *bar, unsigned old) {
  unsigned cur;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(cur) : "l"(bar) : "memory");
  } while (((old ^ cur) & 0x80000000u) == 0);
}

// (M, L, acc) += (m2, l2, a2): two online-softmax states of one column quad.
FUSED_DEV void decode_span_fold(float &M, float &L, float (&acc)[4], float m2, float l2,
                                const float (&a2)[4]) {
  const float mn = fmaxf(M, m2);
  if (mn == -INFINITY) return;
  const float w1 = M == -INFINITY ? 0.f : fused_exp2(M - mn);
  const float w2 = m2 == -INFINITY ? 0.f : fused_exp2(m2 - mn);
  L = L * w1 + l2 * w2;
#pragma unroll
  for (int e = 0; e < 4; e++) acc[e] = acc[e] * w1 + a2[e] * w2;
  M = mn;
}

// This CTA's share of sequence b's column quads, merged from all S partials
// (see the top of the file); red: the cross-warp slab.
// folded(): a hook once this thread's partials are folded (the bench's stamps).
template <typename T, int kD, typename Hook>
FUSED_DEV void decode_span_merge(const attn_decode_params &p, const decode_seq &sq, float *red,
                                 Hook folded) {
  constexpr int kQ4 = kD / 4;
  const int S = gridDim.x, items = sq.nq * p.hq * kQ4, per = (items + S - 1) / S;
  int I = 1;
  while (I < per && I < DECODE_SPAN_QUADS) I *= 2;
  const int tpi = DECODE_SPAN_THREADS / I, u = threadIdx.x / I, ii = threadIdx.x % I;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int k0 = 0; k0 < per; k0 += I) {
    const int it = blockIdx.x * per + k0 + ii;
    const bool on = k0 + ii < per && it < items;
    const int rq = on ? it / kQ4 : 0, t = rq / p.hq, h = rq % p.hq, col = (it % kQ4) * 4;
    const int64_t prow = ((int64_t)sq.qb * p.q_rows + sq.q0 + t) * p.hq + h;
    float M = -INFINITY, L = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int s0 = u; on && s0 < S; s0 += 4 * tpi) {
      float ls[4];
      float4 x[4];
#pragma unroll
      for (int j = 0; j < 4; j++) { // all four in flight before any is used
        const int s = s0 + j * tpi;
        const int64_t at = (int64_t)(s < S ? s : 0) * p.part_rows + prow;
        ls[j] = s < S ? __ldcg(p.lse_part + at) : -INFINITY;
        x[j] = s < S ? __ldcg((const float4 *)(p.o_part + at * kD + col))
                     : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const float a2[4] = {x[j].x, x[j].y, x[j].z, x[j].w};
        decode_span_fold(M, L, acc, ls[j], 1.f, a2);
      }
    }
    folded();
    for (int off = I; off < 32; off *= 2) { // the warp's threads of quad ii
      float a2[4];
      const float m2 = __shfl_xor_sync(0xffffffffu, M, off);
      const float l2 = __shfl_xor_sync(0xffffffffu, L, off);
#pragma unroll
      for (int e = 0; e < 4; e++) a2[e] = __shfl_xor_sync(0xffffffffu, acc[e], off);
      decode_span_fold(M, L, acc, m2, l2, a2);
    }
    float *slot = red + (warp * DECODE_SPAN_QUADS + ii) * 6;
    if (lane < I) slot[0] = M, slot[1] = L, slot[2] = acc[0], slot[3] = acc[1],
                  slot[4] = acc[2], slot[5] = acc[3];
    __syncthreads();
    if (threadIdx.x < I && on) {
      for (int w = 1; w < DECODE_SPAN_WARPS; w++) {
        const float *o = red + (w * DECODE_SPAN_QUADS + ii) * 6;
        const float a2[4] = {o[2], o[3], o[4], o[5]};
        decode_span_fold(M, L, acc, o[0], o[1], a2);
      }
#pragma unroll
      for (int e = 0; e < 4; e++) acc[e] = L > 0.f ? acc[e] / L : 0.f;
      decode_out<T, 4>(p, sq, h / p.group, t * p.group + h % p.group, col, acc,
                       L > 0.f ? M + log2f(L) : -INFINITY);
    }
    __syncthreads();
  }
}
#endif

template <typename T, int kD, int kStop, int kOne>
__global__ void __launch_bounds__(DECODE_SPAN_THREADS, 1)
    decode_span_kernel(const attn_decode_params p, int span, unsigned *gbar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char decode_smem[];
  const uint32_t bar = fused_smem_addr(decode_smem); // K's mbarrier; V's at bar + 8
  const int row = decode_span_row(p.hkv, kD, kOne);
  T *ks = (T *)(decode_smem + 128), *vs = ks + span * row;
  float *red = (float *)(vs + span * row);
  const int b = blockIdx.y, k_begin = blockIdx.x * span, warp = threadIdx.x / 32;
  DECODE_STAMP_BEGIN;
  // contiguous: the cache's rows, whatever the sequence's length
  const int n = kStop == 4 ? 0 : max(0, min(span, p.sk - k_begin));
  decode_span_copy<T, kD, kOne>(p, b, k_begin, n, ks, vs, bar);
  DECODE_STAMP(1);
  const decode_seq sq = decode_seq_of(p, b);
  const int R = p.group * sq.nq;
  const int k_stop = R == 0 ? k_begin : max(k_begin, min(sq.nk, k_begin + span));
  if (kStop == 1) ws_bar_wait(bar, 0), ws_bar_wait(bar + 8, 0);
  DECODE_STAMP(2);
  for (int hk = warp; hk < p.hkv; hk += DECODE_SPAN_WARPS) {
    if constexpr (kStop == 3)
      decode_span_head<T, kD, kOne>(p, sq, hk, R, k_begin, k_stop, ks, vs, bar, threadIdx.x % 32);
    else if constexpr (kStop == 2 || kStop == 5)
      decode_span_zero<kD>(p, sq, hk, R, bar);
  }
  DECODE_STAMP(3);
  __syncthreads(); // this CTA's partials written
  DECODE_STAMP(4);
  if (kStop != 1 && kStop != 5 && threadIdx.x == 0) {
    const unsigned old = decode_span_arrive(gbar);
    DECODE_STAMP(5);
    decode_span_wait(gbar, old);
    DECODE_STAMP(6);
  }
  __syncthreads();
  DECODE_STAMP(7);
  if (kStop != 1 && kStop != 4) decode_span_merge<T, kD>(p, sq, red, [&] { DECODE_STAMP(8); });
  DECODE_STAMP(9);
  DECODE_STAMP_END
#endif
}

// The cooperative launch's configuration (grid (p.splits, p.batch)); attr
// holds its attribute.
static inline cudaLaunchConfig_t decode_span_config(const attn_decode_params &p, int span,
                                                    int d, int one, cudaStream_t stream,
                                                    cudaLaunchAttribute *attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)p.splits, (unsigned)p.batch);
  cfg.blockDim = dim3(DECODE_SPAN_THREADS);
  cfg.dynamicSmemBytes = (size_t)decode_span_smem_bytes(span, p.hkv, d, one);
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr, cfg.numAttrs = 1;
  return cfg;
}

#endif
