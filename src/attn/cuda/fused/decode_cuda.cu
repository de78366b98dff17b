// flash's path for several sequences (attn_seqs): the split-KV decode kernel
// (decode_kernel.cuh) for decode, chunked prefill against a paged or
// contiguous cache, and packed variable-length prefill. One selector
// (decode_pick) answers both "is it taken?" and "which instance runs".
//
// The split count follows from the grid the problem already has (B x Hkv x
// row groups CTAs) and the SM count: the fewest splits whose last wave is at
// least 95% full compared with the best choice, at most 128 splits. The
// waves are counted at one CTA per SM, each split at least 64 keys, for
// unpaged K/V (B=16 x 8 KV heads: one split, B=1: 16) and short paged chains;
// at the instance's occupancy, each split at least 256 keys, otherwise
// (decode_plan). One split writes out directly; more write fp32 partials
// into the context's scratch and a combine kernel merges them.
//
// For the bench's A/B (bench/serving/NOTES.md), read per call:
// ATTNPROF_DECODE_SPLITS=n forces the split count (1..128, at most one per
// 64 keys); ATTNPROF_DECODE_MIN_KEYS=n sets the fewest keys per split the
// policy takes (64..2^20; default 256, 64 at one CTA per SM);
// ATTNPROF_DECODE_LOOKUP=1 takes runs 1-8's copy path and split policy;
// ATTNPROF_DECODE_DEEP=1 the deep-ring instance (D128, 16 rows);
// ATTNPROF_DECODE_FIX=n picks the split kernel's end and start forms (bits:
// decode_params.h; default 11, run 19: the merge by 4 columns, no early start);
// ATTNPROF_DECODE_PDL=1 launches with programmatic dependent launch on sm_90+
// (decode_kernel.cuh). Off by default: a kernel launched early has its trace
// span include its wait, so this tool's own device_us would overstate it.
// ATTNPROF_DECODE_CLUSTER=0 keeps small grids on the split + combine kernels
// instead of the cluster kernel (decode_cluster.cuh; cluster_plan); with it,
// ATTNPROF_DECODE_SPLITS=2/4/8/16 forces the cluster size.
// ATTNPROF_DECODE_CL_BULK=0/1 has the cluster kernel copy K/V by 16-byte
// cp.async / one bulk copy a row (default: cp.async for unpaged K/V, bulk for
// pages; run 14), ATTNPROF_DECODE_CL_RELAX=0 gives its last cluster barrier
// the release form (default relaxed: run 15), ATTNPROF_DECODE_CL_WIDE=0 takes
// run 14's cross-CTA merge (16 threads at R = 4, each loading from all C
// CTAs in turn) instead of one remote load a thread (NOTES.md run 15),
// ATTNPROF_DECODE_CL_VHALF=1 copies its V in two cp.async groups (the rows
// of each warp's first half of slices, then the rest) and runs P V on the
// first while the second lands (run 18: slower, NOTES.md).
// ATTNPROF_DECODE_CL_COLS=1 splits its P V by columns (each warp all keys,
// kD / 8 columns, no merge between warps) instead of by keys (each warp its
// keys, all columns, then the warps' merge through shared memory; default:
// the column split measured 0.4-0.7 us slower, NOTES.md run 17).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h> // cuda_ctx.h's C++ headers, outside the extern "C" below
extern "C" {             // cuda_ctx.h is a C header without a C++ guard
#include "attn/cuda/baselines/cuda_ctx.h"
}
#include "attn/cuda/fused/decode_cuda.h"
#include "attn/cuda/fused/decode_launch.h"
#include "attn/cuda/baselines/seqs_gather.h"
#include "attn/seqs.h"

typedef attn_status (*decode_fn)(const attn_decode_params &, cudaStream_t);
typedef int (*decode_occ_fn)(void);

// Fewest keys per split: 256 at the occupancy's count (runs 1-8), one step
// of 64 at one CTA per SM (run 10: B=1 KV=2k 16 splits 12.6 us against 8
// splits of 256 keys 13.0, KV=1k 11.9 against 12.9, paged alike).
#define DECODE_MIN_SPLIT_KEYS 256
#define DECODE_MIN_SPLIT_KEYS_PER_SM 64
#define DECODE_DENSE_MIN_Q 128 // query rows per sequence from which prefill runs dense

// An integer knob from the environment, dflt when unset or out of [lo, hi].
static int decode_knob(const char *name, int dflt, int lo, int hi) {
  const char *v = getenv(name);
  char *end;
  long n = v && *v ? strtol(v, &end, 10) : dflt;
  return v && *v && (*end || n < lo || n > hi) ? dflt : (int)n;
}

