// Several sequences through the S x S baselines on CUDA (seqs_gather.h):
// the per-sequence host loop, the page gather, the rows of sequences with no
// key, and the lse of packed queries put in place.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <cublas_v2.h>  // cuda_ctx.h's C++ headers, outside the extern "C" below
extern "C" {            // cuda_ctx.h is a C header without a C++ guard
#include "attn/cuda/baselines/cuda_ctx.h"
}

#include "attn/cuda/baselines/seqs_gather.h"
#include "attn/cuda/common/cuda_common.h"
#include "attn/seqs.h"

// dst [Hkv, nk, D] contiguous <- key j of the sequence whose block-table row
// is `pages`, one CTA per (key, head). E: the element's storage word.
template <typename E>
__global__ void gather_kv_pages_kernel(const E *pool, int64_t sb, int64_t sh, int64_t ss,
                                       int64_t sd, const int32_t *pages, int page_size, int nk,
                                       int d, E *dst) {
  const int j = blockIdx.x, h = blockIdx.y;
  const int64_t page = pages[j / page_size];
  const E *src = pool + page * sb + h * sh + (int64_t)(j % page_size) * ss;
  E *out = dst + ((int64_t)h * nk + j) * d;
  for (int c = threadIdx.x; c < d; c += blockDim.x) out[c] = src[c * sd];
}

// out rows (qb, h, q0 + t) of a sequence with no key: 0, lse -inf.
template <typename E>
__global__ void no_keys_kernel(E *o, int64_t sb, int64_t sh, int64_t ss, int64_t sd, int qb, int q0,
                               int d, float *lse, int hq, int q_rows) {
  const int t = blockIdx.x, h = blockIdx.y;
  E *row = o + qb * sb + h * sh + (int64_t)(q0 + t) * ss;
  for (int c = threadIdx.x; c < d; c += blockDim.x) row[c * sd] = E(0);
  if (lse && threadIdx.x == 0) lse[((int64_t)qb * hq + h) * q_rows + q0 + t] = -INFINITY;
}

// lse [Hq, total_q] at q0 <- tmp [Hq, nq].
__global__ void lse_place_kernel(float *lse, const float *tmp, int hq, int nq, int q0, int q_rows) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < hq * nq) lse[(int64_t)(i / nq) * q_rows + q0 + i % nq] = tmp[i];
}

static attn_status gather(const attn_args *a, const attn_seqs_view *v, int64_t b, int64_t nk,
                          void *kbuf, void *vbuf, cudaStream_t s) {
  const int32_t *pages = a->seqs->block_table + b * v->table_stride;  // device memory
  dim3 grid((unsigned)nk, (unsigned)v->hkv);
  const int threads = v->d < 256 ? (int)v->d : 256;
  const attn_tensor *k = &a->k, *vt = &a->v;
  if (attn_dtype_size(k->dtype) == 2) {
    gather_kv_pages_kernel<uint16_t><<<grid, threads, 0, s>>>(
        (const uint16_t *)k->data, k->strides[0], k->strides[1], k->strides[2], k->strides[3],
        pages, (int)v->page_size, (int)nk, (int)v->d, (uint16_t *)kbuf);
    gather_kv_pages_kernel<uint16_t><<<grid, threads, 0, s>>>(
        (const uint16_t *)vt->data, vt->strides[0], vt->strides[1], vt->strides[2], vt->strides[3],
        pages, (int)v->page_size, (int)nk, (int)v->d, (uint16_t *)vbuf);
  } else {
    gather_kv_pages_kernel<float><<<grid, threads, 0, s>>>(
        (const float *)k->data, k->strides[0], k->strides[1], k->strides[2], k->strides[3], pages,
        (int)v->page_size, (int)nk, (int)v->d, (float *)kbuf);
    gather_kv_pages_kernel<float><<<grid, threads, 0, s>>>(
        (const float *)vt->data, vt->strides[0], vt->strides[1], vt->strides[2], vt->strides[3],
        pages, (int)v->page_size, (int)nk, (int)v->d, (float *)vbuf);
  }
  ATTN_CUDA_CHECK_LAUNCH("gather_kv_pages_kernel");
  return ATTN_STATUS_OK;
}

