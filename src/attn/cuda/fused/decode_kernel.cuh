// Split-KV decode (flash-decoding) on mma.sync, for serving: a few new query
// tokens per sequence against a long KV cache, paged or contiguous, and
// packed variable-length queries (written from the published algorithm and
// the PTX ISA; no code copied).
//
// Work split. Grid (splits x row_groups, Hkv, B). A CTA owns one KV head of
// one sequence and a range of its keys (its split), and ALL the query rows
// that read that head: row r = t * G + g is token t of query head hk*G + g
// (G = Hq / Hkv), so under GQA each K/V byte is read once, not G times. Rows
// past 16 * kWM go to further row groups (more CTAs, same keys; prefill).
// Tile: kRows = 16 * kWM query rows x kBK = 64 keys per step; 4 warps, kWM
// row atoms x kWK = 4 / kWM key groups: warp (wm, kg) owns rows wm*16..+15
// and keys kg*kNK..+kNK-1 of each step, with its own online softmax; the
// key groups are merged once at the end through shared memory, behind one
// barrier (decode_merge_write).
// Per step: the K and V tiles arrive by cp.async in a ring of kStages
// buffers (16-byte chunks; what addresses a key row, stored in step i for
// step i + 1 from block-table entries read in step i - 1, depends on kPath:
// decode_launch.h), then S = Q K^T (ldmatrix Q, K), mask (split end, causal
// bottom-right per sequence), online softmax in the exp2 domain, O += P V (P
// from registers, V by ldmatrix.trans).
// End: with one split the CTA writes out and lse; with several it writes its
// normalized partial O and its lse (fp32) and decode_combine_kernel merges
// the splits: out = sum_s w_s O_s / sum_s w_s, w_s = 2^(lse_s - max lse).
// Shared memory: Q [kRows x kD], K and V rings [kStages x 64 x kD], 16-bit,
// XOR-swizzled (fused_swz); the fp32 merge buffer reuses the rings; two
// slots of 64 key rows' (page or batch, row) pairs or element offsets.
// Measured (H200, bf16, D128, GQA 32/8, bench/serving/NOTES.md runs 9-11
// and 19, device time, graph-timed): contiguous, 1 new token: B=16 KV=32k
// 472 us (cuDNN via PyTorch 473), B=16 KV=1k 19.4 us against cuDNN's 19.3
// (run 19, the merge by 4 columns; 20.4 before), B=1
// KV=2k 8.5 against 7.4, B=1 KV=128k 126.7 (cuDNN 126.8); 8 and 16 new
// tokens 5.3x and 3.4x PyTorch's fastest (run 10). Paged (grid, run 10):
// B >= 16 KV >= 32k 103-106% of the copy, B=1 KV=128k 92%.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_KERNEL_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_KERNEL_CUH

#include <math.h>

#include "attn/cuda/fused/decode_launch.h"
#include "attn/cuda/fused/fused_mma.cuh"

#define DECODE_BK 64
#define DECODE_THREADS 128

// Phase stamps, compiled in only where DECODE_STAMPS is defined (the benches
// bench/serving/decode_stamps.cu and decode_split_stamps.cu; the library
// never defines it): every thread reads %globaltimer and %clock64 at each
// phase into registers, and at the end thread 0 writes them, its SM and the
// call's index (a per-CTA counter) to decode_stamp_buf. Each kernel's
// DECODE_PHASES phases are named where it stamps them (the split kernel:
// decode_fwd_kernel; the cluster kernel: decode_cluster_kernel).
#define DECODE_PHASES 10
#ifdef DECODE_STAMPS
#include "attn/cuda/fused/ws_sync.cuh"
#define DECODE_STAMP_CTAS 256
#define DECODE_STAMP_CALLS 32
#define DECODE_STAMP_WORDS (2 * DECODE_PHASES + 2)
__device__ unsigned decode_stamp_calls[DECODE_STAMP_CTAS];
__device__ unsigned long long
    decode_stamp_buf[DECODE_STAMP_CALLS][DECODE_STAMP_CTAS][DECODE_STAMP_WORDS];
#define DECODE_STAMP(i) st_ns[i] = ws_globaltimer(), st_cy[i] = ws_clock()
#define DECODE_STAMP_AT(c, i) \
  if (c) DECODE_STAMP(i)
#define DECODE_STAMP_BEGIN                                                                 \
  unsigned long long st_ns[DECODE_PHASES], st_cy[DECODE_PHASES];                           \
  DECODE_STAMP(0);                                                                         \
  const int st_cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);      \
  unsigned st_call = 0;                                                                    \
  if (threadIdx.x == 0 && st_cta < DECODE_STAMP_CTAS)                                      \
    st_call = atomicAdd(&decode_stamp_calls[st_cta], 1u)
#define DECODE_STAMP_END                                                                   \
  if (threadIdx.x == 0 && st_cta < DECODE_STAMP_CTAS && st_call < DECODE_STAMP_CALLS) {    \
    unsigned long long *w = decode_stamp_buf[st_call][st_cta];                             \
    unsigned sm;                                                                           \
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(sm));                                      \
    for (int i = 0; i < DECODE_PHASES; i++) w[i] = st_ns[i], w[DECODE_PHASES + i] = st_cy[i]; \
    w[2 * DECODE_PHASES] = sm, w[2 * DECODE_PHASES + 1] = st_call;                         \
  }
#else
#define DECODE_STAMP(i)
#define DECODE_STAMP_AT(c, i)
#define DECODE_STAMP_BEGIN
#define DECODE_STAMP_END
#endif

// Q tile, K/V ring, two slots of 64 key rows' (batch or page, row) pairs.
// The merge statistics reuse the ring after the loop. D128 with 64 query
// rows (8 new tokens under GQA 8) comes to 115,712 bytes: two CTAs fill an
// SM's 228 KB exactly (with the 1 KB each CTA reserves).
template <int kD, int kWM, int kStages>
constexpr int decode_smem_bytes() {
  return (16 * kWM * kD + kStages * 2 * DECODE_BK * kD) * 2 + 2 * DECODE_BK * 8;
}

