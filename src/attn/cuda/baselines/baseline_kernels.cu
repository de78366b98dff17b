// The elementwise and row kernels of the CUDA baselines (naive,
// naive_inplace, math): scale, causal mask / bias, masked fill, softmax,
// upcast and downcast. Memory-bound by design: each is one pass over its
// buffer with 16-byte accesses where the row length allows, fp32 arithmetic
// whatever the storage dtype. Templates only specialize the storage type and
// the per-lane register count; every launcher is extern "C".
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include "attn/cuda/baselines/baseline_kernels.h"
#include "attn/cuda/common/cuda_common.h"

#define LOG2E 1.4426950408889634f

// ---- storage types ---------------------------------------------------------

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Element `off` of a buffer whose dtype is known only at run time (masks,
// strided inputs); the switch is uniform across a warp.
__device__ __forceinline__ float load_any(const void *p, attn_dtype dt, int64_t off) {
  switch (dt) {
    case ATTN_DTYPE_F32:
      return ((const float *)p)[off];
    case ATTN_DTYPE_F16:
      return __half2float(((const __half *)p)[off]);
    case ATTN_DTYPE_BF16:
      return __bfloat162float(((const __nv_bfloat16 *)p)[off]);
    default:
      return ((const uint8_t *)p)[off] != 0;
  }
}

__device__ __forceinline__ void store_any(void *p, attn_dtype dt, int64_t off, float v) {
  switch (dt) {
    case ATTN_DTYPE_F32:
      ((float *)p)[off] = v;
      break;
    case ATTN_DTYPE_F16:
      ((__half *)p)[off] = __float2half_rn(v);
      break;
    default:
      ((__nv_bfloat16 *)p)[off] = __float2bfloat16_rn(v);
      break;
  }
}

// V elements of T loaded or stored as one access (V * sizeof(T) bytes).
template <typename T, int V>
struct alignas(sizeof(T) * V) vec {
  T e[V];
};

// 16 bytes of T: one LDG.128 / STG.128.
template <typename T>
using pack16 = vec<T, 16 / sizeof(T)>;

// ---- row geometry and masks ------------------------------------------------

struct row_pos {
  int64_t b, h, i;
};

__device__ __forceinline__ row_pos row_of(const attn_cuda_rows &r, int64_t row) {
  row_pos p;
  p.i = row % r.sq;
  p.h = row / r.sq % r.hq;
  p.b = row / (r.sq * r.hq);
  return p;
}

// The caller's mask at (p, j) applied to score x: bool 0 hides (-inf), an
// additive value is added, and an additive -inf hides even a NaN score.
__device__ __forceinline__ float apply_user_mask(const attn_cuda_rows &r, row_pos p, int64_t j,
                                                 float x) {
  if (r.mask_kind == ATTN_MASK_NONE) return x;
  const int64_t *st = r.mask.st;
  float m =
      load_any(r.mask.data, r.mask.dtype, p.b * st[0] + p.h * st[1] + p.i * st[2] + j * st[3]);
  if (r.mask_kind == ATTN_MASK_BOOL) return m != 0.f ? x : -INFINITY;
  return m == -INFINITY ? m : x + m;
}

// What softmax adds before normalizing: math's causal bias, then the mask.
__device__ __forceinline__ float softmax_input(const attn_cuda_rows &r, row_pos p, int64_t j,
                                               float x) {
  if (r.causal_bias) x += r.causal_bias[p.i * r.sk + j];
  return apply_user_mask(r, p, j, x);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- scale -----------------------------------------------------------------

// Block 256 threads, grid-stride over 16-byte packs (V = 16/sizeof(T)) or,
// when n is not a multiple of the pack, single elements (V = 1). Every warp
// streams 512 contiguous bytes per step.
template <typename T, int V>
__global__ void __launch_bounds__(256) scale_kernel(T *x, int64_t n, float scale) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n / V; i += step) {
    if (V == 1) {
      x[i] = from_f<T>(to_f(x[i]) * scale);
    } else {
      pack16<T> p = reinterpret_cast<pack16<T> *>(x)[i];
#pragma unroll
      for (int e = 0; e < V; e++) p.e[e] = from_f<T>(to_f(p.e[e]) * scale);
      reinterpret_cast<pack16<T> *>(x)[i] = p;
    }
  }
}

