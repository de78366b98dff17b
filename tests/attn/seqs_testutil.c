/* Random several-sequence problems and their check (seqs_testutil.h). */
#include "attn/seqs_testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kv_names[SEQS_KV_COUNT] = {"dense", "packed", "cache", "paged"};

seqs_spec seqs_spec_random(test_rng *r) {
  static const int64_t ds[] = {8, 16, 24, 32, 64};
  static const int64_t pss[] = {1, 3, 4, 16};
  seqs_spec s;
  memset(&s, 0, sizeof s);
  s.dtype = (attn_dtype)test_rng_int(r, 0, 2);
  s.b = test_rng_int(r, 1, 5);
  s.hkv = test_rng_int(r, 1, 2);
  s.group = test_rng_int(r, 1, 8);
  s.d = ds[test_rng_int(r, 0, 4)];
  s.q_packed = (int)test_rng_int(r, 0, 1);
  s.kv = (int)test_rng_int(r, 0, SEQS_KV_COUNT - 1);
  s.page_size = pss[test_rng_int(r, 0, 3)];
  s.max_new = test_rng_uniform(r) < 0.5 ? test_rng_int(r, 1, 16) : test_rng_int(r, 1, 40);
  s.max_kv = test_rng_int(r, 1, 90);
  s.causal = test_rng_int(r, 0, 1) ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
  s.lse = (int)test_rng_int(r, 0, 1);
  return s;
}

void seqs_spec_describe(const seqs_spec *s, char *buf, size_t n) {
  snprintf(buf, n,
           "%s B=%lld Hkv=%lld G=%lld D=%lld q %s kv %s page %lld new<=%lld kv<=%lld "
           "%s%s",
           attn_dtype_name(s->dtype), (long long)s->b, (long long)s->hkv, (long long)s->group,
           (long long)s->d, s->q_packed ? "packed" : "dense", kv_names[s->kv],
           (long long)s->page_size, (long long)s->max_new, (long long)s->max_kv,
           s->causal ? "causal" : "full", s->lse ? " lse" : "");
}

/* A key count: 0, 1, a multiple of the page size, or anything up to max. */
static int64_t draw_len(test_rng *r, const seqs_spec *s, int allow_zero) {
  double u = test_rng_uniform(r);
  int64_t ps = s->kv == SEQS_KV_PAGED ? s->page_size : 8;
  if (u < 0.1 && allow_zero) return 0;
  if (u < 0.25) return 1;
  if (u < 0.45 && s->max_kv >= ps) return ps * test_rng_int(r, 1, s->max_kv / ps);
  return test_rng_int(r, 1, s->max_kv);
}

static void fill_random(void *mem, attn_dtype dt, size_t n, test_rng *r) {
  for (size_t i = 0; i < n; i++) {
    float x = (float)test_rng_normal(r);
    if (dt == ATTN_DTYPE_F32) ((float *)mem)[i] = x;
    else if (dt == ATTN_DTYPE_BF16) ((uint16_t *)mem)[i] = attn_f32_to_bf16(x);
    else ((uint16_t *)mem)[i] = attn_f32_to_f16(x);
  }
}

/* Query counts, q/out tensors ([total_q, Hq, D] memory when packed). */
static int make_q(seqs_case *c, test_rng *r) {
  const seqs_spec *s = &c->spec;
  int64_t hq = s->hkv * s->group, es = (int64_t)attn_dtype_size(s->dtype), rows;
  if (s->q_packed) {
    c->q_off = malloc((size_t)(s->b + 1) * sizeof(int32_t));
    c->q_off[0] = 0;
    for (int64_t b = 0; b < s->b; b++) {
      double u = test_rng_uniform(r);
      int64_t n = u < 0.15 ? 0 : u < 0.3 ? 1 : test_rng_int(r, 1, s->max_new);
      c->q_off[b + 1] = c->q_off[b] + (int32_t)n;
    }
    if (c->q_off[s->b] == 0) c->q_off[s->b] = 1; /* at least one row in the tensor */
    c->total_q = rows = c->q_off[s->b];
  } else {
    rows = s->max_new, c->total_q = s->b * rows;
  }
  c->q_bytes = (size_t)(c->total_q * hq * s->d * es);
  c->q = malloc(c->q_bytes), c->out = malloc(c->q_bytes);
  fill_random(c->q, s->dtype, c->q_bytes / (size_t)es, r);
  attn_tensor q =
      attn_tensor_bhsd(c->q, s->dtype, ATTN_DEVICE_CPU, s->q_packed ? 1 : s->b, hq, rows, s->d);
  if (s->q_packed) { /* [total_q, Hq, D] */
    q.strides[0] = rows * hq * s->d, q.strides[1] = s->d, q.strides[2] = hq * s->d;
  }
  c->args.q = c->args.out = q;
  c->args.out.data = c->out;
  c->out_bytes = c->q_bytes;
  c->seqs.q_offsets = c->q_off;
  return 0;
}

