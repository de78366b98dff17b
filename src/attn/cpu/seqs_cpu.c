/* Several sequences on the CPU, one dense problem per sequence (seqs_cpu.h). */
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"
#include "attn/cpu/seqs_cpu.h"
#include "attn/seqs.h"
#include "attn/op_trace.h"

/* Sequence b's keys, gathered from the pages into contiguous [1, Hkv, nk, D]
 * copies in k's dtype: the COPY a paged cache costs naive and math. */
static attn_status gather_kv(const attn_args *a, const attn_seqs_view *v, int64_t b, int64_t nk,
                             void **kbuf, void **vbuf, attn_tensor *k, attn_tensor *vt) {
  size_t es = attn_dtype_size(a->k.dtype), n = (size_t)(nk * v->hkv * v->d);
  *kbuf = malloc(n * es), *vbuf = malloc(n * es);
  if (!*kbuf || !*vbuf)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to gather %zu bytes of K/V pages",
                     2 * n * es);
  prof_op_scope op = prof_op_begin("gather_kv", PROF_KIND_COPY);
  *k = attn_tensor_bhsd(*kbuf, a->k.dtype, ATTN_DEVICE_CPU, 1, v->hkv, nk, v->d);
  *vt = attn_tensor_bhsd(*vbuf, a->v.dtype, ATTN_DEVICE_CPU, 1, v->hkv, nk, v->d);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < v->hkv * nk; r++) {
    int64_t h = r / nk, j = r % nk, tb, row;
    attn_seqs_kv_at(v, b, j, &tb, &row);
    for (int64_t c = 0; c < v->d; c++) {
      int64_t src = attn_cpu_offset(&a->k, tb, h, row, c), dst = (h * nk + j) * v->d + c;
      memcpy((char *)*kbuf + dst * (int64_t)es, (const char *)a->k.data + src * (int64_t)es, es);
      src = attn_cpu_offset(&a->v, tb, h, row, c);
      memcpy((char *)*vbuf + dst * (int64_t)es, (const char *)a->v.data + src * (int64_t)es, es);
    }
  }
  prof_op_end(&op, (int64_t)(4 * n * es), 0);
  return ATTN_STATUS_OK;
}

/* A sequence with queries but no key: out 0, lse -inf. */
static void no_keys(const attn_args *a, const attn_seqs_view *v, int64_t b, attn_tensor *out,
                    int64_t nq) {
  float *zero = calloc((size_t)v->d, sizeof(float));
  for (int64_t h = 0; zero && h < v->hq; h++)
    for (int64_t t = 0; t < nq; t++) {
      attn_cpu_store_row(out, 0, h, t, v->d, zero);
      if (a->lse) a->lse[attn_seqs_lse_at(v, b, h, t)] = -INFINITY;
    }
  free(zero);
}

static attn_status run_seq(attn_ctx *ctx, const attn_args *a, const attn_seqs_view *v, int64_t b,
                           attn_cpu_dense_fn dense, attn_cpu_paged_fn paged) {
  int64_t nq = attn_seqs_nq(v, b), nk = attn_seqs_nk(v, b), tb, row;
  if (nq == 0) return ATTN_STATUS_OK;
  attn_seqs_q_at(v, b, 0, &tb, &row);
  attn_args s = attn_args_make(attn_seqs_rows_view(&a->q, tb, row, nq), a->k, a->v,
                               attn_seqs_rows_view(&a->out, tb, row, nq));
  s.causal = a->causal, s.scale = a->scale, s.stream = a->stream;
  if (nk == 0) {
    no_keys(a, v, b, &s.out, nq);
    return ATTN_STATUS_OK;
  }
  float *lse = NULL;
  if (a->lse && v->q_packed) s.lse = lse = attn_cpu_alloc_f32((size_t)(v->hq * nq), "lse");
  else if (a->lse) s.lse = a->lse + attn_seqs_lse_at(v, b, 0, 0);
  if (a->lse && !s.lse) return ATTN_STATUS_OUT_OF_MEMORY;
  void *kbuf = NULL, *vbuf = NULL;
  attn_status st = ATTN_STATUS_OK;
  if (v->kv != ATTN_KV_PAGED) {
    attn_seqs_kv_at(v, b, 0, &tb, &row);
    s.k = attn_seqs_rows_view(&a->k, tb, row, nk), s.v = attn_seqs_rows_view(&a->v, tb, row, nk);
    st = dense(ctx, &s);
  } else if (paged) {
    attn_cpu_pages pg = {&a->k, &a->v, v->table + b * v->table_stride, v->page_size};
    s.k = attn_seqs_rows_view(&a->k, 0, 0, nk), s.v = attn_seqs_rows_view(&a->v, 0, 0, nk);
    st = paged(ctx, &s, &pg);
  } else if (!(st = gather_kv(a, v, b, nk, &kbuf, &vbuf, &s.k, &s.v))) {
    st = dense(ctx, &s);
  }
  free(kbuf), free(vbuf);
  for (int64_t h = 0; lse && !st && h < v->hq; h++)
    for (int64_t t = 0; t < nq; t++) a->lse[attn_seqs_lse_at(v, b, h, t)] = lse[h * nq + t];
  free(lse);
  return st;
}

attn_status attn_cpu_seqs_forward(attn_ctx *ctx, const attn_args *a, attn_cpu_dense_fn dense,
                                  attn_cpu_paged_fn paged) {
  attn_seqs_view v;
  attn_status st = attn_seqs_view_make_host(a, &v);
  if (st) return st;
  for (int64_t b = 0; !st && b < v.batch; b++) st = run_seq(ctx, a, &v, b, dense, paged);
  attn_seqs_view_free(&v);
  return st;
}