// Programmatic dependent launch (sm_90+; no-ops when the grid was launched
// without it): a kernel may start while the one before it in the stream
// drains, and waits here, before its first global access, until that one
// has finished and its writes are visible. Letting the next kernel launch
// at once hides its launch and CTA start behind this kernel's run.
FUSED_DEV void decode_pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

struct decode_seq {
  int nq, nk, q0, qb;
};

FUSED_DEV decode_seq decode_seq_of(const attn_decode_params &p, int b) {
  decode_seq s;
  s.qb = p.q_off ? 0 : b;
  s.q0 = p.q_off ? p.q_off[b] : 0;
  s.nq = p.q_off ? p.q_off[b + 1] - s.q0 : p.q_rows;
  s.nk = p.kv_kind == DECODE_KV_PACKED ? p.kv_off[b + 1] - p.kv_off[b]
         : p.kv_kind == DECODE_KV_DENSE ? p.sk : p.kv_len[b];
  return s;
}

// Key j of sequence b: (batch index or page, row) in k and v.
FUSED_DEV void decode_kv_at(const attn_decode_params &p, int b, int j, int64_t *tb, int *row) {
  if (p.kv_kind == DECODE_KV_PAGED) {
    *tb = __ldg(p.table + b * p.table_stride + j / p.page_size), *row = j % p.page_size;
  } else if (p.kv_kind == DECODE_KV_PACKED) {
    *tb = 0, *row = p.kv_off[b] + j;
  } else {
    *tb = b, *row = j;
  }
}

// Rows [r0, r0 + kRows) of the KV head hk's query rows into qs (swizzled
// fused_swz<kRows, kD>) by cp.async, one commit group; rows past R zero.
template <typename T, int kD, int kRows, int kThreads>
FUSED_DEV void decode_load_q(const attn_decode_params &p, const decode_seq &sq, int hk, int r0,
                             int R, T *qs) {
  constexpr int kChunks = kD / 8;
  const T *qg = (const T *)p.q;
  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, ch = c % kChunks, rr = r0 + r;
    const int t = rr / p.group, h = hk * p.group + rr % p.group;
    const bool ok = rr < R;
    const T *src = ok ? qg + sq.qb * p.q_sb + h * p.q_sh + (int64_t)(sq.q0 + t) * p.q_ss + ch * 8
                      : qg;
    fused_cp_async16(fused_smem_addr(qs + fused_swz<kRows, kD>(r, ch)), src, ok ? 16 : 0);
  }
  fused_cp_async_commit();
}

// Row rr's final output: n values from column col into out, and (col 0)
// its lse from lse2 (log2 domain; -inf for a row that saw no key).
template <typename T, int kN>
FUSED_DEV void decode_out(const attn_decode_params &p, const decode_seq &sq, int hk, int rr,
                          int col, const float *val, float lse2) {
  const int t = rr / p.group, h = hk * p.group + rr % p.group;
  T *dst = (T *)p.o + sq.qb * p.o_sb + h * p.o_sh + (int64_t)(sq.q0 + t) * p.o_ss + col;
#pragma unroll
  for (int e = 0; e < kN; e++) dst[e] = fused_from_f32<T>(val[e]);
  if (col == 0 && p.lse) p.lse[((int64_t)sq.qb * p.hq + h) * p.q_rows + sq.q0 + t] = lse2 * FUSED_LN2;
}

// Row r's output of one split: out and lse (one split), or the split's
// normalized partial and its lse (several).
template <typename T, int kD>
FUSED_DEV void decode_put(const attn_decode_params &p, const decode_seq &sq, int split, int hk,
                          int rr, int col, float val, float lse2) {
  if (p.splits == 1) {
    decode_out<T, 1>(p, sq, hk, rr, col, &val, lse2);
  } else {
    const int t = rr / p.group, h = hk * p.group + rr % p.group;
    const int64_t prow = ((int64_t)sq.qb * p.q_rows + sq.q0 + t) * p.hq + h;
    p.o_part[((int64_t)split * p.part_rows + prow) * kD + col] = val;
    if (col == 0) p.lse_part[(int64_t)split * p.part_rows + prow] = lse2;
  }
}

// The key groups' partials into buf for decode_merge_groups(4): each warp
// puts its unscaled O rows (only rows of a token) and its (m, l) in shared
// memory, a row padded by 8 floats so that a warp's float2 stores take the
// two wavefronts they must; a barrier follows.
template <int kD, int kRows, int kWK>
FUSED_DEV void decode_merge_stage(float (&o)[kD / 8][4], const float (&m)[2], const float (&l)[2],
                                  float *buf, int r0, int R, int wm, int kg, int lane) {
  constexpr int kDP = kD + 8;
  float *slab = buf;                          // [kWK][kRows][kDP]
  float *st_m = slab + kWK * kRows * kDP, *st_l = st_m + kWK * kRows; // [kWK][kRows]
  const int g4 = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int r = wm * 16 + g4 + 8 * hh;
    if (r0 + r >= R) continue; // no token's row: never read
    if (t4 == 0) st_m[kg * kRows + r] = m[hh], st_l[kg * kRows + r] = l[hh];
    float *dst = slab + (kg * kRows + r) * kDP + 2 * t4;
#pragma unroll
    for (int i = 0; i < kD / 8; i++)
      *(float2 *)(dst + i * 8) = make_float2(o[i][2 * hh], o[i][2 * hh + 1]);
  }
  __syncthreads();
}

