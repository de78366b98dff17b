// flash's path for several sequences (attn_seqs): the split-KV decode kernel
// (decode_kernel.cuh) for decode, chunked prefill against a paged or
// contiguous cache, and packed variable-length prefill, or for small grids
// on sm_90 the cluster kernel (decode_cluster.cuh). One planner (decode_plan)
// picks the kernel, its instance and its split count.
//
// The split count follows from the grid the problem already has (B x Hkv x
// row groups CTAs) and the SM count: the fewest splits whose last wave is at
// least 95% full compared with the best choice, at most 128 splits. The
// waves are counted at one CTA per SM, each split at least 64 keys, for
// unpaged K/V (B=16 x 8 KV heads: one split, B=1: 16) and short paged chains;
// at the instance's occupancy, each split at least 256 keys, otherwise
// (decode_plan). One split writes out directly; more write fp32 partials
// into the context's scratch and a combine kernel merges them.
#include <math.h>
#include <stdio.h>

#include <cublas_v2.h>  // cuda_ctx.h's C++ headers, outside the extern "C" below
extern "C" {            // cuda_ctx.h is a C header without a C++ guard
#include "attn/cuda/baselines/cuda_ctx.h"
}
#include "attn/cuda/fused/decode_cuda.h"
#include "attn/cuda/fused/decode_launch.h"
#include "attn/cuda/baselines/seqs_gather.h"
#include "attn/seqs.h"

typedef attn_status (*decode_fn)(const attn_decode_params &, attn_ctx *, cudaStream_t);
typedef int (*decode_occ_fn)(attn_ctx *);

// Fewest keys per split: 256 at the occupancy's count, one step of 64 at
// one CTA per SM (there 16 splits of 128 keys beat 8 of 256 at B=1 KV=2k).
#define DECODE_MIN_SPLIT_KEYS 256
#define DECODE_MIN_SPLIT_KEYS_PER_SM 64
#define DECODE_DENSE_MIN_Q 128  // query rows per sequence from which prefill runs dense

// 16 * kWM query rows per CTA: 1, 2 or 4 row atoms for G * max_q rows.
static int rows_atoms(int64_t rows) { return rows <= 16 ? 1 : rows <= 32 ? 2 : 4; }

#define DECODE_PATH(T, D, WM, P)          \
  do {                                    \
    *occ = decode_occupancy<T, D, WM, P>; \
    return decode_run<T, D, WM, P>;       \
  } while (0)
#define DECODE_ONE(T, D, WM)                                                     \
  do {                                                                           \
    if (path == DECODE_PATH_LINEAR) DECODE_PATH(T, D, WM, DECODE_PATH_LINEAR);   \
    if (path == DECODE_PATH_OFFSETS) DECODE_PATH(T, D, WM, DECODE_PATH_OFFSETS); \
    DECODE_PATH(T, D, WM, DECODE_PATH_LOOKUP);                                   \
  } while (0)
#define DECODE_CASE(T, D)  \
  switch (wm) {            \
    case 1:                \
      DECODE_ONE(T, D, 1); \
    case 2:                \
      DECODE_ONE(T, D, 2); \
    default:               \
      DECODE_ONE(T, D, 4); \
  }

// path: the copies' addressing (DECODE_PATH_*, decode_launch.h).
static decode_fn decode_instance(int bf, int64_t d, int wm, int path, decode_occ_fn *occ) {
  if (bf) {
    if (d == 64) DECODE_CASE(__nv_bfloat16, 64)
    if (d == 128) DECODE_CASE(__nv_bfloat16, 128)
    if (d == 256) DECODE_CASE(__nv_bfloat16, 256)
  } else {
    if (d == 64) DECODE_CASE(__half, 64)
    if (d == 128) DECODE_CASE(__half, 128)
    if (d == 256) DECODE_CASE(__half, 256)
  }
  return NULL;
}

