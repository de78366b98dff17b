/* attn_seqs: shape checks, the host copy of the tables, and the check of
 * every entry, naming the first bad one. */
#include <stdlib.h>
#include <string.h>

#include "attn/seqs.h"
#ifdef ATTNPROF_HAVE_CUDA
#include "attn/cuda/common/cuda_common.h"
#endif

#define SEQS_MAX ((int64_t)1 << 24)

#define SEQS_FAIL(...) attn_fail(ATTN_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

static attn_status check_layout(const attn_args *a, const attn_seqs *s) {
  const attn_tensor *q = &a->q, *k = &a->k, *v = &a->v;
  if (s->batch < 1 || s->batch > SEQS_MAX)
    return SEQS_FAIL("seqs.batch = %lld: give the number of sequences, 1..%lld",
                     (long long)s->batch, (long long)SEQS_MAX);
  int64_t qb = s->q_offsets ? 1 : s->batch;
  if (q->shape[0] != qb)
    return SEQS_FAIL("q.shape[0] = %lld but %s: q must be %s", (long long)q->shape[0],
                     s->q_offsets ? "q_offsets is given" : "there are B sequences",
                     s->q_offsets ? "[1, Hq, total_q, D] (packed)" : "[B, Hq, Sq, D]");
  if (s->kv_offsets && s->kv_lens)
    return SEQS_FAIL("kv_offsets and kv_lens are both given: packed keys (kv_offsets) or a "
                     "cache with lengths (kv_lens), not both");
  if (s->block_table && !s->kv_lens)
    return SEQS_FAIL("block_table without kv_lens: a paged cache needs each sequence's length");
  if (s->block_table && (s->max_pages < 1 || s->max_pages > SEQS_MAX ||
                         (s->table_stride != 0 && s->table_stride < s->max_pages)))
    return SEQS_FAIL("block_table is [B, max_pages = %lld] with row stride %lld: max_pages "
                     "must be 1..%lld and the stride 0 or >= max_pages",
                     (long long)s->max_pages, (long long)s->table_stride, (long long)SEQS_MAX);
  if (k->shape[0] != v->shape[0])
    return SEQS_FAIL("k.shape[0] = %lld but v.shape[0] = %lld: they must match",
                     (long long)k->shape[0], (long long)v->shape[0]);
  int64_t kb = s->kv_offsets ? 1 : s->block_table ? k->shape[0] : s->batch;
  if (k->shape[0] != kb)
    return SEQS_FAIL("k.shape[0] = %lld: with %s k and v must be %s", (long long)k->shape[0],
                     s->kv_offsets ? "kv_offsets" : "one cache row per sequence",
                     s->kv_offsets ? "[1, Hkv, total_kv, D] (packed)" : "[B, Hkv, S, D]");
  if (a->mask_kind != ATTN_MASK_NONE)
    return SEQS_FAIL("a mask with seqs: several sequences take causal (bottom-right) or none, "
                     "no mask tensor");
  if (a->causal == ATTN_CAUSAL_TOP_LEFT)
    return SEQS_FAIL("causal top-left with seqs: each sequence's new tokens are its last ones, "
                     "so causal is bottom-right (or none)");
  if (s->trusted && (s->max_q < 0 || s->max_kv < 0))
    return SEQS_FAIL("trusted tables need max_q and max_kv >= 0 (bounds of every sequence), "
                     "got %lld and %lld",
                     (long long)s->max_q, (long long)s->max_kv);
  return ATTN_STATUS_OK;
}

/* n int32 from host or device memory into a new host array. */
static attn_status copy_in(int device, const int32_t *src, int64_t n, const char *name,
                           int32_t **dst) {
  *dst = malloc((size_t)n * sizeof(int32_t));
  if (!*dst)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no host memory for a copy of %lld entries",
                     name, (long long)n);
  if (device < 0) {
    memcpy(*dst, src, (size_t)n * sizeof(int32_t));
    return ATTN_STATUS_OK;
  }
#ifdef ATTNPROF_HAVE_CUDA
  int cur = -1;
  cudaError_t err = cudaGetDevice(&cur);
  if (err == cudaSuccess && cur != device) err = cudaSetDevice(device);
  if (err == cudaSuccess)
    err = cudaMemcpy(*dst, src, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost);
  if (err == cudaSuccess) return ATTN_STATUS_OK;
  attn_status st = attn_cuda_fail(err, "cudaMemcpy");
  return attn_fail(st, "%s: reading the table from device %d: %s", name, device, attn_last_error());