// Row r's weights in the key groups' merge: M the groups' max, f[w] =
// 2^(m_w - M) (0 for a group with no key), L = sum f[w] l_w.
template <int kRows, int kWK>
FUSED_DEV void decode_group_weights(const float *st_m, const float *st_l, int r, float (&f)[kWK],
                                    float &M, float &L) {
  M = -INFINITY, L = 0.f;
#pragma unroll
  for (int w = 0; w < kWK; w++) M = fmaxf(M, st_m[w * kRows + r]);
#pragma unroll
  for (int w = 0; w < kWK; w++) {
    const float mw = st_m[w * kRows + r];
    f[w] = mw == -INFINITY ? 0.f : fused_exp2(mw - M);
    L += f[w] * st_l[w * kRows + r];
  }
}

// The key groups' merge, behind one barrier (decode_merge_stage); then
// every thread sums the kWK groups of its elements with weights
// 2^(m_kg - M) and hands put(row, col, normalized value, lse in log2) the
// result. Replaces kWK serialized phases (a barrier each, 32-bit stores
// 8-way bank conflicted) that ran the same time whatever the rows
// (ATTNPROF_DECODE_FIX bit 0; issue 13). kThreads: the CTA's threads.
template <int kD, int kRows, int kWK, int kThreads, typename Put>
FUSED_DEV void decode_merge_groups(float (&o)[kD / 8][4], const float (&m)[2], const float (&l)[2],
                                   float *buf, int r0, int R, int wm, int kg, int lane, Put put) {
  constexpr int kDP = kD + 8;
  const float *slab = buf, *st_m = slab + kWK * kRows * kDP, *st_l = st_m + kWK * kRows;
  decode_merge_stage<kD, kRows, kWK>(o, m, l, buf, r0, R, wm, kg, lane);
  const int rows = min(kRows, R - r0);
  for (int idx = threadIdx.x; idx < rows * kD; idx += kThreads) {
    const int r = idx / kD, col = idx % kD;
    float M, L, f[kWK], acc = 0.f;
    decode_group_weights<kRows, kWK>(st_m, st_l, r, f, M, L);
#pragma unroll
    for (int w = 0; w < kWK; w++) acc += f[w] * slab[(w * kRows + r) * kDP + col];
    put(r, col, L > 0.f ? acc / L : 0.f, L > 0.f ? M + log2f(L) : -INFINITY);
  }
}

// decode_merge_groups by 4 columns a thread (ATTNPROF_DECODE_FIX bit 3):
// the weights, 1 / L and the lse once per 4 outputs, not once each, float4
// loads, and put4(row, col, 4 values, lse) writes them as one 8-byte (out)
// or 16-byte (partials) store. At 4 real rows (G = 4, one token) and D128
// that is one pass of the 128 threads instead of four.
template <int kD, int kRows, int kWK, int kThreads, typename Put4>
FUSED_DEV void decode_merge_groups4(float (&o)[kD / 8][4], const float (&m)[2],
                                    const float (&l)[2], float *buf, int r0, int R, int wm, int kg,
                                    int lane, Put4 put4) {
  constexpr int kDP = kD + 8;
  const float *slab = buf, *st_m = slab + kWK * kRows * kDP, *st_l = st_m + kWK * kRows;
  decode_merge_stage<kD, kRows, kWK>(o, m, l, buf, r0, R, wm, kg, lane);
  const int rows = min(kRows, R - r0);
  for (int idx = threadIdx.x; idx < rows * (kD / 4); idx += kThreads) {
    const int r = idx / (kD / 4), col = idx % (kD / 4) * 4;
    float M, L, f[kWK];
    decode_group_weights<kRows, kWK>(st_m, st_l, r, f, M, L);
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWK; w++) {
      const float4 x = *(const float4 *)(slab + (w * kRows + r) * kDP + col);
      acc.x += f[w] * x.x, acc.y += f[w] * x.y, acc.z += f[w] * x.z, acc.w += f[w] * x.w;
    }
    const float inv = L > 0.f ? 1.f / L : 0.f;
    acc.x *= inv, acc.y *= inv, acc.z *= inv, acc.w *= inv;
    put4(r, col, acc, L > 0.f ? M + log2f(L) : -INFINITY);
  }
}

// decode_put for 4 columns from col (a multiple of 4): one vector store.
template <typename T, int kD>
FUSED_DEV void decode_put4(const attn_decode_params &p, const decode_seq &sq, int split, int hk,
                           int rr, int col, float4 val, float lse2) {
  const int t = rr / p.group, h = hk * p.group + rr % p.group;
  if (p.splits == 1) {
    T *dst = (T *)p.o + sq.qb * p.o_sb + h * p.o_sh + (int64_t)(sq.q0 + t) * p.o_ss + col;
    *(uint2 *)dst = make_uint2(fused_pack2<T>(val.x, val.y), fused_pack2<T>(val.z, val.w));
    if (col == 0 && p.lse)
      p.lse[((int64_t)sq.qb * p.hq + h) * p.q_rows + sq.q0 + t] = lse2 * FUSED_LN2;
  } else {
    const int64_t prow = ((int64_t)sq.qb * p.q_rows + sq.q0 + t) * p.hq + h;
    *(float4 *)(p.o_part + ((int64_t)split * p.part_rows + prow) * kD + col) = val;
    if (col == 0) p.lse_part[(int64_t)split * p.part_rows + prow] = lse2;
  }
}

// The key groups' merge (decode_merge_groups) and the write of row r0 + r.
template <typename T, int kD, int kWM>
FUSED_DEV void decode_merge_write(const attn_decode_params &p, const decode_seq &sq,
                                  float (&o)[kD / 8][4], const float (&m)[2], const float (&l)[2],
                                  float *buf, int split, int hk, int r0, int R, int wm, int kg,
                                  int lane) {
  if (p.fix & 8)
    decode_merge_groups4<kD, 16 * kWM, 4 / kWM, DECODE_THREADS>(
        o, m, l, buf, r0, R, wm, kg, lane, [&](int r, int col, float4 val, float lse2) {
          decode_put4<T, kD>(p, sq, split, hk, r0 + r, col, val, lse2);
        });
  else
    decode_merge_groups<kD, 16 * kWM, 4 / kWM, DECODE_THREADS>(
        o, m, l, buf, r0, R, wm, kg, lane, [&](int r, int col, float val, float lse2) {
          decode_put<T, kD>(p, sq, split, hk, r0 + r, col, val, lse2);
        });
}

