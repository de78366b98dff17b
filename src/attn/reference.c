/* The fp64 oracle every backend is checked against: softmax(scale*QK^T +
 * mask) V computed in double from the stored (already rounded) inputs.
 *
 * Conventions (the "careful" ones math and flash follow):
 *  - a key is left out of query i's sum when the causal rule hides it, a bool
 *    mask holds 0 there, or an additive mask holds -inf there. Left out means
 *    left out: a NaN in K or V at such a key does not reach query i. (GEMM
 *    backends multiply such V rows by 0, so a NaN there is unspecified for
 *    them; the tests keep NaN/Inf at keys every query sees.)
 *  - a row with no key left, or whose largest score is -inf, gives 0 and
 *    lse -inf.
 *  - otherwise IEEE arithmetic: the max is NaN-propagating, so a NaN score
 *    makes the whole row NaN; +inf scores give NaN (inf - inf), as they would
 *    in any exp(s - max) softmax.
 * Work is split over (batch, query head) with OpenMP; each thread holds one
 * head's K and V in double, O(Sk * D). */
#include <math.h>
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"
#include "attn/seqs.h"

/* Element (b, h, s, d) of a host tensor as double. */
static double element(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d) {
  return attn_cpu_load(t->data, t->dtype, attn_cpu_offset(t, b, h, s, d));
}

typedef struct {
  const attn_args *a;
  int64_t sq, sk, d, hq, hkv;
  double scale;
  int64_t causal_off;
} ref_problem;

typedef struct {
  double *k, *v;       /* [Sk][D] of the head being worked on */
  double *q;           /* [D] */
  double *s;           /* [Sk] scores of the keys taking part */
  unsigned char *keep; /* [Sk] 1 when the key takes part */
} ref_work;

static void load_head(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d,
                      double *dst) {
  for (int64_t j = 0; j < s; j++)
    for (int64_t c = 0; c < d; c++) dst[j * d + c] = element(t, b, h, j, c);
}

/* Scores of query row i and which keys take part; returns the NaN-propagating
 * max over the keys taking part (-inf when none). The query is row qrow of
 * batch qb in q (i itself in the dense case). */
static double row_scores(const ref_problem *p, ref_work *w, int64_t b, int64_t h, int64_t i,
                         int64_t qb, int64_t qrow) {
  const attn_args *a = p->a;
  double m = -INFINITY;
  for (int64_t c = 0; c < p->d; c++) w->q[c] = element(&a->q, qb, h, qrow, c);
  for (int64_t j = 0; j < p->sk; j++) {
    double bias = 0;
    w->keep[j] = a->causal == ATTN_CAUSAL_NONE || j <= i + p->causal_off;
    if (w->keep[j] && a->mask_kind != ATTN_MASK_NONE) {
      bias = element(&a->mask, b, h, i, j);
      if (a->mask_kind == ATTN_MASK_BOOL) w->keep[j] = bias != 0, bias = 0;
      else if (bias == -INFINITY) w->keep[j] = 0;
    }
    if (!w->keep[j]) continue;
    double dot = 0;
    for (int64_t c = 0; c < p->d; c++) dot += w->q[c] * w->k[j * p->d + c];
    w->s[j] = p->scale * dot + bias;
    if (w->s[j] > m || isnan(w->s[j])) m = isnan(m) ? m : w->s[j];
  }
  return m;
}

static void row_output(const ref_problem *p, ref_work *w, double m, double *out, double *lse) {
  for (int64_t c = 0; c < p->d; c++) out[c] = 0;
  if (m == -INFINITY) { /* nothing to attend: 0 and lse -inf */
    if (lse) *lse = -INFINITY;
    return;
  }
  double l = 0;
  for (int64_t j = 0; j < p->sk; j++) {
    if (!w->keep[j]) continue;
    double e = exp(w->s[j] - m);
    l += e;
    for (int64_t c = 0; c < p->d; c++) out[c] += e * w->v[j * p->d + c];
  }
  for (int64_t c = 0; c < p->d; c++) out[c] /= l;
  if (lse) *lse = m + log(l);
}

static int ref_work_alloc(ref_work *w, int64_t sk, int64_t d) {
  w->k = malloc((size_t)(sk * d) * sizeof(double));
  w->v = malloc((size_t)(sk * d) * sizeof(double));
  w->q = malloc((size_t)d * sizeof(double));
  w->s = malloc((size_t)sk * sizeof(double));
  w->keep = malloc((size_t)sk);
  return w->k && w->v && w->q && w->s && w->keep;
}

static void ref_work_free(ref_work *w) {
  free(w->k), free(w->v), free(w->q), free(w->s), free(w->keep);
}