// Enough blocks to fill every SM many times over; the loops stride past it.
static unsigned grid_for(int64_t items, int threads) {
  int64_t blocks = (items + threads - 1) / threads;
  const int64_t cap = 132 * 64;
  return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

template <typename T>
static attn_status scale_t(void *x, int64_t n, float scale, cudaStream_t s) {
  const int V = 16 / sizeof(T);
  if (n % V == 0 && (uintptr_t)x % 16 == 0)
    scale_kernel<T, V><<<grid_for(n / V, 256), 256, 0, s>>>((T *)x, n, scale);
  else scale_kernel<T, 1><<<grid_for(n, 256), 256, 0, s>>>((T *)x, n, scale);
  ATTN_CUDA_CHECK_LAUNCH("scale_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cuda_scale(void *x, attn_dtype dt, int64_t n, float scale,
                                       cudaStream_t s) {
  if (dt == ATTN_DTYPE_F32) return scale_t<float>(x, n, scale, s);
  if (dt == ATTN_DTYPE_F16) return scale_t<__half>(x, n, scale, s);
  return scale_t<__nv_bfloat16>(x, n, scale, s);
}

// ---- causal mask and bias --------------------------------------------------

// Block 256 threads, grid-stride over the Sq x Sk elements; one division per
// element is fine: the keep mask is built once per shape, the bias is Sq*Sk
// fp32 (4 MiB at S = 1024) against math's B*H*Sq*Sk passes.
__global__ void __launch_bounds__(256)
    causal_keep_kernel(uint8_t *keep, int64_t sq, int64_t sk, int64_t offset) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < sq * sk; e += step)
    keep[e] = e % sk <= e / sk + offset;
}

__global__ void __launch_bounds__(256)
    causal_bias_kernel(float *bias, int64_t sq, int64_t sk, int64_t offset) {
  int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < sq * sk; e += step)
    bias[e] = e % sk <= e / sk + offset ? 0.f : -INFINITY;
}