static attn_status no_keys(const attn_args *a, const attn_seqs_view *v, int64_t qb, int64_t q0,
                           int64_t nq, cudaStream_t s) {
  const attn_tensor *o = &a->out;
  dim3 grid((unsigned)nq, (unsigned)v->hq);
  const int threads = v->d < 256 ? (int)v->d : 256;
  if (attn_dtype_size(o->dtype) == 2)
    no_keys_kernel<uint16_t><<<grid, threads, 0, s>>>(
        (uint16_t *)o->data, o->strides[0], o->strides[1], o->strides[2], o->strides[3], (int)qb,
        (int)q0, (int)v->d, a->lse, (int)v->hq, (int)v->q_rows);
  else
    no_keys_kernel<float><<<grid, threads, 0, s>>>((float *)o->data, o->strides[0], o->strides[1],
                                                   o->strides[2], o->strides[3], (int)qb, (int)q0,
                                                   (int)v->d, a->lse, (int)v->hq, (int)v->q_rows);
  ATTN_CUDA_CHECK_LAUNCH("no_keys_kernel");
  return ATTN_STATUS_OK;
}

typedef struct {
  void *kbuf, *vbuf;  // gathered pages, sized for the longest sequence (serial only)
  float *lse_tmp;     // [lanes][Hq, max_q] for packed queries
  int64_t lse_stride;
} seqs_bufs;

static attn_status run_seq(attn_ctx *ctx, const attn_args *a, const attn_seqs_view *v, int64_t b,
                           attn_cuda_dense_fn dense, const seqs_bufs *bufs, int lane,
                           cudaStream_t s) {
  int64_t nq = attn_seqs_nq(v, b), nk = attn_seqs_nk(v, b), qb, q0, tb, row;
  if (nq == 0) return ATTN_STATUS_OK;
  attn_seqs_q_at(v, b, 0, &qb, &q0);
  if (nk == 0) return no_keys(a, v, qb, q0, nq, s);
  attn_args d = attn_args_make(attn_seqs_rows_view(&a->q, qb, q0, nq), a->k, a->v,
                               attn_seqs_rows_view(&a->out, qb, q0, nq));
  d.causal = a->causal, d.scale = a->scale, d.stream = (void *)s;
  float *lse_tmp = bufs->lse_tmp ? bufs->lse_tmp + lane * bufs->lse_stride : NULL;
  if (a->lse) d.lse = v->q_packed ? lse_tmp : a->lse + attn_seqs_lse_at(v, b, 0, 0);
  attn_status st;
  if (v->kv == ATTN_KV_PAGED) {
    if ((st = gather(a, v, b, nk, bufs->kbuf, bufs->vbuf, s))) return st;
    d.k = attn_tensor_bhsd(bufs->kbuf, a->k.dtype, a->k.device, 1, v->hkv, nk, v->d);
    d.v = attn_tensor_bhsd(bufs->vbuf, a->v.dtype, a->v.device, 1, v->hkv, nk, v->d);
  } else {
    attn_seqs_kv_at(v, b, 0, &tb, &row);
    d.k = attn_seqs_rows_view(&a->k, tb, row, nk), d.v = attn_seqs_rows_view(&a->v, tb, row, nk);
  }
  if ((st = dense(ctx, &d))) return st;
  if (a->lse && v->q_packed) {
    const int n = (int)(v->hq * nq);
    lse_place_kernel<<<(n + 255) / 256, 256, 0, s>>>(a->lse, lse_tmp, (int)v->hq, (int)nq, (int)q0,
                                                     (int)v->q_rows);
    ATTN_CUDA_CHECK_LAUNCH("lse_place_kernel");
  }
  return ATTN_STATUS_OK;
}

// Sequence indices by query x key rows, largest first (insertion sort: the
// batches that take this path are small).
static void order_by_work(const attn_seqs_view *v, int64_t *order) {
  for (int64_t b = 0; b < v->batch; b++) {
    const int64_t w = attn_seqs_nq(v, b) * attn_seqs_nk(v, b);
    int64_t i = b;
    for (; i > 0 && attn_seqs_nq(v, order[i - 1]) * attn_seqs_nk(v, order[i - 1]) < w; i--)
      order[i] = order[i - 1];
    order[i] = b;
  }
}