extern "C" attn_status attn_decode_cuda_why_not(const attn_args *a, char *why, size_t len) {
  char vwhy[160];
  const int64_t d = attn_head_dim(a);
  if (a->q.dtype != ATTN_DTYPE_BF16 && a->q.dtype != ATTN_DTYPE_F16) {
    snprintf(why, len,
             "flash_cuda takes several sequences in bf16 and f16, got %s: math takes "
             "f32 (pages gathered)",
             attn_dtype_name(a->q.dtype));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (d != 64 && d != 128 && d != 256) {
    snprintf(why, len,
             "flash_cuda's decode kernel takes head dims 64, 128, 256 for several "
             "sequences, got D=%lld: math takes any D",
             (long long)d);
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (!attn_fused_vector_ok(a, vwhy, sizeof vwhy)) {
    snprintf(why, len, "flash_cuda copies 16-byte rows: %s (math takes it)", vwhy);
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (a->lse && ((uintptr_t)a->lse & 3)) {
    snprintf(why, len, "flash_cuda: lse is not 4-byte aligned");
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (a->seqs->batch > 65535 || attn_heads_kv(a) > 65535) {
    snprintf(why, len,
             "flash_cuda takes up to 65535 sequences and KV heads (grid z/y), got "
             "B=%lld Hkv=%lld",
             (long long)a->seqs->batch, (long long)attn_heads_kv(a));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return attn_fused_device_ok(a, "flash_cuda", why, len);
}

// The fewest splits whose last wave is at least 95% as full as the best
// choice's; at least min_keys keys a split.
static int pick_splits(int64_t base, int64_t slots, int64_t max_kv, int min_keys) {
  int64_t most = max_kv / min_keys;
  most = most < 1 ? 1 : most > DECODE_MAX_SPLITS ? DECODE_MAX_SPLITS : most;
  double eff[DECODE_MAX_SPLITS + 1], best = 0;
  for (int64_t s = 1; s <= most; s++) {
    double waves = (double)(base * s) / (double)slots;
    eff[s] = waves / ceil(waves);
    best = eff[s] > best ? eff[s] : best;
  }
  for (int64_t s = 1; s <= most; s++)
    if (eff[s] >= 0.95 * best) return (int)s;
  return 1;
}

static void fill_params(const attn_args *a, const attn_seqs_view *v, attn_decode_params *p) {
  const attn_tensor *q = &a->q, *k = &a->k, *vt = &a->v, *o = &a->out;
  const attn_seqs *s = a->seqs;
  *p = attn_decode_params{};
  p->q = q->data, p->k = k->data, p->v = vt->data, p->o = o->data, p->lse = a->lse;
  p->q_sb = q->strides[0], p->q_sh = q->strides[1], p->q_ss = q->strides[2];
  p->k_sb = k->strides[0], p->k_sh = k->strides[1], p->k_ss = k->strides[2];
  p->v_sb = vt->strides[0], p->v_sh = vt->strides[1], p->v_ss = vt->strides[2];
  p->o_sb = o->strides[0], p->o_sh = o->strides[1], p->o_ss = o->strides[2];
  p->q_off = s->q_offsets, p->kv_off = s->kv_offsets, p->kv_len = s->kv_lens;
  p->table = s->block_table, p->table_stride = v->table_stride;
  p->batch = (int)v->batch, p->hq = (int)v->hq, p->hkv = (int)v->hkv;
  p->group = (int)(v->hq / v->hkv), p->q_rows = (int)v->q_rows, p->sk = (int)v->sk;
  p->page_size = (int)v->page_size;
  static const int kinds[] = {DECODE_KV_DENSE, DECODE_KV_PACKED, DECODE_KV_CACHE, DECODE_KV_PAGED};
  p->kv_kind = kinds[v->kv];
  p->causal = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT;
  p->scale_log2 = (float)(attn_scale_of(a) * 1.4426950408889634);
  p->part_rows = q->shape[0] * v->q_rows * v->hq;
}

// The copies' addressing: LINEAR for unpaged K/V, OFFSETS for pages whose K
// and V pools have the same strides, else LOOKUP.
static int pick_path(const attn_decode_params *p) {
  if (p->kv_kind != DECODE_KV_PAGED) return DECODE_PATH_LINEAR;
  return p->k_sb == p->v_sb && p->k_sh == p->v_sh && p->k_ss == p->v_ss ? DECODE_PATH_OFFSETS
                                                                        : DECODE_PATH_LOOKUP;
}

typedef int (*decode_fit_fn)(attn_ctx *, int, int);

// Bulk copies for pages (the page table read once a row, not once a 16-byte
// copy), cp.async for unpaged K/V: what measured faster in each.
static decode_fn cluster_instance(int bf, int64_t d, int paged, decode_fit_fn *fit) {
#define DECODE_CL(T, D)                                                       \
  do {                                                                        \
    *fit = paged ? decode_cluster_fit<T, D, 1> : decode_cluster_fit<T, D, 0>; \
    return paged ? decode_cluster_run<T, D, 1> : decode_cluster_run<T, D, 0>; \
  } while (0)
  if (bf && d == 64) DECODE_CL(__nv_bfloat16, 64);
  if (bf && d == 128) DECODE_CL(__nv_bfloat16, 128);
  if (bf && d == 256) DECODE_CL(__nv_bfloat16, 256);
  if (d == 64) DECODE_CL(__half, 64);
  if (d == 128) DECODE_CL(__half, 128);
  if (d == 256) DECODE_CL(__half, 256);
#undef DECODE_CL
  return NULL;
}

extern "C" int attn_decode_cuda_cluster_capable(int device) {
  const struct cudaDeviceProp *pr = attn_cuda_props(device);
  return pr && pr->major >= 9;
}

// The cluster kernel where the grid is small: sm_90, one row atom (G x new
// tokens <= 16), C >= 2 CTAs per (sequence, KV head), C the largest power of
// 2 <= 8 with B x Hkv x C <= the SMs and >= 64 keys a CTA, a CTA's keys in
// shared memory and every cluster running at once. Why: one kernel, no
// partials through global memory, no combine launch (B=1 KV=2k 8.7 -> 7.4 us
// at C = 8; C = 16 ran slower). Else NULL: the split + combine kernels.
#define DECODE_CLUSTER_MOST 8
static decode_fn cluster_plan(attn_ctx *ctx, const attn_args *a, const attn_seqs_view *v,
                              attn_decode_params *p, int wm, int64_t sms) {
  if (!attn_decode_cuda_cluster_capable(a->q.device) || wm != 1 || p->row_groups != 1) return NULL;
  const int64_t base = (int64_t)p->batch * p->hkv;
  int c = DECODE_CLUSTER_MOST;
  while (c >= 2 && (base * c > sms || (int64_t)c * 64 > v->max_kv)) c /= 2;
  decode_fit_fn fit = NULL;
  decode_fn fn =
      cluster_instance(a->q.dtype == ATTN_DTYPE_BF16, v->d, p->kv_kind == DECODE_KV_PAGED, &fit);
  for (; fn && c >= 2; c /= 2) {
    const int64_t chunk = ((v->max_kv + c - 1) / c + 15) / 16 * 16;
    if (chunk > DECODE_CLUSTER_KEYS(v->d)) return NULL;  // fewer CTAs only lengthen it
    if (fit(ctx, c, (int)chunk) >= base) return p->splits = c, p->cl_chunk = (int)chunk, fn;
  }
  return NULL;
}

// The instance, its row groups and its split count for a filled p. Splits
// are counted against one CTA per SM on LINEAR (at B=16 KV=1k one split of
// 128 CTAs beat two splits on 256 CTAs two per SM), against the instance's
// occupancy on LOOKUP. Paged K/V at one CTA per SM read below the copy rate
// on long chains, so OFFSETS keeps that count only where it agrees with the
// occupancy's or leaves a CTA at most DECODE_SHORT_CHAIN keys; elsewhere
// paged K/V run LOOKUP at the occupancy's count.
#define DECODE_SHORT_CHAIN 1024
static decode_fn decode_plan(attn_ctx *ctx, const attn_args *a, const attn_seqs_view *v,
                             attn_decode_params *p) {
  const int wm = rows_atoms((int64_t)p->group * v->max_q);
  const int64_t rows = (int64_t)p->group * v->max_q;
  p->row_groups = (int)((rows + 16 * wm - 1) / (16 * wm));
  if (p->row_groups < 1) p->row_groups = 1;
  const struct cudaDeviceProp *pr = attn_cuda_props(a->q.device);
  const int64_t sms = pr ? pr->multiProcessorCount : 100;
  const int64_t base = (int64_t)p->batch * p->hkv * p->row_groups;
  const int bf = a->q.dtype == ATTN_DTYPE_BF16;
  const int path = pick_path(p);
  if (path != DECODE_PATH_LOOKUP) {
    decode_fn cl = cluster_plan(ctx, a, v, p, wm, sms);
    if (cl) return cl;
  }
  decode_occ_fn occ = NULL;
  decode_fn fn = decode_instance(bf, v->d, wm, path, &occ);
  if (!fn) return NULL;
  const int at_occ = pick_splits(base, sms * occ(ctx), v->max_kv, DECODE_MIN_SPLIT_KEYS);
  if (path == DECODE_PATH_LOOKUP) return p->splits = at_occ, fn;
  p->splits = pick_splits(base, sms, v->max_kv, DECODE_MIN_SPLIT_KEYS_PER_SM);
  const int64_t chain = (v->max_kv + p->splits - 1) / p->splits;
  if (path == DECODE_PATH_OFFSETS && p->splits != at_occ && chain > DECODE_SHORT_CHAIN) {
    p->splits = at_occ;
    fn = decode_instance(bf, v->d, wm, DECODE_PATH_LOOKUP, &occ);
  }
  return fn;
}

static attn_status decode_launch(attn_ctx *actx, const attn_args *a, const attn_seqs_view *v) {
  attn_decode_params p;
  fill_params(a, v, &p);
  decode_fn fn = decode_plan(actx, a, v, &p);
  if (!fn)
    return attn_fail(ATTN_STATUS_UNSUPPORTED, "flash_cuda: no decode kernel for D=%lld",
                     (long long)v->d);
  cudaStream_t stream = (cudaStream_t)a->stream;
  if (p.splits > 1 && !p.cl_chunk) {
    attn_cuda_ctx *ctx;
    void *ws;
    size_t part = attn_cuda_align((size_t)(p.splits * p.part_rows * v->d) * 4);
    attn_status st = attn_cuda_ctx_get(actx, a->q.device, &ctx);
    if (!st) st = attn_cuda_ctx_begin(ctx, stream);
    if (!st) st = attn_cuda_ctx_scratch(ctx, part + (size_t)(p.splits * p.part_rows) * 4, &ws);
    if (st) return st;
    p.o_part = (float *)ws, p.lse_part = (float *)((char *)ws + part);
  }
  return fn(p, actx, stream);
}

// Long query runs (prefill) over unpaged K/V go to the dense flash kernel,
// one launch per sequence on views of q, k, v and out (no copy), longest
// first, over the caller's stream and three side streams: it is the faster
// kernel there, and the launches are few.
static int prefer_dense(const attn_seqs_view *v) {
  return v->kv != ATTN_KV_PAGED && v->max_q >= DECODE_DENSE_MIN_Q && v->batch <= 64;
}

extern "C" attn_status attn_decode_cuda_forward(attn_ctx *ctx, const attn_args *a,
                                                attn_cuda_dense_fn dense) {
  attn_seqs_view v;
  attn_status st = attn_seqs_view_make(a, &v);
  if (st) return st;
  if (dense && prefer_dense(&v)) {
    attn_seqs_view_free(&v);
    return attn_cuda_seqs_forward_lanes(ctx, a, dense);  // the flash kernels keep no state
  }
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess) prev = a->q.device;
  if (prev != a->q.device && cudaSetDevice(a->q.device) != cudaSuccess)
    st = attn_fail(ATTN_STATUS_NO_DEVICE, "flash_cuda: cannot use CUDA device %d", a->q.device);
  if (!st && v.total_q > 0) st = decode_launch(ctx, a, &v);
  if (prev != a->q.device) cudaSetDevice(prev);
  attn_seqs_view_free(&v);
  return st;
}

extern "C" int attn_decode_cuda_splits(attn_ctx *ctx, const attn_args *a, int *cluster) {
  attn_seqs_view v;
  if (cluster) *cluster = 0;
  if (attn_seqs_view_make(a, &v)) return -1;
  attn_decode_params p;
  fill_params(a, &v, &p);
  const int splits = decode_plan(ctx, a, &v, &p) ? p.splits : -1;
  if (cluster && splits > 0 && p.cl_chunk) *cluster = p.splits;
  attn_seqs_view_free(&v);
  return splits;
}