extern "C" attn_status attn_cuda_causal_keep(uint8_t *keep, int64_t sq, int64_t sk, int64_t offset,
                                             cudaStream_t s) {
  causal_keep_kernel<<<grid_for(sq * sk, 256), 256, 0, s>>>(keep, sq, sk, offset);
  ATTN_CUDA_CHECK_LAUNCH("causal_keep_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cuda_causal_bias(float *bias, int64_t sq, int64_t sk, int64_t offset,
                                             cudaStream_t s) {
  causal_bias_kernel<<<grid_for(sq * sk, 256), 256, 0, s>>>(bias, sq, sk, offset);
  ATTN_CUDA_CHECK_LAUNCH("causal_bias_kernel");
  return ATTN_STATUS_OK;
}

// ---- masked fill -----------------------------------------------------------

template <int V>
__device__ __forceinline__ void load_keep(const uint8_t *p, uint8_t (&b)[V]) {
  if constexpr (V == 8) {
    uint2 u = *reinterpret_cast<const uint2 *>(p);
    memcpy(b, &u, 8);
  } else if constexpr (V == 4) {
    uint32_t u = *reinterpret_cast<const uint32_t *>(p);
    memcpy(b, &u, 4);
  } else {
    for (int e = 0; e < V; e++) b[e] = p[e];
  }
}

// The causal fill alone writes -inf where the keep mask is 0 and reads no
// score: a pack wholly visible is skipped, one wholly hidden is one 16-byte
// store, and only the packs the diagonal cuts store element by element. For
// causal attention that is half the scores written once, instead of all of
// them read and written (the same result as a read-modify-write fill).
template <typename T, int V>
__device__ __forceinline__ void causal_fill_pack(T *x, const uint8_t (&k)[V]) {
  int hidden = 0;
#pragma unroll
  for (int e = 0; e < V; e++) hidden += !k[e];
  if (hidden == 0) return;
  const T ninf = from_f<T>(-INFINITY);
  if (V > 1 && hidden == V) {
    pack16<T> p;
#pragma unroll
    for (int e = 0; e < V; e++) p.e[e] = ninf;
    *reinterpret_cast<pack16<T> *>(x) = p;
    return;
  }
#pragma unroll
  for (int e = 0; e < V; e++)
    if (!k[e]) x[e] = ninf;
}

// One block per score row (grid.x = B*Hq*Sq), blockDim.x threads (a multiple
// of 32, at most 128) walking the row in V-element packs: warp w covers 32*V
// consecutive keys per step, reading the cached keep-mask bytes of the same
// keys. The row's (b, h, i) is computed once per block, not per element.
template <typename T, int V>
__global__ void __launch_bounds__(128) masked_fill_kernel(attn_cuda_rows r) {
  int64_t row = blockIdx.x;
  row_pos p = row_of(r, row);
  T *x = (T *)r.scores + row * r.sk;
  const uint8_t *keep = r.causal_keep ? r.causal_keep + p.i * r.sk : nullptr;
  for (int64_t j0 = (int64_t)threadIdx.x * V; j0 < r.sk; j0 += (int64_t)blockDim.x * V) {
    uint8_t k[V];
    if (keep) load_keep<V>(keep + j0, k);
    if (keep && r.mask_kind == ATTN_MASK_NONE) {
      causal_fill_pack<T, V>(x + j0, k);
      continue;
    }
    vec<T, V> v = *reinterpret_cast<vec<T, V> *>(x + j0);
#pragma unroll
    for (int e = 0; e < V; e++) {
      float s = to_f(v.e[e]);
      s = keep && !k[e] ? -INFINITY : apply_user_mask(r, p, j0 + e, s);
      v.e[e] = from_f<T>(s);
    }
    *reinterpret_cast<vec<T, V> *>(x + j0) = v;
  }
}

template <typename T>
static attn_status fill_t(const attn_cuda_rows *r, cudaStream_t s) {
  const int V = 16 / sizeof(T);
  int64_t rows = r->b * r->hq * r->sq;
  int vec = r->sk % V == 0 && (uintptr_t)r->scores % 16 == 0;
  int64_t per_row = vec ? r->sk / V : r->sk;
  int threads = per_row >= 128 ? 128 : (int)((per_row + 31) / 32 * 32);
  if (vec) masked_fill_kernel<T, V><<<(unsigned)rows, threads, 0, s>>>(*r);
  else masked_fill_kernel<T, 1><<<(unsigned)rows, threads, 0, s>>>(*r);
  ATTN_CUDA_CHECK_LAUNCH("masked_fill_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cuda_masked_fill(const attn_cuda_rows *r, cudaStream_t s) {
  if (r->dtype == ATTN_DTYPE_F32) return fill_t<float>(r, s);
  if (r->dtype == ATTN_DTYPE_F16) return fill_t<__half>(r, s);
  return fill_t<__nv_bfloat16>(r, s);
}

// ---- softmax ---------------------------------------------------------------

// exp of every element relative to the row max m. The plain softmax uses m
// as it is, so a fully masked row (m = -inf) turns NaN; the safe one uses 0
// there, so every term is exp(-inf) = 0 and the row becomes 0.
__device__ __forceinline__ float softmax_base(const attn_cuda_rows &r, float m) {
  return r.safe && m == -INFINITY ? 0.f : m;
}

__device__ __forceinline__ float softmax_inv(const attn_cuda_rows &r, float sum) {
  return r.safe && sum == 0.f ? 0.f : 1.f / sum;
}

__device__ __forceinline__ float softmax_lse(const attn_cuda_rows &r, float m, float sum) {
  return r.safe && m == -INFINITY ? -INFINITY : m + logf(sum);
}

// Block 128 threads = 4 warps, one row per warp: each lane holds CHUNKS
// 16-byte packs of its row in registers (pack c at key (lane + 32c) * V), so
// the row is read once and written once. Used when Sk is a multiple of the
// pack and at most 32 * V * 8 keys (2048 for 16-bit, 1024 for fp32).
template <typename T, int CHUNKS>
__global__ void __launch_bounds__(128) softmax_warp_kernel(attn_cuda_rows r, int64_t rows) {
  constexpr int V = 16 / sizeof(T);
  const int lane = threadIdx.x & 31;
  const int64_t row = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5);
  if (row >= rows) return;
  const row_pos p = row_of(r, row);
  pack16<T> *x = reinterpret_cast<pack16<T> *>((T *)r.scores + row * r.sk);
  const int nvec = (int)(r.sk / V);
  float v[CHUNKS][V];
  float m = -INFINITY;
#pragma unroll
  for (int c = 0; c < CHUNKS; c++) {
    int vi = lane + 32 * c;
    pack16<T> pk;
    if (vi < nvec) pk = x[vi];
#pragma unroll
    for (int e = 0; e < V; e++) {
      v[c][e] = vi < nvec ? softmax_input(r, p, (int64_t)vi * V + e, to_f(pk.e[e])) : -INFINITY;
      m = fmaxf(m, v[c][e]);
    }
  }
  m = warp_max(m);
  const float base = softmax_base(r, m);
  float sum = 0.f;
#pragma unroll
  for (int c = 0; c < CHUNKS; c++)
#pragma unroll
    for (int e = 0; e < V; e++) {
      v[c][e] = exp2f((v[c][e] - base) * LOG2E);
      if (lane + 32 * c < nvec) sum += v[c][e];
    }
  sum = warp_sum(sum);
  const float inv = softmax_inv(r, sum);
#pragma unroll
  for (int c = 0; c < CHUNKS; c++) {
    int vi = lane + 32 * c;
    if (vi >= nvec) continue;
    pack16<T> pk;
#pragma unroll
    for (int e = 0; e < V; e++) pk.e[e] = from_f<T>(v[c][e] * inv);
    x[vi] = pk;
  }
  if (lane == 0 && r.lse) r.lse[row] = softmax_lse(r, m, sum);
}

// Running (max, sum of exp relative to max) of one thread's elements. A NaN
// element makes the sum NaN, as the IEEE arithmetic of the reference does.
__device__ __forceinline__ void online_add(float &m, float &l, float x) {
  if (x > m) {
    l = l * exp2f((m - x) * LOG2E) + 1.f;
    m = x;
  } else if (x != -INFINITY) {
    l += exp2f((x - m) * LOG2E);
  }
}

// l relative to max M; an empty part (l == 0) adds 0 even when m is -inf.
__device__ __forceinline__ float rebase(float m, float l, float M) {
  return l == 0.f ? 0.f : l * exp2f((m - M) * LOG2E);
}

__device__ __forceinline__ void online_merge(float &m, float &l, float m2, float l2) {
  float M = fmaxf(m, m2);
  l = M == -INFINITY ? l + l2 : rebase(m, l, M) + rebase(m2, l2, M);
  m = M;
}

// Block 256 threads = 8 warps per row, for rows the warp kernel cannot hold
// (long, or not a multiple of the pack): pass 1 keeps a running (max, sum)
// per thread, merged across lanes by shuffles and across the 8 warps in
// shared memory; pass 2 re-reads the row (from L2 at these sizes) and
// writes exp(x - max) / sum.
template <typename T>
__global__ void __launch_bounds__(256) softmax_block_kernel(attn_cuda_rows r) {
  __shared__ float sm[8], sl[8];
  const int64_t row = blockIdx.x;
  const row_pos p = row_of(r, row);
  T *x = (T *)r.scores + row * r.sk;
  float m = -INFINITY, l = 0.f;
  for (int64_t j = threadIdx.x; j < r.sk; j += 256)
    online_add(m, l, softmax_input(r, p, j, to_f(x[j])));
  for (int o = 16; o > 0; o >>= 1)
    online_merge(m, l, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, l, o));
  if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = m, sl[threadIdx.x >> 5] = l;
  __syncthreads();
  m = sm[0], l = sl[0];
  for (int w = 1; w < 8; w++) online_merge(m, l, sm[w], sl[w]);
  // The plain softmax of a fully masked row sums exp(-inf - -inf) = NaN, as
  // the warp kernel does: NaN out and NaN lse, not -inf.
  if (!r.safe && m == -INFINITY) l = NAN;
  const float base = softmax_base(r, m), inv = softmax_inv(r, l);
  for (int64_t j = threadIdx.x; j < r.sk; j += 256)
    x[j] = from_f<T>(exp2f((softmax_input(r, p, j, to_f(x[j])) - base) * LOG2E) * inv);
  if (threadIdx.x == 0 && r.lse) r.lse[row] = softmax_lse(r, m, l);
}