#else
  return attn_fail(ATTN_STATUS_NO_DEVICE,
                   "%s is on device %d but this build has no CUDA to read it", name, device);
#endif
}

static attn_status check_offsets(const int32_t *off, int64_t n, const char *name, int64_t rows,
                                 int exact, const char *tensor) {
  if (exact ? off[0] != 0 : off[0] < 0)
    return SEQS_FAIL("%s[0] = %d: the first offset must be %s", name, off[0], exact ? "0" : ">= 0");
  for (int64_t b = 1; b <= n; b++)
    if (off[b] < off[b - 1])
      return SEQS_FAIL("%s[%lld] = %d < %s[%lld] = %d: offsets must not decrease", name,
                       (long long)b, off[b], name, (long long)b - 1, off[b - 1]);
  if (exact ? off[n] != rows : off[n] > rows)
    return SEQS_FAIL("%s[B=%lld] = %d but %s has %lld rows (shape[2]): the last offset must "
                     "be %s",
                     name, (long long)n, off[n], tensor, (long long)rows,
                     exact ? "exactly that" : "at most that");
  return ATTN_STATUS_OK;
}

static attn_status check_lens(const attn_seqs_view *v) {
  int64_t cap = v->kv == ATTN_KV_PAGED ? v->page_size * v->max_pages : v->sk;
  for (int64_t b = 0; b < v->batch; b++)
    if (v->kv_len[b] < 0 || v->kv_len[b] > cap) {
      if (v->kv == ATTN_KV_PAGED)
        return SEQS_FAIL("kv_lens[%lld] = %d: a block_table row holds %lld pages of %lld = "
                         "%lld keys (lengths 0..%lld)",
                         (long long)b, v->kv_len[b], (long long)v->max_pages,
                         (long long)v->page_size, (long long)cap, (long long)cap);
      return SEQS_FAIL("kv_lens[%lld] = %d: the cache holds %lld keys per sequence (k.shape[2]);"
                       " lengths 0..%lld",
                       (long long)b, v->kv_len[b], (long long)cap, (long long)cap);
    }
  return ATTN_STATUS_OK;
}

static attn_status check_table(const attn_seqs_view *v) {
  for (int64_t b = 0; b < v->batch; b++) {
    int64_t used = (v->kv_len[b] + v->page_size - 1) / v->page_size;
    for (int64_t p = 0; p < used; p++) {
      int32_t e = v->table[b * v->table_stride + p];
      if (e < 0 || e >= v->pages)
        return SEQS_FAIL("block_table[%lld][%lld] = %d: pages are 0..%lld", (long long)b,
                         (long long)p, e, (long long)v->pages - 1);
    }
  }
  return ATTN_STATUS_OK;
}

static void view_shape(const attn_args *a, attn_seqs_view *v) {
  const attn_seqs *s = a->seqs;
  memset(v, 0, sizeof *v);
  v->batch = s->batch, v->hq = a->q.shape[1], v->hkv = a->k.shape[1], v->d = a->q.shape[3];
  v->q_packed = s->q_offsets != NULL;
  v->kv = s->kv_offsets    ? ATTN_KV_PACKED
          : s->block_table ? ATTN_KV_PAGED
          : s->kv_lens     ? ATTN_KV_CACHE
                           : ATTN_KV_DENSE;
  v->q_rows = a->q.shape[2], v->sk = a->k.shape[2];
  v->page_size = a->k.shape[2], v->pages = a->k.shape[0];
  v->max_pages = s->max_pages;
  v->table_stride = s->table_stride ? s->table_stride : s->max_pages;
}

static attn_status view_copy(const attn_args *a, attn_seqs_view *v) {
  const attn_seqs *s = a->seqs;
  int dev = a->q.device;
  attn_status st = ATTN_STATUS_OK;
  if (s->q_offsets) st = copy_in(dev, s->q_offsets, v->batch + 1, "q_offsets", &v->q_off);
  if (!st && s->kv_offsets)
    st = copy_in(dev, s->kv_offsets, v->batch + 1, "kv_offsets", &v->kv_off);
  if (!st && s->kv_lens) st = copy_in(dev, s->kv_lens, v->batch, "kv_lens", &v->kv_len);
  if (!st && s->block_table)
    st = copy_in(dev, s->block_table, (v->batch - 1) * v->table_stride + v->max_pages,
                 "block_table", &v->table);
  v->have_tables = st == ATTN_STATUS_OK;
  return st;
}