// 16 * kWM query rows per CTA: 1, 2 or 4 row atoms for G * max_q rows.
static int rows_atoms(int64_t rows) { return rows <= 16 ? 1 : rows <= 32 ? 2 : 4; }

#define DECODE_PATH(T, D, WM, S, P)                                                      \
  do {                                                                                   \
    *occ = decode_occupancy<T, D, WM, S, P>;                                             \
    return decode_run<T, D, WM, S, P>;                                                   \
  } while (0)
#define DECODE_ONE(T, D, WM, S)                                                          \
  do {                                                                                   \
    if (path == DECODE_PATH_LINEAR) DECODE_PATH(T, D, WM, S, DECODE_PATH_LINEAR);        \
    if (path == DECODE_PATH_OFFSETS) DECODE_PATH(T, D, WM, S, DECODE_PATH_OFFSETS);      \
    DECODE_PATH(T, D, WM, S, DECODE_PATH_LOOKUP);                                        \
  } while (0)
#define DECODE_CASE(T, D)                                                                \
  switch (wm) {                                                                          \
  case 1: DECODE_ONE(T, D, 1, decode_cfg<D>::kStages);                                   \
  case 2: DECODE_ONE(T, D, 2, decode_cfg<D>::kStages);                                   \
  default: DECODE_ONE(T, D, 4, decode_cfg<D>::kStages);                                  \
  }

// The deep-ring instance exists for D128 with one row atom (decode_launch.h).
static int have_deep(int64_t d, int wm) { return d == 128 && wm == 1; }