template <typename T>
static attn_status softmax_t(const attn_cuda_rows *r, cudaStream_t s) {
  const int V = 16 / sizeof(T);
  int64_t rows = r->b * r->hq * r->sq, nvec = r->sk / V;
  unsigned warps_grid = (unsigned)((rows + 3) / 4);
  int fits = r->sk % V == 0 && (uintptr_t)r->scores % 16 == 0;
  if (fits && nvec <= 32) softmax_warp_kernel<T, 1><<<warps_grid, 128, 0, s>>>(*r, rows);
  else if (fits && nvec <= 64) softmax_warp_kernel<T, 2><<<warps_grid, 128, 0, s>>>(*r, rows);
  else if (fits && nvec <= 128) softmax_warp_kernel<T, 4><<<warps_grid, 128, 0, s>>>(*r, rows);
  else if (fits && nvec <= 256) softmax_warp_kernel<T, 8><<<warps_grid, 128, 0, s>>>(*r, rows);
  else softmax_block_kernel<T><<<(unsigned)rows, 256, 0, s>>>(*r);
  ATTN_CUDA_CHECK_LAUNCH("softmax_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cuda_softmax(const attn_cuda_rows *r, cudaStream_t s) {
  if (r->dtype == ATTN_DTYPE_F32) return softmax_t<float>(r, s);
  if (r->dtype == ATTN_DTYPE_F16) return softmax_t<__half>(r, s);
  return softmax_t<__nv_bfloat16>(r, s);
}

// ---- upcast / downcast -----------------------------------------------------

struct upcast_jobs {
  attn_cuda_upcast_job j[3];
};

// Block 32 x 8: warp y takes one (b, h, s) row at a time and its lanes walk
// the D elements (coalesced when the D stride is 1); grid.y picks the tensor
// (Q, K or V), grid.x strides over rows.
__global__ void __launch_bounds__(256) upcast_kernel(upcast_jobs jobs) {
  const attn_cuda_upcast_job job = blockIdx.y == 0   ? jobs.j[0]
                                   : blockIdx.y == 1 ? jobs.j[1]
                                                     : jobs.j[2];
  const int64_t *n = job.src.shape, *st = job.src.st;
  const int64_t rows = n[0] * n[1] * n[2];
  for (int64_t row = (int64_t)blockIdx.x * 8 + threadIdx.y; row < rows;
       row += (int64_t)gridDim.x * 8) {
    int64_t s = row % n[2], h = row / n[2] % n[1], b = row / (n[2] * n[1]);
    int64_t base = b * st[0] + h * st[1] + s * st[2];
    for (int64_t d = threadIdx.x; d < n[3]; d += 32)
      job.dst[row * n[3] + d] = load_any(job.src.data, job.src.dtype, base + d * st[3]);
  }
}

// Block 32 x 8 as upcast_kernel, in the other direction: contiguous fp32
// rows stored through dst's strides in its dtype.
__global__ void __launch_bounds__(256) downcast_kernel(const float *src, attn_cuda_view dst) {
  const int64_t *n = dst.shape, *st = dst.st;
  const int64_t rows = n[0] * n[1] * n[2];
  for (int64_t row = (int64_t)blockIdx.x * 8 + threadIdx.y; row < rows;
       row += (int64_t)gridDim.x * 8) {
    int64_t s = row % n[2], h = row / n[2] % n[1], b = row / (n[2] * n[1]);
    int64_t base = b * st[0] + h * st[1] + s * st[2];
    for (int64_t d = threadIdx.x; d < n[3]; d += 32)
      store_any((void *)dst.data, dst.dtype, base + d * st[3], src[row * n[3] + d]);
  }
}

extern "C" attn_status attn_cuda_upcast(const attn_cuda_upcast_job *jobs, int n_jobs,
                                        cudaStream_t s) {
  upcast_jobs all;
  int64_t most = 0;
  memset(&all, 0, sizeof all);
  for (int i = 0; i < n_jobs && i < 3; i++) {
    all.j[i] = jobs[i];
    int64_t rows = jobs[i].src.shape[0] * jobs[i].src.shape[1] * jobs[i].src.shape[2];
    most = rows > most ? rows : most;
  }
  upcast_kernel<<<dim3(grid_for(most, 8), (unsigned)n_jobs), dim3(32, 8), 0, s>>>(all);
  ATTN_CUDA_CHECK_LAUNCH("upcast_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_status attn_cuda_downcast(const float *src, const attn_tensor *dst,
                                          cudaStream_t s) {
  attn_cuda_view v = attn_cuda_view_of(dst);
  downcast_kernel<<<grid_for(v.shape[0] * v.shape[1] * v.shape[2], 8), dim3(32, 8), 0, s>>>(src, v);
  ATTN_CUDA_CHECK_LAUNCH("downcast_kernel");
  return ATTN_STATUS_OK;
}

extern "C" attn_cuda_view attn_cuda_view_of(const attn_tensor *t) {
  attn_cuda_view v;
  v.data = t->data;
  v.dtype = t->dtype;
  for (int i = 0; i < 4; i++) {
    v.shape[i] = t->shape[i];
    v.st[i] = t->shape[i] == 1 ? 0 : t->strides[i];
  }
  return v;
}
