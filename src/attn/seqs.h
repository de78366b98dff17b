/* Several sequences in one call (attn_seqs, attn.h): the validated host view
 * of the tables that the fp64 reference, the CPU backends and the CUDA
 * launchers share. Sequence b has nq(b) queries and nk(b) keys; its query t
 * and key j are rows of the q/out and k/v tensors found by the accessors
 * below, whatever the layout (dense, packed, contiguous cache, paged). */
#ifndef ATTNPROF_SRC_ATTN_SEQS_H
#define ATTNPROF_SRC_ATTN_SEQS_H

#include <stdint.h>

#include "attn/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ATTN_KV_DENSE, ATTN_KV_PACKED, ATTN_KV_CACHE, ATTN_KV_PAGED } attn_kv_layout;

typedef struct {
  int64_t batch, hq, hkv, d;
  int q_packed; /* q/out are [1, Hq, total_q, D] */
  attn_kv_layout kv;
  int64_t q_rows; /* q.shape[2]: Sq (dense) or total_q (packed) */
  int64_t sk;     /* k.shape[2]: Sk, S_cap, total_kv or page_size */
  int64_t page_size, pages, max_pages, table_stride;
  int32_t *q_off, *kv_off, *kv_len, *table; /* host copies (NULL: not used) */
  int64_t max_q, max_kv, total_q;
  int have_tables; /* 0 when trusted on a device: only max_q/max_kv */
} attn_seqs_view;

/* The checks of attn_args_check for args->seqs != NULL (shapes, then every
 * table entry). Device tables are copied to the host for it. */
attn_status attn_seqs_check(const attn_args *a);

/* The validated view (tables copied to host memory). When the caller marked
 * the tables trusted and they live on a device, no copy is made and
 * have_tables is 0. Free with attn_seqs_view_free. */
attn_status attn_seqs_view_make(const attn_args *a, attn_seqs_view *v);
/* The same, always with host copies of the tables (what a per-sequence host
 * loop needs, trusted or not). */
attn_status attn_seqs_view_make_host(const attn_args *a, attn_seqs_view *v);
void attn_seqs_view_free(attn_seqs_view *v);

static inline int64_t attn_seqs_nq(const attn_seqs_view *v, int64_t b) {
  return v->q_packed ? (int64_t)v->q_off[b + 1] - v->q_off[b] : v->q_rows;
}

static inline int64_t attn_seqs_nk(const attn_seqs_view *v, int64_t b) {
  switch (v->kv) {
    case ATTN_KV_PACKED:
      return (int64_t)v->kv_off[b + 1] - v->kv_off[b];
    case ATTN_KV_CACHE:
    case ATTN_KV_PAGED:
      return v->kv_len[b];
    default:
      return v->sk;
  }
}

/* Query t of sequence b: its (batch index, row) in q and out. */
static inline void attn_seqs_q_at(const attn_seqs_view *v, int64_t b, int64_t t, int64_t *tb,
                                  int64_t *row) {
  *tb = v->q_packed ? 0 : b;
  *row = v->q_packed ? v->q_off[b] + t : t;
}

/* Key j of sequence b: its (batch index, row) in k and v (for a paged cache
 * the batch index is the page). */
static inline void attn_seqs_kv_at(const attn_seqs_view *v, int64_t b, int64_t j, int64_t *tb,
                                   int64_t *row) {
  switch (v->kv) {
    case ATTN_KV_PACKED:
      *tb = 0, *row = v->kv_off[b] + j;
      return;
    case ATTN_KV_PAGED:
      *tb = v->table[b * v->table_stride + j / v->page_size], *row = j % v->page_size;
      return;
    default:
      *tb = b, *row = j;
      return;
  }
}

/* Index of lse for query t of sequence b and query head h ([B, Hq, Sq] dense,
 * [Hq, total_q] packed). */
static inline int64_t attn_seqs_lse_at(const attn_seqs_view *v, int64_t b, int64_t h, int64_t t) {
  int64_t tb, row;
  attn_seqs_q_at(v, b, t, &tb, &row);
  return (tb * v->hq + h) * v->q_rows + row;
}

/* Bytes one forward must move at least: Q and O once, each sequence's K and
 * V rows once, the tables. For GB/s figures. */
double attn_seqs_bytes(const attn_args *a, const attn_seqs_view *v);

/* t viewed at batch tb from row `row` on, n rows ([1, H, n, D], t's strides):
 * one sequence's slice of a batched or packed tensor, no copy. */
attn_tensor attn_seqs_rows_view(const attn_tensor *t, int64_t tb, int64_t row, int64_t n);
/* FLOPs: 4 * Hq * D * the (query, key) pairs seen, summed per sequence. */
double attn_seqs_flops(const attn_args *a, const attn_seqs_view *v);

#ifdef __cplusplus
}
#endif
#endif
