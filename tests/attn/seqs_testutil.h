/* Random several-sequence problems (attn_seqs) for the CPU and GPU tests:
 * packed or dense queries, dense, packed, contiguous-cache or paged K/V with
 * shuffled and shared pages and partly filled last pages, lengths 0, 1 and
 * multiples of the page size; host buffers and the fp64 reference; the check
 * of one run's output (poisoned before, fully written after). */
#ifndef ATTNPROF_TESTS_ATTN_SEQS_TESTUTIL_H
#define ATTNPROF_TESTS_ATTN_SEQS_TESTUTIL_H

#include "attn/attn_testutil.h"

enum { SEQS_KV_DENSE, SEQS_KV_PACKED, SEQS_KV_CACHE, SEQS_KV_PAGED, SEQS_KV_COUNT };

typedef struct {
  attn_dtype dtype;
  int64_t b, hkv, group, d;
  int q_packed, kv;   /* SEQS_KV_* */
  int64_t page_size;  /* paged */
  int64_t max_new;    /* query tokens per sequence: 1..max_new (dense q: exactly) */
  int64_t max_kv;     /* keys per sequence up to this */
  attn_causal causal; /* NONE or BOTTOM_RIGHT */
  int lse;
  int64_t lens[4]; /* lens[0] > 0: sequence b has lens[b % 4] keys (<= max_kv) */
} seqs_spec;

typedef struct {
  seqs_spec spec;
  attn_seqs seqs;
  attn_args args; /* host tensors; args.seqs = &seqs */
  void *q, *k, *v, *out;
  float *lse;
  int32_t *q_off, *kv_off, *kv_len, *table;
  size_t q_bytes, kv_bytes, out_bytes, lse_n, table_n;
  int64_t total_q, pages;
  double *ref, *lse_ref;
} seqs_case;

/* A random spec whose sizes suit the CPU sweep. */
seqs_spec seqs_spec_random(test_rng *r);
void seqs_spec_describe(const seqs_spec *s, char *buf, size_t n);
/* Lengths, tables and inputs drawn at random, and the reference. 0 on success. */
int seqs_case_make(seqs_case *c, const seqs_spec *s, test_rng *r);
void seqs_case_free(seqs_case *c);
/* Fills out (and lse) with NaN. */
void seqs_case_poison(seqs_case *c);
/* Checks out/lse (host copies shaped like c->out / c->lse): every element
 * written; rows that see no key 0 and lse -inf (or NaN when nan_rows);
 * rel. error <= tol. 0 when it passes, else why holds the reason. */
int seqs_case_check(const seqs_case *c, const void *out, const float *lse, int nan_rows, double tol,
                    char *why, size_t len);

#endif