/* Pages: a shuffled pool with some pages shared between sequences; table
 * entries past a sequence's last page hold garbage that must not be read. */
static void make_table(seqs_case *c, test_rng *r, int64_t max_pages) {
  const seqs_spec *s = &c->spec;
  int64_t need = 0;
  for (int64_t b = 0; b < s->b; b++) need += (c->kv_len[b] + s->page_size - 1) / s->page_size;
  c->pages = need + test_rng_int(r, 1, 4);
  int32_t *perm = malloc((size_t)c->pages * sizeof(int32_t));
  for (int64_t i = 0; i < c->pages; i++) perm[i] = (int32_t)i;
  for (int64_t i = c->pages - 1; i > 0; i--) {
    int64_t j = test_rng_int(r, 0, i);
    int32_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  c->table_n = (size_t)(s->b * max_pages);
  c->table = malloc(c->table_n * sizeof(int32_t));
  int64_t next = 0;
  for (int64_t b = 0; b < s->b; b++)
    for (int64_t p = 0; p < max_pages; p++) {
      int64_t used = (c->kv_len[b] + s->page_size - 1) / s->page_size;
      int shared = b > 0 && p < used && test_rng_uniform(r) < 0.2;
      c->table[b * max_pages + p] = p >= used ? (int32_t)(1000000 + p)
                                    : shared  ? c->table[(b - 1) * max_pages + p % used]
                                              : perm[next++];
      if (shared && c->table[b * max_pages + p] >= 1000000) c->table[b * max_pages + p] = perm[0];
    }
  free(perm);
}

static int make_kv(seqs_case *c, test_rng *r) {
  const seqs_spec *s = &c->spec;
  int64_t es = (int64_t)attn_dtype_size(s->dtype), rows = 0, kb = s->b, max_pages = 0;
  c->kv_len = malloc((size_t)s->b * sizeof(int32_t));
  for (int64_t b = 0; b < s->b; b++)
    c->kv_len[b] =
        (int32_t)(s->lens[0] > 0 ? s->lens[b % 4] : draw_len(r, s, s->kv != SEQS_KV_DENSE));
  if (s->kv == SEQS_KV_DENSE) {
    rows = s->max_kv;
  } else if (s->kv == SEQS_KV_PACKED) {
    c->kv_off = malloc((size_t)(s->b + 1) * sizeof(int32_t));
    c->kv_off[0] = (int32_t)test_rng_int(r, 0, 2); /* rows before the first sequence */
    for (int64_t b = 0; b < s->b; b++) c->kv_off[b + 1] = c->kv_off[b] + c->kv_len[b];
    rows = c->kv_off[s->b] + test_rng_int(r, 0, 2) + (c->kv_off[s->b] == 0), kb = 1;
  } else if (s->kv == SEQS_KV_CACHE) {
    for (int64_t b = 0; b < s->b; b++) rows = c->kv_len[b] > rows ? c->kv_len[b] : rows;
    rows += test_rng_int(r, 0, 3) + (rows == 0);
  } else {
    for (int64_t b = 0; b < s->b; b++) {
      int64_t p = (c->kv_len[b] + s->page_size - 1) / s->page_size;
      max_pages = p > max_pages ? p : max_pages;
    }
    max_pages += test_rng_int(r, 0, 2) + (max_pages == 0);
    make_table(c, r, max_pages);
    rows = s->page_size, kb = c->pages;
  }
  c->kv_bytes = (size_t)(kb * s->hkv * rows * s->d * es);
  c->k = malloc(c->kv_bytes), c->v = malloc(c->kv_bytes);
  fill_random(c->k, s->dtype, c->kv_bytes / (size_t)es, r);
  fill_random(c->v, s->dtype, c->kv_bytes / (size_t)es, r);
  /* memory [kb, rows, Hkv, D] (BSHD), as caches and packed buffers are kept */
  attn_tensor k = attn_tensor_bhsd(c->k, s->dtype, ATTN_DEVICE_CPU, kb, s->hkv, rows, s->d);
  k.strides[1] = s->d, k.strides[2] = s->hkv * s->d;
  c->args.k = c->args.v = k;
  c->args.v.data = c->v;
  c->seqs.kv_offsets = c->kv_off;
  c->seqs.kv_lens = s->kv == SEQS_KV_CACHE || s->kv == SEQS_KV_PAGED ? c->kv_len : NULL;
  c->seqs.block_table = c->table;
  c->seqs.max_pages = max_pages;
  return 0;
}

int seqs_case_make(seqs_case *c, const seqs_spec *s, test_rng *r) {
  memset(c, 0, sizeof *c);
  c->spec = *s;
  c->seqs.batch = s->b;
  make_q(c, r);
  make_kv(c, r);
  c->args.causal = s->causal;
  int64_t hq = s->hkv * s->group;
  c->lse_n = (size_t)(c->total_q * hq);
  if (s->lse) c->args.lse = c->lse = malloc(c->lse_n * sizeof(float));
  c->args.seqs = &c->seqs;
  c->ref = malloc((size_t)(c->total_q * hq * s->d) * sizeof(double));
  c->lse_ref = malloc(c->lse_n * sizeof(double));
  attn_status st = attn_reference_f64(&c->args, c->ref, c->lse_ref);
  if (st) fprintf(stderr, "reference refused: %s\n", attn_last_error());
  return st ? -1 : 0;
}

void seqs_case_free(seqs_case *c) {
  free(c->q), free(c->k), free(c->v), free(c->out), free(c->lse);
  free(c->q_off), free(c->kv_off), free(c->kv_len), free(c->table);
  free(c->ref), free(c->lse_ref);
  memset(c, 0, sizeof *c);
}

void seqs_case_poison(seqs_case *c) {
  memset(c->out, 0xff, c->out_bytes); /* NaN in every dtype */
  if (c->lse) memset(c->lse, 0xff, c->lse_n * sizeof(float));
}

int seqs_case_check(const seqs_case *c, const void *out, const float *lse, int nan_rows, double tol,
                    char *why, size_t len) {
  const seqs_spec *s = &c->spec;
  attn_tensor o = c->args.out;
  o.data = (void *)out;
  int64_t hq = s->hkv * s->group;
  double num = 0, den = 0;
  for (int64_t b = 0; b < o.shape[0]; b++)
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < o.shape[2]; i++) {
        int64_t row = (b * hq + h) * o.shape[2] + i;
        int empty = c->lse_ref[row] == -INFINITY, nan_row = 0;
        for (int64_t d = 0; d < s->d; d++) {
          double x = attn_tensor_get(&o, b, h, i, d), ref = c->ref[row * s->d + d];
          if (empty && nan_rows && isnan(x) && d == 0) nan_row = 1;
          if (nan_row) continue;
          if (!isfinite(x)) {
            snprintf(why, len, "out[%lld, %lld, %lld, %lld] = %g (poison left or NaN), ref %g",
                     (long long)b, (long long)h, (long long)i, (long long)d, x, ref);
            return -1;
          }
          if (empty && x != 0) {
            snprintf(why, len, "row (%lld, %lld, %lld) sees no key but out[%lld] = %g",
                     (long long)b, (long long)h, (long long)i, (long long)d, x);
            return -1;
          }
          num += (x - ref) * (x - ref), den += ref * ref;
        }
        if (!lse) continue;
        double l = lse[row], lr = c->lse_ref[row];
        if (empty ? !(l == -INFINITY || (nan_rows && isnan(l)))
                  : !(fabs(l - lr) <= tol * (1 + fabs(lr)))) {
          snprintf(why, len, "lse[%lld] = %g, ref %g", (long long)row, l, lr);
          return -1;
        }
      }
  double err = den > 0 ? sqrt(num / den) : sqrt(num);
  if (!(err <= tol)) {
    snprintf(why, len, "relative error %.3g > %.3g", err, tol);
    return -1;
  }
  return 0;
}