// path: the copies' addressing (DECODE_PATH_*, decode_launch.h).
static decode_fn decode_instance(int bf, int64_t d, int wm, int deep, int path,
                                 decode_occ_fn *occ) {
  if (deep && have_deep(d, wm)) {
    if (bf) DECODE_ONE(__nv_bfloat16, 128, 1, DECODE_DEEP_STAGES);
    DECODE_ONE(__half, 128, 1, DECODE_DEEP_STAGES);
  }
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
    snprintf(why, len, "flash_cuda takes several sequences in bf16 and f16, got %s: math takes "
             "f32 (pages gathered)", attn_dtype_name(a->q.dtype));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (d != 64 && d != 128 && d != 256) {
    snprintf(why, len, "flash_cuda's decode kernel takes head dims 64, 128, 256 for several "
             "sequences, got D=%lld: math takes any D", (long long)d);
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
    snprintf(why, len, "flash_cuda takes up to 65535 sequences and KV heads (grid z/y), got "
             "B=%lld Hkv=%lld", (long long)a->seqs->batch, (long long)attn_heads_kv(a));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return attn_fused_device_ok(a, "flash_cuda", why, len);
}

// min_keys: the fewest keys per split (ATTNPROF_DECODE_MIN_KEYS overrides).
static int pick_splits(int64_t base, int64_t slots, int64_t max_kv, int min_keys) {
  int64_t most = max_kv / decode_knob("ATTNPROF_DECODE_MIN_KEYS", min_keys, 64, 1 << 20);
  most = most < 1 ? 1 : most > DECODE_MAX_SPLITS ? DECODE_MAX_SPLITS : most;
  const int64_t forced = decode_knob("ATTNPROF_DECODE_SPLITS", 0, 1, DECODE_MAX_SPLITS);
  if (forced) {
    const int64_t cap = (max_kv + 63) / 64;
    return (int)(forced < cap ? forced : cap < 1 ? 1 : cap);
  }
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
// and V pools have the same strides, else LOOKUP. ATTNPROF_DECODE_LOOKUP=1
// takes LOOKUP everywhere, with runs 1-8's split policy (bench A/B).
static int pick_path(const attn_decode_params *p) {
  if (decode_knob("ATTNPROF_DECODE_LOOKUP", 0, 0, 1)) return DECODE_PATH_LOOKUP;
  if (p->kv_kind != DECODE_KV_PAGED) return DECODE_PATH_LINEAR;
  return p->k_sb == p->v_sb && p->k_sh == p->v_sh && p->k_ss == p->v_ss ? DECODE_PATH_OFFSETS
                                                                       : DECODE_PATH_LOOKUP;
}

typedef int (*decode_fit_fn)(int, int);

// bulk: K/V rows by bulk copies (decode_cluster.cuh's kBulk).
static decode_fn cluster_instance(int bf, int64_t d, int bulk, decode_fit_fn *fit) {
#define DECODE_CL(T, D)                                                                    \
  do {                                                                                     \
    *fit = bulk ? decode_cluster_fit<T, D, 1> : decode_cluster_fit<T, D, 0>;               \
    return bulk ? decode_cluster_run<T, D, 1> : decode_cluster_run<T, D, 0>;               \
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

// Bulk copies for pages, cp.async for unpaged K/V: what measured faster in
// each (NOTES.md run 14, call 2: B=1 KV=2k paged 12.6 -> 8.5 us with bulk,
// 1k 9.1 -> 7.3; contiguous 7.4 and 6.3 with cp.async against 8.2 and 6.9).
extern "C" int attn_decode_cuda_cluster_bulk(int paged) {
  return decode_knob("ATTNPROF_DECODE_CL_BULK", paged ? 1 : 0, 0, 1);
}

// P V by keys and the warps' merge (run 17: the column split measured
// slower, B=1 KV=2k 8.0-8.3 us against 7.4), or ATTNPROF_DECODE_CL_COLS.
extern "C" int attn_decode_cuda_cluster_cols(void) {
  return decode_knob("ATTNPROF_DECODE_CL_COLS", 0, 0, 1);
}

// V in one cp.async group (run 18: two groups, P V on the first half while
// the second lands, measured 0.3-0.4 us slower), or ATTNPROF_DECODE_CL_VHALF.
extern "C" int attn_decode_cuda_cluster_vhalf(void) {
  return decode_knob("ATTNPROF_DECODE_CL_VHALF", 0, 0, 1);
}

// The cluster kernel where the grid is small: sm_90, one row atom (G x new
// tokens <= 16), C >= 2 CTAs per (sequence, KV head), C the
// largest power of 2 <= 8 with B x Hkv x C <= the SMs and >= 64 keys a CTA,
// a CTA's keys in shared memory and every cluster running at once. Why: one
// kernel, no partials through global memory, no combine launch; measured
// (NOTES.md run 13, call 2) B=1 KV=2k 8.7 -> 7.4 us and KV=1k 8.0 -> 6.4 at
// C = 8, where C = 16 ran 7.8 and 6.7; paged K/V with bulk copies (run 14,
// call 1) 9.4 -> 8.5 and 8.3 -> 6.9. ATTNPROF_DECODE_CLUSTER=0: never;
// ATTNPROF_DECODE_SPLITS = 2..16 (a power of 2) forces C. Else NULL: the
// split + combine kernels.
#define DECODE_CLUSTER_MOST 8
static decode_fn cluster_plan(const attn_args *a, const attn_seqs_view *v, attn_decode_params *p,
                              int wm, int64_t sms) {
  if (!attn_decode_cuda_cluster_capable(a->q.device) || wm != 1 || p->row_groups != 1 ||
      !decode_knob("ATTNPROF_DECODE_CLUSTER", 1, 0, 1))
    return NULL;
  const int64_t base = (int64_t)p->batch * p->hkv;
  const int forced = decode_knob("ATTNPROF_DECODE_SPLITS", 0, 1, DECODE_MAX_SPLITS);
  if (forced && (forced < 2 || forced > 16 || (forced & (forced - 1)))) return NULL;
  int c = forced ? forced : DECODE_CLUSTER_MOST;
  while (!forced && c >= 2 && (base * c > sms || (int64_t)c * 64 > v->max_kv)) c /= 2;
  decode_fit_fn fit = NULL;
  decode_fn fn = cluster_instance(a->q.dtype == ATTN_DTYPE_BF16, v->d,
                                  attn_decode_cuda_cluster_bulk(p->kv_kind == DECODE_KV_PAGED), &fit);
  p->cl_relax = decode_knob("ATTNPROF_DECODE_CL_RELAX", 1, 0, 1);
  p->cl_wide = decode_knob("ATTNPROF_DECODE_CL_WIDE", 1, 0, 1);
  p->cl_cols = attn_decode_cuda_cluster_cols();
  p->cl_vhalf = attn_decode_cuda_cluster_vhalf();
  for (; fn && c >= 2; c /= 2) {
    const int64_t chunk = ((v->max_kv + c - 1) / c + 15) / 16 * 16;
    if (chunk > DECODE_CLUSTER_KEYS(v->d)) return NULL; // fewer CTAs only lengthen it
    if (fit(c, (int)chunk) >= base) return p->splits = c, p->cl_chunk = (int)chunk, fn;
    if (forced) return NULL;
  }
  return NULL;
}

// The instance, its row groups and its split count for a filled p. Splits
// are counted against one CTA per SM on LINEAR (run 9: at B=16 KV=1k one
// split of 128 CTAs ran 23.7 us, two splits on 256 CTAs two per SM 29.6,
// partials and combine included; B=16 KV=32k 467 against 482 us), against
// the instance's occupancy on LOOKUP (runs 1-8). Paged K/V at one CTA per SM
// read at 74-88% of the copy rate on long chains (run 9, call 2: B=16
// KV=32k 621 us against 490), so OFFSETS keeps that count only where it
// agrees with the occupancy's or leaves a CTA at most DECODE_SHORT_CHAIN keys
// (B=16 KV=1k 30.7 against 33.1 us); elsewhere paged K/V run LOOKUP at the
// occupancy's count, the code and policy measured there. At one CTA per SM
// a split may be one step of 64 keys (B=1 KV=1k: 16 splits, run 10).
// ATTNPROF_DECODE_DEEP=1 takes the deep-ring instance where it exists.
#define DECODE_SHORT_CHAIN 1024
static decode_fn decode_plan(const attn_args *a, const attn_seqs_view *v, attn_decode_params *p) {
  const int wm = rows_atoms((int64_t)p->group * v->max_q);
  const int64_t rows = (int64_t)p->group * v->max_q;
  p->row_groups = (int)((rows + 16 * wm - 1) / (16 * wm));
  if (p->row_groups < 1) p->row_groups = 1;
  const struct cudaDeviceProp *pr = attn_cuda_props(a->q.device);
  const int64_t sms = pr ? pr->multiProcessorCount : 100;
  const int64_t base = (int64_t)p->batch * p->hkv * p->row_groups;
  const int bf = a->q.dtype == ATTN_DTYPE_BF16, deep = decode_knob("ATTNPROF_DECODE_DEEP", 0, 0, 1);
  const int path = pick_path(p);
  p->pdl = pr && pr->major >= 9 && decode_knob("ATTNPROF_DECODE_PDL", 0, 0, 1);
  p->fix = decode_knob("ATTNPROF_DECODE_FIX", 11, 0, 15);
  if (path != DECODE_PATH_LOOKUP) {
    decode_fn cl = cluster_plan(a, v, p, wm, sms);
    if (cl) return cl;
  }
  decode_occ_fn occ = NULL;
  decode_fn fn = decode_instance(bf, v->d, wm, deep, path, &occ);
  if (!fn) return NULL;
  const int at_occ = pick_splits(base, sms * occ(), v->max_kv, DECODE_MIN_SPLIT_KEYS);
  if (path == DECODE_PATH_LOOKUP) return p->splits = at_occ, fn;
  p->splits = pick_splits(base, sms, v->max_kv, DECODE_MIN_SPLIT_KEYS_PER_SM);
  const int64_t chain = (v->max_kv + p->splits - 1) / p->splits;
  if (path == DECODE_PATH_OFFSETS && p->splits != at_occ && chain > DECODE_SHORT_CHAIN) {
    p->splits = at_occ;
    fn = decode_instance(bf, v->d, wm, deep, DECODE_PATH_LOOKUP, &occ);
  }
  return fn;
}

static attn_status decode_launch(attn_ctx *actx, const attn_args *a, const attn_seqs_view *v) {
  attn_decode_params p;
  fill_params(a, v, &p);
  decode_fn fn = decode_plan(a, v, &p);
  if (!fn) return attn_fail(ATTN_STATUS_UNSUPPORTED, "flash_cuda: no decode kernel for D=%lld",
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
  return fn(p, stream);
}

// Long query runs (prefill) over unpaged K/V go to the dense flash kernel,
// one launch per sequence on views of q, k, v and out (no copy), longest
// first, over the caller's stream and three side streams: it is the faster
// kernel there (bench/serving/NOTES.md), and the launches are few.
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
    return attn_cuda_seqs_forward_lanes(ctx, a, dense); // the flash kernels keep no state
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

extern "C" int attn_decode_cuda_splits(const attn_args *a, int *cluster) {
  attn_seqs_view v;
  if (cluster) *cluster = 0;
  if (attn_seqs_view_make(a, &v)) return -1;
  attn_decode_params p;
  fill_params(a, &v, &p);
  const int splits = decode_plan(a, &v, &p) ? p.splits : -1;
  if (cluster && splits > 0 && p.cl_chunk) *cluster = p.splits;
  attn_seqs_view_free(&v);
  return splits;
}