/* One (batch, query head): every query row. */
static void ref_head(const ref_problem *p, ref_work *w, int64_t b, int64_t h, double *out_ref,
                     double *lse_ref) {
  int64_t hk = h / (p->hq / p->hkv);
  load_head(&p->a->k, b, hk, p->sk, p->d, w->k);
  load_head(&p->a->v, b, hk, p->sk, p->d, w->v);
  for (int64_t i = 0; i < p->sq; i++) {
    int64_t row = (b * p->hq + h) * p->sq + i;
    double m = row_scores(p, w, b, h, i, b, i);
    row_output(p, w, m, out_ref + row * p->d, lse_ref ? lse_ref + row : NULL);
  }
}

/* One (sequence b, query head h) of a several-sequence problem: its keys
 * gathered through the view (pages, offsets or cache rows), causal per
 * sequence (bottom-right). */
static void ref_seq_head(const attn_seqs_view *v, ref_problem *p, ref_work *w, int64_t b, int64_t h,
                         double *out_ref, double *lse_ref) {
  int64_t nq = attn_seqs_nq(v, b), nk = attn_seqs_nk(v, b), hk = h / (p->hq / p->hkv);
  for (int64_t j = 0; j < nk; j++) {
    int64_t tb, row;
    attn_seqs_kv_at(v, b, j, &tb, &row);
    for (int64_t c = 0; c < p->d; c++) {
      w->k[j * p->d + c] = element(&p->a->k, tb, hk, row, c);
      w->v[j * p->d + c] = element(&p->a->v, tb, hk, row, c);
    }
  }
  p->sk = nk, p->causal_off = nk - nq;
  for (int64_t t = 0; t < nq; t++) {
    int64_t qb, qrow, at = attn_seqs_lse_at(v, b, h, t);
    attn_seqs_q_at(v, b, t, &qb, &qrow);
    double m = row_scores(p, w, b, h, t, qb, qrow);
    row_output(p, w, m, out_ref + at * p->d, lse_ref ? lse_ref + at : NULL);
  }
}

static attn_status reference_seqs(const attn_args *args, double *out_ref, double *lse_ref) {
  attn_seqs_view v;
  attn_status st = attn_seqs_view_make_host(args, &v);
  if (st) return st;
  ref_problem base = {args, 0, v.max_kv, v.d, v.hq, v.hkv, attn_scale_of(args), 0};
  int64_t items = v.batch * v.hq;
  int failed = 0;
#pragma omp parallel reduction(| : failed)
  {
    ref_work w;
    ref_problem p = base;
    if (!ref_work_alloc(&w, v.max_kv > 0 ? v.max_kv : 1, v.d)) failed = 1;
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < items; it++)
      if (!failed) ref_seq_head(&v, &p, &w, it / v.hq, it % v.hq, out_ref, lse_ref);
    ref_work_free(&w);
  }
  attn_seqs_view_free(&v);
  if (failed)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY,
                     "the fp64 reference could not allocate %lld bytes of K/V rows",
                     (long long)(2 * base.sk * base.d * (int64_t)sizeof(double)));
  return ATTN_STATUS_OK;
}

attn_status attn_reference_f64(const attn_args *args, double *out_ref, double *lse_ref) {
  attn_status st = attn_args_check(args);
  if (st) return st;
  if (args->q.device != ATTN_DEVICE_CPU)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "the fp64 reference reads host tensors; q is on device %d", args->q.device);
  if (!out_ref) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "out_ref is NULL");
  if (args->seqs) return reference_seqs(args, out_ref, lse_ref);
  ref_problem p = {args,
                   attn_seq_q(args),
                   attn_seq_k(args),
                   attn_head_dim(args),
                   attn_heads_q(args),
                   attn_heads_kv(args),
                   attn_scale_of(args),
                   attn_cpu_causal_offset(args)};
  int64_t items = attn_batch(args) * p.hq;
  int failed = 0;
#pragma omp parallel reduction(| : failed)
  {
    ref_work w;
    if (!ref_work_alloc(&w, p.sk, p.d)) failed = 1;
#pragma omp for schedule(dynamic)
    for (int64_t it = 0; it < items; it++)
      if (!failed) ref_head(&p, &w, it / p.hq, it % p.hq, out_ref, lse_ref);
    ref_work_free(&w);
  }
  if (failed)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY,
                     "the fp64 reference could not allocate %lld bytes of K/V rows",
                     (long long)(2 * p.sk * p.d * (int64_t)sizeof(double)));
  return ATTN_STATUS_OK;
}
