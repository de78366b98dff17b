/* The cudnn backend's refusals for several sequences (cudnn_seqs.h). The
 * version limits are cudnn-frontend's support surface for paged SDPA: paged
 * cache load from 9.5, paged D > 128 from 9.10, bottom-right causal with
 * sizes off 64 from 9.6. Page sizes must be powers of 2: cuDNN 9.14's paged
 * load refuses others (BAD_PARAM), seen on the H200. */
#include "attn/cuda/cudnn/cudnn_seqs.h"

#include <stdarg.h>
#include <stdio.h>

attn_status attn_cudnn_refuse(char *why, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, len, fmt, ap);
  va_end(ap);
  return ATTN_STATUS_UNSUPPORTED;
}

int64_t attn_cudnn_seqs_reach(const attn_seqs_view *v) {
  return v->kv == ATTN_KV_PAGED    ? v->max_pages * v->page_size
         : v->kv == ATTN_KV_PACKED ? v->max_kv
                                   : v->sk;
}

/* Rows with no key: attn.h wants 0 and lse -inf there, which cuDNN's fused
 * kernel does not promise. A sequence with no queries has no rows. */
static attn_status empty_rows(const attn_args *a, const attn_seqs_view *v, char *why, size_t len) {
  const int br = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT;
  for (int64_t b = 0; b < v->batch; b++) {
    const int64_t nq = attn_seqs_nq(v, b), nk = attn_seqs_nk(v, b);
    if (nq > 0 && nk < (br ? nq : 1))
      return attn_cudnn_refuse(
          why, len,
          "cudnn_cuda: sequence %lld has %lld keys (%s) for %lld query rows%s, so "
          "some rows see no key; attn.h wants 0 there and cuDNN's kernel does not "
          "promise it: use flash or math",
          (long long)b, (long long)nk, v->kv == ATTN_KV_PACKED ? "kv_offsets" : "kv_lens",
          (long long)nq, br ? ", bottom-right causal" : "");
  }
  return ATTN_STATUS_OK;
}

/* Packed tensors before cuDNN 9.6: int32 element offsets (cudnn_seqs.h). */
static attn_status ragged_range(size_t version, const attn_tensor *t, const char *name, char *why,
                                size_t len) {
  const double last = (double)t->shape[2] * (double)t->strides[2];
  if (ATTN_CUDNN_RAGGED_WIDE(version) || last <= 2147483647.0) return ATTN_STATUS_OK;
  return attn_cudnn_refuse(why, len,
                           "cudnn_cuda: packed %s spans %.0f elements, past the int32 "
                           "ragged offsets cuDNN takes before 9.6: flash takes it",
                           name, last);
}

/* Packed queries (q_offsets) and packed K/V (kv_offsets): the same graph over
 * [B, H, max rows, D] tensors with ragged offsets. */
static attn_status packed_why_not(size_t version, const attn_args *a, const attn_seqs_view *v,
                                  char *why, size_t len) {
  if (v->q_packed && v->kv == ATTN_KV_DENSE)
    return attn_cudnn_refuse(
        why, len,
        "cudnn_cuda takes packed queries with packed K/V (kv_offsets) or a KV cache "
        "(kv_lens), not with one dense K/V per sequence (no per-sequence key lengths to "
        "give cuDNN's padding mask): flash takes it");
  if (v->q_packed && a->lse)
    return attn_cudnn_refuse(
        why, len,
        "cudnn_cuda does not give an lse for packed queries: attn.h's lse is then "
        "[Hq, total_q], head-major over all sequences, and this backend gives cuDNN no ragged "
        "Stats tensor in that layout; flash takes it");
  attn_status s = v->q_packed ? ragged_range(version, &a->q, "q", why, len) : ATTN_STATUS_OK;
  if (!s && v->q_packed) s = ragged_range(version, &a->out, "out", why, len);
  if (!s && v->kv == ATTN_KV_PACKED) s = ragged_range(version, &a->k, "k", why, len);
  if (!s && v->kv == ATTN_KV_PACKED) s = ragged_range(version, &a->v, "v", why, len);
  return s;
}

/* cuDNN is given each table row whole (max_pages entries) and does not
 * promise to stop at a sequence's length, so every entry must be a page. */
static attn_status table_reach(const attn_seqs_view *v, char *why, size_t len) {
  for (int64_t b = 0; b < v->batch; b++) {
    int64_t used = (v->kv_len[b] + v->page_size - 1) / v->page_size;
    for (int64_t p = used; p < v->max_pages; p++) {
      int32_t e = v->table[b * v->table_stride + p];
      if (e < 0 || e >= v->pages)
        return attn_cudnn_refuse(
            why, len,
            "cudnn_cuda: block_table[%lld][%lld] = %d lies past sequence "
            "%lld's pages, but cuDNN's paged load is handed the whole row of %lld "
            "entries: fill unused entries with a page 0..%lld (flash ignores them)",
            (long long)b, (long long)p, e, (long long)b, (long long)v->max_pages,
            (long long)v->pages - 1);
    }
  }
  return ATTN_STATUS_OK;
}

attn_status attn_cudnn_seqs_why_not(size_t version, const attn_args *a, const attn_seqs_view *v,
                                    char *why, size_t len) {
  const int major = (int)(version / 10000), minor = (int)(version / 100 % 100),
            patch = (int)(version % 100);
  if (v->q_packed || v->kv == ATTN_KV_PACKED) {
    attn_status s = packed_why_not(version, a, v, why, len);
    if (s) return s;
  }
  if (v->kv == ATTN_KV_PAGED && version < 90500)
    return attn_cudnn_refuse(why, len,
                             "cuDNN %d.%d.%d has no paged cache load (OPERATION_PAGED_CACHE_LOAD "
                             "came in 9.5.0); flash takes paged caches",
                             major, minor, patch);
  if (v->kv == ATTN_KV_PAGED && (v->page_size & (v->page_size - 1)))
    return attn_cudnn_refuse(
        why, len,
        "cuDNN's paged cache load takes page sizes that are powers of 2 "
        "(9.14 on the H200: \"block size needs to be non-zero and a power of 2\"); "
        "got page_size=%lld: flash takes any",
        (long long)v->page_size);
  if (v->kv == ATTN_KV_PAGED && v->d > 128 && version < 91000)
    return attn_cudnn_refuse(why, len,
                             "cuDNN %d.%d.%d takes paged caches with D <= 128 only (9.10 lifts "
                             "it); got D=%lld",
                             major, minor, patch, (long long)v->d);
  const int64_t reach = attn_cudnn_seqs_reach(v);
  const int64_t rows = v->q_packed ? v->max_q : v->q_rows;
  if (v->kv != ATTN_KV_DENSE && a->causal == ATTN_CAUSAL_BOTTOM_RIGHT && rows > 1 &&
      version < 90600 && (rows % 64 || reach % 64))
    return attn_cudnn_refuse(why, len,
                             "cuDNN %d.%d.%d takes bottom-right causal only with the new tokens "
                             "(%lld) and the KV reach (%lld) multiples of 64 (9.6 lifts it)",
                             major, minor, patch, (long long)rows, (long long)reach);
  if (!v->have_tables || (v->kv == ATTN_KV_DENSE && !v->q_packed)) return ATTN_STATUS_OK;
  attn_status s = empty_rows(a, v, why, len);
  if (!s && v->kv == ATTN_KV_PAGED) s = table_reach(v, why, len);
  return s;
}