// Runs 1-10's merge (ATTNPROF_DECODE_FIX bit 0 clear): row max M, sum L,
// O = sum_kg 2^(m_kg - M) O_kg, the key groups added one after another.
template <typename T, int kD, int kWM>
FUSED_DEV void decode_merge_write_serial(const attn_decode_params &p, const decode_seq &sq,
                                         float (&o)[kD / 8][4], const float (&m)[2],
                                         const float (&l)[2], float *buf, int split, int hk,
                                         int r0, int R, int wm, int kg, int lane) {
  constexpr int kRows = 16 * kWM, kWK = 4 / kWM;
  float *acc = buf; // [kRows][kD]
  float *st_m = buf + kRows * kD, *st_l = st_m + 4 * kRows;
  float *row_m = st_l + 4 * kRows, *row_l = row_m + kRows;
  const int g4 = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; hh++)
    if (t4 == 0) st_m[kg * kRows + wm * 16 + g4 + 8 * hh] = m[hh],
                 st_l[kg * kRows + wm * 16 + g4 + 8 * hh] = l[hh];
  __syncthreads();
  float f[2];
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    const int r = wm * 16 + g4 + 8 * hh;
    float M = -INFINITY, L = 0.f;
    for (int w = 0; w < kWK; w++) M = fmaxf(M, st_m[w * kRows + r]);
    for (int w = 0; w < kWK; w++)
      if (st_m[w * kRows + r] != -INFINITY) L += fused_exp2(st_m[w * kRows + r] - M) * st_l[w * kRows + r];
    f[hh] = m[hh] == -INFINITY ? 0.f : fused_exp2(m[hh] - M);
    if (kg == 0 && t4 == 0) row_m[r] = M, row_l[r] = L;
  }
  for (int w = 0; w < kWK; w++) {
    if (kg == w)
#pragma unroll
      for (int i = 0; i < kD / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int r = wm * 16 + g4 + 8 * (e >> 1), col = i * 8 + 2 * t4 + (e & 1);
          const float x = o[i][e] * f[e >> 1];
          acc[r * kD + col] = w == 0 ? x : acc[r * kD + col] + x;
        }
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < kRows * kD; idx += DECODE_THREADS) {
    const int r = idx / kD, col = idx % kD;
    if (r0 + r >= R) break; // rows past R are all at the end
    const float L = row_l[r], M = row_m[r];
    decode_put<T, kD>(p, sq, split, hk, r0 + r, col, L > 0.f ? acc[idx] / L : 0.f,
                      L > 0.f ? M + log2f(L) : -INFINITY);
  }
}