// The sequences round `lanes` streams (lane 0: the caller's s), forked and
// joined by the side streams' events; every lane is joined, even on error.
static attn_status run_lanes(attn_ctx *ctx, const attn_args *a, const attn_seqs_view *v,
                             attn_cuda_dense_fn dense, const seqs_bufs *bufs, attn_cuda_ctx *c,
                             int lanes, cudaStream_t s) {
  ATTN_CUDA_TRY(cudaEventRecord(c->lane_go, s));
  for (int i = 1; i < lanes; i++)
    ATTN_CUDA_TRY(cudaStreamWaitEvent(c->lanes[i - 1], c->lane_go, 0));
  int64_t *order = (int64_t *)malloc((size_t)v->batch * sizeof *order);
  attn_status st =
      order ? ATTN_STATUS_OK
            : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for the sequence order");
  if (order) order_by_work(v, order);
  for (int64_t k = 0; !st && k < v->batch; k++) {
    const int lane = (int)(k % lanes);
    st = run_seq(ctx, a, v, order[k], dense, bufs, lane, lane ? c->lanes[lane - 1] : s);
  }
  for (int i = 1; i < lanes; i++) {
    cudaError_t err = cudaEventRecord(c->lane_done[i - 1], c->lanes[i - 1]);
    if (err == cudaSuccess) err = cudaStreamWaitEvent(s, c->lane_done[i - 1], 0);
    if (err != cudaSuccess && !st) st = attn_cuda_fail(err, "cudaStreamWaitEvent (join)");
  }
  free(order);
  return st;
}

// 1 + ATTN_CUDA_LANES when the side streams can be had and the stream is
// not being captured, else 1 (serial: still correct, only slower).
static int lanes_for(attn_ctx *ctx, const attn_args *a, attn_cuda_ctx **c) {
  cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing((cudaStream_t)a->stream, &cap) != cudaSuccess ||
      cap != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return 1;
  }
  if (attn_cuda_ctx_get(ctx, a->q.device, c) || attn_cuda_ctx_lanes(*c)) {
    cudaGetLastError();
    return 1;
  }
  return 1 + ATTN_CUDA_LANES;
}

static attn_status seqs_forward(attn_ctx *ctx, const attn_args *a, attn_cuda_dense_fn dense,
                                int want_lanes) {
  attn_seqs_view v;
  attn_status st = attn_seqs_view_make_host(a, &v);
  if (st) return st;
  cudaStream_t s = (cudaStream_t)a->stream;
  attn_cuda_ctx *c = NULL;
  const int lanes = want_lanes && v.kv != ATTN_KV_PAGED && v.batch > 1 ? lanes_for(ctx, a, &c) : 1;
  seqs_bufs bufs = {NULL, NULL, NULL, v.hq * v.max_q};
  size_t kv_bytes = (size_t)(v.max_kv * v.hkv * v.d) * attn_dtype_size(a->k.dtype);
  cudaError_t err = cudaSuccess;
  if (!st && v.kv == ATTN_KV_PAGED && kv_bytes) {
    err = cudaMallocAsync(&bufs.kbuf, kv_bytes, s);
    if (err == cudaSuccess) err = cudaMallocAsync(&bufs.vbuf, kv_bytes, s);
  }
  if (!st && err == cudaSuccess && a->lse && v.q_packed)
    err = cudaMallocAsync((void **)&bufs.lse_tmp, (size_t)(lanes * bufs.lse_stride) * 4 + 4, s);
  if (!st && err != cudaSuccess) st = attn_cuda_fail(err, "cudaMallocAsync (seqs)");
  if (!st && lanes > 1) {
    int prev = c->device;  // the side streams and events belong to c's device
    if (cudaGetDevice(&prev) != cudaSuccess || prev != c->device) cudaSetDevice(c->device);
    st = run_lanes(ctx, a, &v, dense, &bufs, c, lanes, s);
    if (prev != c->device) cudaSetDevice(prev);
  } else {
    for (int64_t b = 0; !st && b < v.batch; b++) st = run_seq(ctx, a, &v, b, dense, &bufs, 0, s);
  }
  if (bufs.kbuf) cudaFreeAsync(bufs.kbuf, s);
  if (bufs.vbuf) cudaFreeAsync(bufs.vbuf, s);
  if (bufs.lse_tmp) cudaFreeAsync(bufs.lse_tmp, s);
  attn_seqs_view_free(&v);
  return st;
}

extern "C" attn_status attn_cuda_seqs_forward(attn_ctx *ctx, const attn_args *a,
                                              attn_cuda_dense_fn dense) {
  return seqs_forward(ctx, a, dense, 0);
}

extern "C" attn_status attn_cuda_seqs_forward_lanes(attn_ctx *ctx, const attn_args *a,
                                                    attn_cuda_dense_fn dense) {
  return seqs_forward(ctx, a, dense, 1);
}
