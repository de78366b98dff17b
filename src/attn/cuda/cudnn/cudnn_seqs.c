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
  return v->kv == ATTN_KV_PAGED ? v->max_pages * v->page_size : v->sk;
}

/* Rows with no key: attn.h wants 0 and lse -inf there, which cuDNN's fused
 * kernel does not promise. */
static attn_status empty_rows(const attn_args *a, const attn_seqs_view *v, char *why,
                              size_t len) {
  const int64_t need = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? v->q_rows : 1;
  for (int64_t b = 0; b < v->batch; b++)
    if (v->kv_len[b] < need)
      return attn_cudnn_refuse(
          why, len, "cudnn_cuda: kv_lens[%lld] = %d leaves query rows that see no key "
              "(%lld new tokens%s); attn.h wants 0 there and cuDNN's kernel does not "
              "promise it: use flash or math", (long long)b, v->kv_len[b],
              (long long)v->q_rows,
              a->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? ", bottom-right causal" : "");
  return ATTN_STATUS_OK;
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
            why, len, "cudnn_cuda: block_table[%lld][%lld] = %d lies past sequence "
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
  if (v->q_packed)
    return attn_cudnn_refuse(
        why, len, "cudnn_cuda takes dense queries [B, Hq, n_new, D] only: packed "
            "queries (q_offsets) need cuDNN's ragged-offset tensors, which this backend "
            "does not build; flash takes them");
  if (v->kv == ATTN_KV_PACKED)
    return attn_cudnn_refuse(
        why, len, "cudnn_cuda does not take packed K/V (kv_offsets): that needs "
            "cuDNN's ragged-offset tensors, which this backend does not build; flash "
            "takes them");
  if (v->kv == ATTN_KV_PAGED && version < 90500)
    return attn_cudnn_refuse(
        why, len, "cuDNN %d.%d.%d has no paged cache load (OPERATION_PAGED_CACHE_LOAD "
            "came in 9.5.0); flash takes paged caches", major, minor, patch);
  if (v->kv == ATTN_KV_PAGED && (v->page_size & (v->page_size - 1)))
    return attn_cudnn_refuse(
        why, len, "cuDNN's paged cache load takes page sizes that are powers of 2 "
            "(9.14 on the H200: \"block size needs to be non-zero and a power of 2\"); "
            "got page_size=%lld: flash takes any", (long long)v->page_size);
  if (v->kv == ATTN_KV_PAGED && v->d > 128 && version < 91000)
    return attn_cudnn_refuse(
        why, len, "cuDNN %d.%d.%d takes paged caches with D <= 128 only (9.10 lifts "
            "it); got D=%lld", major, minor, patch, (long long)v->d);
  const int64_t reach = attn_cudnn_seqs_reach(v);
  if (v->kv != ATTN_KV_DENSE && a->causal == ATTN_CAUSAL_BOTTOM_RIGHT && v->q_rows > 1 &&
      version < 90600 && (v->q_rows % 64 || reach % 64))
    return attn_cudnn_refuse(
        why, len, "cuDNN %d.%d.%d takes bottom-right causal only with the new tokens "
            "(%lld) and the KV reach (%lld) multiples of 64 (9.6 lifts it)", major, minor,
            patch, (long long)v->q_rows, (long long)reach);
  if (!v->have_tables || v->kv == ATTN_KV_DENSE) return ATTN_STATUS_OK;
  attn_status s = empty_rows(a, v, why, len);
  if (!s && v->kv == ATTN_KV_PAGED) s = table_reach(v, why, len);
  return s;
}