// One partial row prow's merge over the splits by one warp (lane), wsm
// the warp's DECODE_MAX_SPLITS floats of shared memory (decode_combine_kernel).
template <typename T, int kD, int kEarly>
FUSED_DEV void decode_combine_row(const attn_decode_params &p, int64_t prow, int lane, float *wsm) {
  const float *src = p.o_part + prow * kD + lane;
  const int64_t step = p.part_rows * kD;
  constexpr int kS = kD == 256 ? 4 : 16;
  float x[kS][kD / 32];
  auto load = [&](int s0) {
#pragma unroll
    for (int j = 0; j < kS; j++)
#pragma unroll
      for (int i = 0; i < kD / 32; i++)
        x[j][i] = s0 + j < p.splits ? __ldcg(src + (s0 + j) * step + 32 * i) : 0.f;
  };
  if (kEarly) load(0);
  float ls[DECODE_MAX_SPLITS / 32], M = -INFINITY;
#pragma unroll
  for (int i = 0; i < DECODE_MAX_SPLITS / 32; i++) {
    const int s = lane + 32 * i;
    ls[i] = s < p.splits ? __ldcg(p.lse_part + s * p.part_rows + prow) : -INFINITY;
    M = fmaxf(M, ls[i]);
  }
  for (int o = 16; o > 0; o /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  float w[DECODE_MAX_SPLITS / 32], L = 0.f;
#pragma unroll
  for (int i = 0; i < DECODE_MAX_SPLITS / 32; i++) {
    w[i] = ls[i] == -INFINITY ? 0.f : exp2f(ls[i] - M);
    L += w[i];
    if (kEarly) wsm[lane + 32 * i] = w[i];
  }
  for (int o = 16; o > 0; o /= 2) L += __shfl_xor_sync(0xffffffffu, L, o);
  if (kEarly) __syncwarp();
  float acc[kD / 32];
#pragma unroll
  for (int i = 0; i < kD / 32; i++) acc[i] = 0.f;
  for (int s0 = 0; s0 < p.splits; s0 += kS) {
    if (!kEarly || s0 > 0) load(s0);
#pragma unroll
    for (int j = 0; j < kS; j++) {
      const int s = s0 + j; // past the splits: w is 0 (lse -inf), or no i matches
      float ws = 0.f;
      if (kEarly) {
        ws = wsm[s];
      } else {
#pragma unroll
        for (int i = 0; i < DECODE_MAX_SPLITS / 32; i++)
          if (s / 32 == i) ws = __shfl_sync(0xffffffffu, w[i], s % 32);
      }
#pragma unroll
      for (int i = 0; i < kD / 32; i++) acc[i] += ws * x[j][i];
    }
  }
  if (kEarly) __syncwarp(); // wsm is free for the warp's next row
  const int64_t qi = prow / p.hq, h = prow % p.hq, qb = qi / p.q_rows, qr = qi % p.q_rows;
  T *dst = (T *)p.o + qb * p.o_sb + h * p.o_sh + qr * p.o_ss;
  for (int i = 0; i < kD / 32; i++) dst[lane + 32 * i] = fused_from_f32<T>(L > 0.f ? acc[i] / L : 0.f);
  if (lane == 0 && p.lse)
    p.lse[(qb * p.hq + h) * p.q_rows + qr] = L > 0.f ? (M + log2f(L)) * FUSED_LN2 : -INFINITY;
}

// kMerge: 1 the one-barrier key-group merge (decode_merge_write), 0 runs
// 1-10's (decode_merge_write_serial); a template argument, so that each
// kernel carries one variant's code (ATTNPROF_DECODE_FIX picks it). A
// variant whose last split's CTA combined (no combine kernel) measured
// 0.3-0.7 us slower at B=1 and was taken out (bench/serving/NOTES.md, run 12).
// Its phase stamps (DECODE_STAMP, bench only): start, the first blocks
// issued, block 0 landed, block 0 done, block 1 landed, the last block
// issued, the last block landed, the last block done, the ring drained
// (barrier passed), end (merged and written).
template <typename T, int kD, int kWM, int kStages, int kPath, int kMerge>
__global__ void __launch_bounds__(DECODE_THREADS, 1)
    decode_fwd_kernel(const attn_decode_params p) {
  constexpr int kRows = 16 * kWM, kWK = 4 / kWM, kNK = DECODE_BK / kWK;
  constexpr int kChunks = kD / 8;
  constexpr int kTile = DECODE_BK * kD;
  extern __shared__ __align__(128) unsigned char decode_smem[];
  T *qs = (T *)decode_smem;
  T *ring = qs + kRows * kD; // [kStages][2][kTile]
  int *rows = (int *)(ring + kStages * 2 * kTile); // [2][kBK][batch or page, row]
  // After the loop the ring holds the key groups' merge (decode_merge_write).
  static_assert((kRows * kD + 10 * kRows) * 4 <= kStages * 2 * kTile * 2, "merge fits the ring");
  static_assert(((4 / kWM) * kRows * (kD + 8) + 8 * kRows) * 4 <= kStages * 2 * kTile * 2,
                "padded merge fits the ring");

  const int b = blockIdx.z, hk = blockIdx.y;
  const int split = blockIdx.x % p.splits, rg = blockIdx.x / p.splits;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / kWK, kg = warp % kWK;
  const T *kgp = (const T *)p.k, *vgp = (const T *)p.v;
  // The LINEAR and OFFSETS paths: thread tid copies chunk tid % kChunks of
  // rows tid / kChunks + kPass * i, i.e. fixed rows and column each step.
  constexpr int kPass = DECODE_THREADS / kChunks; // rows one pass of the threads covers
  const int lr0 = tid / kChunks, lch = tid % kChunks;
  // Block blk's K and V rows by fixed strides from kl, vl (row lr0, chunk
  // lch of the block's first key); rows past `left` zero-filled.
  auto linear_copy = [&](const T *kl, const T *vl, int blk, int left) {
    T *ks = ring + (blk % kStages) * 2 * kTile, *vs = ks + kTile;
    const T *kb = kl + (int64_t)blk * DECODE_BK * p.k_ss;
    const T *vb = vl + (int64_t)blk * DECODE_BK * p.v_ss;
#pragma unroll
    for (int i = 0; i < DECODE_BK / kPass; i++) {
      const int r = lr0 + i * kPass;
      const bool ok = i * kPass < left;
      const int at = fused_swz<DECODE_BK, kD>(r, lch);
      fused_cp_async16(fused_smem_addr(ks + at), ok ? kb + (int64_t)i * kPass * p.k_ss : kgp,
                       ok ? 16 : 0);
      fused_cp_async16(fused_smem_addr(vs + at), ok ? vb + (int64_t)i * kPass * p.v_ss : vgp,
                       ok ? 16 : 0);
    }
  };
  // The contiguous one-split start (ATTNPROF_DECODE_FIX bit 2): with dense
  // queries, unpacked K/V and one split, no address of Q or of the first
  // kStages - 1 blocks depends on kv_len (the keys start at row 0; the
  // length only masks), so their copies go out before kv_len is read, up to
  // the cache's rows: one L2 round trip less before the first K/V bytes
  // land. Rows past the length are zeroed in V once they land (the cache's
  // spare rows may hold anything; 0 x NaN is NaN); K's are masked to -inf.
  const bool early = kPath == DECODE_PATH_LINEAR && (p.fix & 4) && p.splits == 1 && !p.q_off &&
                     p.kv_kind != DECODE_KV_PACKED;
  DECODE_STAMP_BEGIN;
  decode_pdl_wait();
  if (early) {
    const decode_seq sq0 = {p.q_rows, 0, 0, b}; // what decode_seq_of gives, less nk
    const int R0 = p.group * p.q_rows;
    if (rg * kRows >= R0) return;
    decode_load_q<T, kD, kRows, DECODE_THREADS>(p, sq0, hk, rg * kRows, R0, qs);
    const T *k0 = kgp + (int64_t)b * p.k_sb + hk * p.k_sh + lr0 * p.k_ss + lch * 8;
    const T *v0 = vgp + (int64_t)b * p.v_sb + hk * p.v_sh + lr0 * p.v_ss + lch * 8;
    for (int s = 0; s < kStages - 1; s++) {
      linear_copy(k0, v0, s, p.sk - s * DECODE_BK - lr0);
      fused_cp_async_commit();
    }
  }
  const decode_seq sq = decode_seq_of(p, b);
  const int G = p.group, R = G * sq.nq, r0 = rg * kRows;
  if (r0 >= R) return; // rows of no token: nothing to write

  // Keys this CTA reads: causal hides keys past its last token's diagonal.
  const int t_last = min(sq.nq - 1, (r0 + kRows - 1) / G);
  int kv_end = p.causal ? min(sq.nk, t_last + 1 + sq.nk - sq.nq) : sq.nk;
  kv_end = max(kv_end, 0);
  int chunk = (kv_end + p.splits - 1) / p.splits;
  chunk = (chunk + DECODE_BK - 1) / DECODE_BK * DECODE_BK;
  const int k_begin = min(split * chunk, kv_end), k_stop = min(kv_end, k_begin + chunk);
  const int nblocks = (k_stop - k_begin + DECODE_BK - 1) / DECODE_BK;

  if (!early) decode_load_q<T, kD, kRows, DECODE_THREADS>(p, sq, hk, r0, R, qs);

  // Key tid of block blk as (batch or page, row); row -1: past the split
  // (zero-filled). Thread tid < 64 reads one block table entry.
  auto entry_of = [&](int blk, int *tb, int *row) {
    const int j = k_begin + blk * DECODE_BK + tid;
    int64_t t = 0;
    *row = -1;
    if (tid < DECODE_BK && blk < nblocks && j < k_stop) decode_kv_at(p, b, j, &t, row);
    *tb = (int)t;
  };
  // Block blk's 64 (batch or page, row) pairs into slot blk % 2, one step
  // before the copies need them: each key row is looked up once per CTA, not
  // once per 16-byte chunk. The table is read one step before that again,
  // into registers (next_tb, next_row), so that no warp waits on the table
  // load inside a step (run 3: paged 86% against 98% contiguous when the
  // entry was loaded and stored in the same step).
  // DECODE_PATH_OFFSETS stores the row's element offset instead (K and V
  // share strides there; -1: past the split), so the copies add, not multiply.
  int next_tb, next_row;
  int64_t *offs = (int64_t *)rows; // [2][kBK], the pairs' bytes
  const int64_t head_off = (int64_t)hk * p.k_sh;
  auto block_offsets = [&](int blk) {
    if (tid < DECODE_BK && blk < nblocks) {
      if (kPath == DECODE_PATH_OFFSETS) {
        offs[(blk & 1) * DECODE_BK + tid] =
            next_row < 0 ? -1 : (int64_t)next_tb * p.k_sb + (int64_t)next_row * p.k_ss + head_off;
      } else {
        int *o = rows + ((blk & 1) * DECODE_BK + tid) * 2;
        o[0] = next_tb, o[1] = next_row;
      }
    }
    entry_of(blk + 1, &next_tb, &next_row);
  };
  // Unpaged K/V (LINEAR): key j's row is row0 + j of the sequence's base, so
  // the chunks walk fixed strides: no shared-memory lookup and no 64-bit
  // multiply per chunk on the copy-issue path (run 9: at one CTA per SM the
  // LOOKUP path's issue cost showed; 6 stages with it 29.7 us at B=16 KV=1k,
  // with LINEAR 23.9).
  const int64_t kv_row0 = p.kv_kind == DECODE_KV_PACKED ? p.kv_off[b] : 0;
  const int64_t kv_tb = p.kv_kind == DECODE_KV_PACKED ? 0 : b;
  const T *klin = kgp + kv_tb * p.k_sb + hk * p.k_sh + (kv_row0 + k_begin + lr0) * p.k_ss + lch * 8;
  const T *vlin = vgp + kv_tb * p.v_sb + hk * p.v_sh + (kv_row0 + k_begin + lr0) * p.v_ss + lch * 8;
  // Issues block blk's copies (offsets ready and visible after a barrier).
  auto load_block = [&](int blk) {
    if (kPath == DECODE_PATH_LINEAR && blk < nblocks) {
      // rows r < left are keys
      linear_copy(klin, vlin, blk, k_stop - (k_begin + blk * DECODE_BK) - lr0);
    } else if (kPath == DECODE_PATH_OFFSETS && blk < nblocks) {
      T *ks = ring + (blk % kStages) * 2 * kTile, *vs = ks + kTile;
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
    } else if (blk < nblocks) {
      T *ks = ring + (blk % kStages) * 2 * kTile, *vs = ks + kTile;
      const int *o = rows + (blk & 1) * DECODE_BK * 2;
      for (int c = tid; c < DECODE_BK * kChunks; c += DECODE_THREADS) {
        const int r = c / kChunks, ch = c % kChunks;
        const int64_t tb = o[2 * r];
        const int row = o[2 * r + 1];
        const bool ok = row >= 0;
        const int64_t ko = tb * p.k_sb + hk * p.k_sh + (int64_t)row * p.k_ss + ch * 8;
        const int64_t vo = tb * p.v_sb + hk * p.v_sh + (int64_t)row * p.v_ss + ch * 8;
        const int at = fused_swz<DECODE_BK, kD>(r, ch);
        fused_cp_async16(fused_smem_addr(ks + at), ok ? kgp + ko : kgp, ok ? 16 : 0);
        fused_cp_async16(fused_smem_addr(vs + at), ok ? vgp + vo : vgp, ok ? 16 : 0);
      }
    }
    fused_cp_async_commit(); // empty groups keep the count uniform
  };
  // V rows of an early block past the length (this thread's own chunks,
  // landed after its wait): zero, before the barrier that publishes them.
  auto zero_tail = [&](int blk) {
    T *vs = ring + (blk % kStages) * 2 * kTile + kTile;
    const int left = k_stop - blk * DECODE_BK - lr0;
#pragma unroll
    for (int i = 0; i < DECODE_BK / kPass; i++)
      if (i * kPass >= left)
        *(uint4 *)(vs + fused_swz<DECODE_BK, kD>(lr0 + i * kPass, lch)) = make_uint4(0, 0, 0, 0);
  };
  if (!early) { // (the LINEAR path never reads the table slots)
    entry_of(0, &next_tb, &next_row);
    for (int s = 0; s < kStages - 1; s++) {
      block_offsets(s);
      __syncthreads();
      load_block(s);
    }
    block_offsets(kStages - 1); // used in step 0, after its barrier
  }
  DECODE_STAMP(1);
  DECODE_STAMP_AT(nblocks <= kStages - 1, 5);

  float o[kD / 8][4];
  for (int i = 0; i < kD / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  const int g4 = lane / 4, t4 = lane % 4;
  // Token and causal limit of this lane's two rows.
  int lim[2];
  for (int hh = 0; hh < 2; hh++) {
    const int rr = r0 + wm * 16 + g4 + 8 * hh, t = rr / G;
    lim[hh] = p.causal ? t + sq.nk - sq.nq : 0x7fffffff;
  }

  for (int blk = 0; blk < nblocks; blk++) {
    fused_cp_async_wait<kStages - 2>();
    if (early && blk < kStages - 1) zero_tail(blk);
    __syncthreads();
    DECODE_STAMP_AT(blk == 0, 2);
    DECODE_STAMP_AT(blk == 1, 4);
    DECODE_STAMP_AT(blk == nblocks - 1, 6);
    load_block(blk + kStages - 1);
    DECODE_STAMP_AT(blk + kStages - 1 == nblocks - 1, 5);
    if (!early) block_offsets(blk + kStages); // slot (blk + kStages) % 2: not the one just read
    const T *ks = ring + (blk % kStages) * 2 * kTile, *vs = ks + kTile;
    const int j0 = k_begin + blk * DECODE_BK, kw = kg * kNK;

    float s[kNK / 8][4];
    for (int i = 0; i < kNK / 8; i++) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; kk++) {
      uint32_t a[4];
      const int mi = lane / 8, r8 = lane % 8;
      fused_ldmatrix_x4(a, fused_smem_addr(qs + fused_swz<kRows, kD>(wm * 16 + (mi % 2) * 8 + r8,
                                                                      kk * 2 + mi / 2)));
#pragma unroll
      for (int n2 = 0; n2 < kNK / 16; n2++) {
        uint32_t bf[4];
        fused_ldmatrix_x4(bf, fused_smem_addr(ks + fused_swz<DECODE_BK, kD>(
                                                  kw + n2 * 16 + (mi / 2) * 8 + r8, kk * 2 + mi % 2)));
        fused_mma<T>(s[2 * n2], a, bf[0], bf[1]);
        fused_mma<T>(s[2 * n2 + 1], a, bf[2], bf[3]);
      }
    }
    // Mask, then the online softmax of this warp's 16 rows over its keys.
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int nt = 0; nt < kNK / 8; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int j = j0 + kw + nt * 8 + 2 * t4 + (e & 1), hh = e >> 1;
        const bool vis = j < k_stop && j <= lim[hh];
        s[nt][e] = vis ? s[nt][e] * p.scale_log2 : -INFINITY;
        mx[hh] = fmaxf(mx[hh], s[nt][e]);
      }
    float alpha[2], base[2], rs[2] = {0.f, 0.f};
#pragma unroll
    for (int hh = 0; hh < 2; hh++) {
      mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 1));
      mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(0xffffffffu, mx[hh], 2));
      base[hh] = mx[hh] == -INFINITY ? 0.f : mx[hh];
      alpha[hh] = fused_exp2(m[hh] - base[hh]);
      m[hh] = mx[hh];
    }