static attn_status view_check(const attn_args *a, attn_seqs_view *v) {
  attn_status st = ATTN_STATUS_OK;
  if (v->q_off) st = check_offsets(v->q_off, v->batch, "q_offsets", v->q_rows, 1, "q");
  if (!st && v->kv_off) st = check_offsets(v->kv_off, v->batch, "kv_offsets", v->sk, 0, "k");
  if (!st && v->kv_len) st = check_lens(v);
  if (!st && v->table) st = check_table(v);
  if (st) return st;
  for (int64_t b = 0; b < v->batch; b++) {
    int64_t nq = attn_seqs_nq(v, b), nk = attn_seqs_nk(v, b);
    v->max_q = nq > v->max_q ? nq : v->max_q;
    v->max_kv = nk > v->max_kv ? nk : v->max_kv;
  }
  v->total_q = v->q_packed ? v->q_rows : v->batch * v->q_rows;
  (void)a;
  return ATTN_STATUS_OK;
}

static attn_status view_make(const attn_args *a, attn_seqs_view *v, int force_copy) {
  const attn_seqs *s = a->seqs;
  attn_status st = check_layout(a, s);
  if (st) return st;
  view_shape(a, v);
  if (s->trusted && !force_copy) {
    v->max_q = s->max_q, v->max_kv = s->max_kv;
    v->total_q = v->q_packed ? v->q_rows : v->batch * v->q_rows;
    if (a->q.device >= 0) return ATTN_STATUS_OK; /* no copy: have_tables = 0 */
  }
  if ((st = view_copy(a, v))) {
    attn_seqs_view_free(v);
    return st;
  }
  if (s->trusted && !force_copy) return ATTN_STATUS_OK;
  if ((st = view_check(a, v))) attn_seqs_view_free(v);
  return st;
}

attn_status attn_seqs_view_make(const attn_args *a, attn_seqs_view *v) {
  return view_make(a, v, 0);
}

attn_status attn_seqs_view_make_host(const attn_args *a, attn_seqs_view *v) {
  return view_make(a, v, 1);
}

void attn_seqs_view_free(attn_seqs_view *v) {
  free(v->q_off), free(v->kv_off), free(v->kv_len), free(v->table);
  v->q_off = v->kv_off = v->kv_len = v->table = NULL;
  v->have_tables = 0;
}

attn_status attn_seqs_check(const attn_args *a) {
  attn_seqs_view v;
  attn_status st = attn_seqs_view_make(a, &v);
  if (!st) attn_seqs_view_free(&v);
  return st;
}

double attn_seqs_bytes(const attn_args *a, const attn_seqs_view *v) {
  double es = (double)attn_dtype_size(a->q.dtype), keys = 0, tables = 0;
  for (int64_t b = 0; v->have_tables && b < v->batch; b++) keys += (double)attn_seqs_nk(v, b);
  if (!v->have_tables) keys = (double)v->batch * (double)v->max_kv;
  if (v->q_off) tables += 4.0 * (double)(v->batch + 1);
  if (v->kv_off) tables += 4.0 * (double)(v->batch + 1);
  if (v->kv_len) tables += 4.0 * (double)v->batch;
  if (v->kv == ATTN_KV_PAGED) tables += 4.0 * keys / (double)v->page_size;
  return es * (2.0 * (double)v->total_q * (double)(v->hq * v->d) +
               2.0 * keys * (double)(v->hkv * v->d)) +
         tables;
}

double attn_seqs_flops(const attn_args *a, const attn_seqs_view *v) {
  double pairs = 0;
  for (int64_t b = 0; b < v->batch; b++) {
    int64_t nq = v->have_tables ? attn_seqs_nq(v, b) : v->max_q;
    int64_t nk = v->have_tables ? attn_seqs_nk(v, b) : v->max_kv;
    for (int64_t t = 0; t < nq; t++) {
      int64_t seen = a->causal == ATTN_CAUSAL_NONE ? nk : t + 1 + nk - nq;
      pairs += (double)(seen < 0 ? 0 : seen > nk ? nk : seen);
    }
  }
  return 4.0 * pairs * (double)(v->hq * v->d);
}

attn_tensor attn_seqs_rows_view(const attn_tensor *t, int64_t tb, int64_t row, int64_t n) {
  attn_tensor v = *t;
  v.data = (char *)t->data +
           (tb * t->strides[0] + row * t->strides[2]) * (int64_t)attn_dtype_size(t->dtype);
  v.shape[0] = 1, v.shape[2] = n;
  return v;
}