#pragma unroll
    for (int nt = 0; nt < kNK / 8; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        s[nt][e] = fused_exp2(s[nt][e] - base[e >> 1]);
        rs[e >> 1] += s[nt][e];
      }
    l[0] = l[0] * alpha[0] + rs[0], l[1] = l[1] * alpha[1] + rs[1];
#pragma unroll
    for (int i = 0; i < kD / 8; i++)
      o[i][0] *= alpha[0], o[i][1] *= alpha[0], o[i][2] *= alpha[1], o[i][3] *= alpha[1];
#pragma unroll
    for (int kk = 0; kk < kNK / 16; kk++) {
      uint32_t a[4] = {fused_pack2<T>(s[2 * kk][0], s[2 * kk][1]),
                       fused_pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                       fused_pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                       fused_pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      const int mi = lane / 8, r8 = lane % 8;
#pragma unroll
      for (int dn = 0; dn < kD / 16; dn++) {
        uint32_t bf[4];
        fused_ldmatrix_x4_trans(bf, fused_smem_addr(vs + fused_swz<DECODE_BK, kD>(
                                                        kw + kk * 16 + (mi % 2) * 8 + r8, dn * 2 + mi / 2)));
        fused_mma<T>(o[2 * dn], a, bf[0], bf[1]);
        fused_mma<T>(o[2 * dn + 1], a, bf[2], bf[3]);
      }
    }
    DECODE_STAMP_AT(blk == 0, 3);
  }
  DECODE_STAMP(7);
  fused_cp_async_wait<0>();
  __syncthreads(); // the rings are free: they become the fp32 merge buffer
  DECODE_STAMP(8);
#pragma unroll
  for (int hh = 0; hh < 2; hh++) {
    l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], 1);
    l[hh] += __shfl_xor_sync(0xffffffffu, l[hh], 2);
  }
  if (kMerge)
    decode_merge_write<T, kD, kWM>(p, sq, o, m, l, (float *)ring, split, hk, r0, R, wm, kg, lane);
  else
    decode_merge_write_serial<T, kD, kWM>(p, sq, o, m, l, (float *)ring, split, hk, r0, R, wm, kg,
                                          lane);
  DECODE_STAMP(9);
  DECODE_STAMP_END
}

// Merges the splits: one warp per (query row, head). The lanes read the
// splits' lse at once (lane l: splits l, l + 32, ...), then every split's
// partial row is summed with its weight, kS splits' loads (through L2)
// issued before any is used; a split that saw no key adds 0 x 0. Loading and
// summing one split at a time ran as a chain of L2 round trips: 7.4 us for
// 32 splits at B=1 KV=8k against 4.1 us (bench/serving/NOTES.md, runs 7-8).
// kEarly (ATTNPROF_DECODE_FIX bit 1): the first kS splits' partials are
// loaded before the lse (they do not depend on it: one L2 round trip less on
// the chain), and a split's weight comes from shared memory (one broadcast
// load) instead of four shuffles, which made 22 KB of code for a few
// hundred ns of work.
template <typename T, int kD, int kEarly>
__global__ void __launch_bounds__(DECODE_THREADS)
    decode_combine_kernel(const attn_decode_params p) {
  __shared__ float wsm[DECODE_THREADS / 32][DECODE_MAX_SPLITS];
  const int64_t prow = (int64_t)blockIdx.x * (DECODE_THREADS / 32) + threadIdx.x / 32;
  decode_pdl_wait();
  if (prow >= p.part_rows) return;
  decode_combine_row<T, kD, kEarly>(p, prow, threadIdx.x % 32, wsm[threadIdx.x / 32]);
}

// Raises the kernel's shared-memory limit and asks for the largest carveout
// (two 113 KB CTAs per SM need all 228 KB), for it and its combine, once per device.
template <typename T, int kD, int kWM, int kStages, int kPath>
attn_status decode_prepare(void) {
  static int smem_done[2][64], carve_done[64];
  constexpr int smem = decode_smem_bytes<kD, kWM, kStages>();
  const void *fn = (const void *)decode_fwd_kernel<T, kD, kWM, kStages, kPath, 1>;
  const void *fn0 = (const void *)decode_fwd_kernel<T, kD, kWM, kStages, kPath, 0>;
  int dev = 0;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return ATTN_STATUS_OK;
  if (!smem_done[0][dev])
    ATTN_CUDA_TRY(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  if (!smem_done[1][dev])
    ATTN_CUDA_TRY(cudaFuncSetAttribute(fn0, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  smem_done[0][dev] = smem_done[1][dev] = 1;
  if (carve_done[dev]) return ATTN_STATUS_OK;
  // The combine asks for the same split (it reads through L2, not L1), so
  // that under PDL its CTAs can start on SMs the split kernel still holds.
  const void *fns[4] = {fn, fn0, (const void *)decode_combine_kernel<T, kD, 1>,
                        (const void *)decode_combine_kernel<T, kD, 0>};
  for (int i = 0; i < 4; i++)
    ATTN_CUDA_TRY(cudaFuncSetAttribute(fns[i], cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
  carve_done[dev] = 1;
  return ATTN_STATUS_OK;
}

// One launch, with programmatic dependent launch when p.pdl (decode_pdl_wait).
static inline cudaError_t decode_launch_one(void (*fn)(const attn_decode_params), dim3 grid,
                                            int smem, const attn_decode_params &p,
                                            cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  cfg.gridDim = grid, cfg.blockDim = dim3(DECODE_THREADS), cfg.dynamicSmemBytes = (size_t)smem;
  cfg.stream = stream;
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr, cfg.numAttrs = p.pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, fn, p);
}

template <typename T, int kD, int kWM, int kStages, int kPath>
attn_status decode_run(const attn_decode_params &p, cudaStream_t stream) {
  constexpr int smem = decode_smem_bytes<kD, kWM, kStages>();
  attn_status st = decode_prepare<T, kD, kWM, kStages, kPath>();
  if (st) return st;
  dim3 grid((unsigned)(p.splits * p.row_groups), (unsigned)p.hkv, (unsigned)p.batch);
  cudaError_t e = decode_launch_one(p.fix & 1 ? decode_fwd_kernel<T, kD, kWM, kStages, kPath, 1>
                                              : decode_fwd_kernel<T, kD, kWM, kStages, kPath, 0>,
                                    grid, smem, p, stream);
  if (e != cudaSuccess) return attn_cuda_fail(e, "launch of decode_fwd_kernel");
  if (p.splits > 1) {
    const unsigned blocks = (unsigned)((p.part_rows + 3) / 4);
    e = decode_launch_one(p.fix & 2 ? decode_combine_kernel<T, kD, 1> : decode_combine_kernel<T, kD, 0>,
                          dim3(blocks), 0, p, stream);
    if (e != cudaSuccess) return attn_cuda_fail(e, "launch of decode_combine_kernel");
  }
  return ATTN_STATUS_OK;
}

// The occupancy API counts the dynamic shared memory against the kernel's
// limit, so the limit is raised first.
template <typename T, int kD, int kWM, int kStages, int kPath>
int decode_occupancy(void) {
  int n = 0;
  if (decode_prepare<T, kD, kWM, kStages, kPath>()) return 1;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, decode_fwd_kernel<T, kD, kWM, kStages, kPath, 1>,
                                                    DECODE_THREADS,
                                                    decode_smem_bytes<kD, kWM, kStages>()) != cudaSuccess)
    return 1;
  return n > 0 ? n : 1;
}

#define DECODE_INSTANCE_P(T, D, WM, S, P)                                                     \
  template attn_status decode_run<T, D, WM, S, P>(const attn_decode_params &, cudaStream_t); \
  template int decode_occupancy<T, D, WM, S, P>(void);
#define DECODE_INSTANCE_S(T, D, WM, S)           \
  DECODE_INSTANCE_P(T, D, WM, S, DECODE_PATH_LOOKUP) \
  DECODE_INSTANCE_P(T, D, WM, S, DECODE_PATH_LINEAR) \
  DECODE_INSTANCE_P(T, D, WM, S, DECODE_PATH_OFFSETS)
#define DECODE_INSTANCE(T, D, WM) DECODE_INSTANCE_S(T, D, WM, decode_cfg<D>::kStages)

#endif
