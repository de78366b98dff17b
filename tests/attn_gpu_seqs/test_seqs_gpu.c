/* Several sequences (attn_seqs) on the GPU against the fp64 reference:
 * flash's split-KV decode kernel on bf16/f16, D 64/128/256, packed and dense
 * queries (1..16 new tokens, empty and one-token sequences, longer prefill
 * chunks), dense, packed, contiguous-cache and paged K/V (shuffled and
 * shared pages, partly filled last pages, page sizes 1..64, lengths 0, 1 and
 * multiples of the page size), GQA 1..8, long caches that take several
 * splits (the combine kernel), prefill runs of 128+ rows (the dense flash
 * kernel per sequence), causal bottom-right or none, lse; each run
 * with the tables checked (a host copy) and again trusted. AUTO must take
 * it; math and naive (pages gathered) must pass the smaller cases; backends
 * that do not take several sequences must say so. Bad tables in
 * device memory are refused before launch with the entry named, out
 * untouched. Outputs poisoned (0xFF bytes) first.
 * SEQS_TEST_QUICK=1: fewer cases (compute-sanitizer). No GPU: exit 77. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include "attnprof/device.h"
#include "attn/cuda/fused/decode_cuda.h"
#include "attn/seqs_testutil.h"

static int failures, passes, split_cases;

typedef struct {
  void *q, *k, *v, *out, *tab[4];
  float *lse;
  attn_seqs seqs;
  attn_args args;
} dev_case;

static void *to_dev(const void *h, size_t bytes) {
  void *d = NULL;
  if (!h || !bytes) return NULL;
  if (attn_cuda_malloc(0, bytes, &d) || attn_cuda_to_device(0, d, h, bytes)) return NULL;
  return d;
}

static int dev_make(dev_case *d, const seqs_case *c) {
  memset(d, 0, sizeof *d);
  const seqs_spec *s = &c->spec;
  d->q = to_dev(c->q, c->q_bytes), d->k = to_dev(c->k, c->kv_bytes);
  d->v = to_dev(c->v, c->kv_bytes);
  if (attn_cuda_malloc(0, c->out_bytes, &d->out)) return -1;
  if (c->lse && attn_cuda_malloc(0, c->lse_n * 4, (void **)&d->lse)) return -1;
  d->seqs = c->seqs;
  d->seqs.q_offsets = d->tab[0] = to_dev(c->q_off, c->q_off ? (size_t)(s->b + 1) * 4 : 0);
  d->seqs.kv_offsets = d->tab[1] = to_dev(c->kv_off, c->kv_off ? (size_t)(s->b + 1) * 4 : 0);
  d->seqs.kv_lens = d->tab[2] = c->seqs.kv_lens ? to_dev(c->kv_len, (size_t)s->b * 4) : NULL;
  d->seqs.block_table = d->tab[3] = to_dev(c->table, c->table ? c->table_n * 4 : 0);
  d->args = c->args;
  d->args.q.data = d->q, d->args.k.data = d->k, d->args.v.data = d->v;
  d->args.out.data = d->out, d->args.lse = d->lse;
  d->args.q.device = d->args.k.device = d->args.v.device = d->args.out.device = 0;
  d->args.seqs = &d->seqs;
  return d->q && d->k && d->v ? 0 : -1;
}

static void dev_free(dev_case *d) {
  attn_cuda_free(0, d->q), attn_cuda_free(0, d->k), attn_cuda_free(0, d->v);
  attn_cuda_free(0, d->out), attn_cuda_free(0, d->lse);
  for (int i = 0; i < 4; i++) attn_cuda_free(0, d->tab[i]);
}

/* Poison, run, copy back, check. */
static int run_checked(dev_case *d, seqs_case *c, attn_backend b, char *why, size_t len) {
  attn_cuda_fill_bytes(0, d->out, 0xff, c->out_bytes);
  if (d->lse) attn_cuda_fill_bytes(0, d->lse, 0xff, c->lse_n * 4);
  attn_status st = attn_forward(test_engine(), b, &d->args);
  if (st) {
    snprintf(why, len, "refused: %s", attn_last_error());
    return -1;
  }
  if (attn_cuda_synchronize(0)) {
    snprintf(why, len, "after the run: %s", attn_last_error());
    return -1;
  }
  attn_cuda_to_host(0, c->out, d->out, c->out_bytes);
  if (d->lse) attn_cuda_to_host(0, c->lse, d->lse, c->lse_n * 4);
  return seqs_case_check(c, c->out, c->lse, 0, 1e-2, why, len);
}

static void run_case(const seqs_spec *s, uint64_t seed) {
  test_rng r = {seed};
  seqs_case c;
  dev_case d;
  char desc[256], why[512];
  seqs_spec_describe(s, desc, sizeof desc);
  if (seqs_case_make(&c, s, &r) || dev_make(&d, &c)) {
    printf("FAIL setup %s: %s\n", desc, attn_last_error());
    failures++;
    seqs_case_free(&c);
    return;
  }
  if (attn_decode_cuda_splits(&d.args) > 1) split_cases++;
  static const attn_backend bs[] = {ATTN_BACKEND_FLASH, ATTN_BACKEND_AUTO};
  for (int i = 0; i < 3; i++) {
    d.seqs.trusted = i == 2;
    /* bounds, not exact maxima: a loose bound must still give the right answer */
    d.seqs.max_q = s->max_new;
    d.seqs.max_kv = s->kv == SEQS_KV_PAGED ? d.seqs.max_pages * s->page_size : c.args.k.shape[2];
    if (!run_checked(&d, &c, bs[i % 2], why, sizeof why)) {
      passes++;
    } else if (failures++ < 25) {
      printf("FAIL %s%s: %s\n     %s\n", attn_backend_name(bs[i % 2]), i == 2 ? " trusted" : "",
             why, desc);
    }
  }
  d.seqs.trusted = 0;
  /* math and naive gather the pages and run one dense problem per sequence:
   * slower, so on the smaller cases only. naive's fully masked rows are NaN. */
  static const attn_backend gathered[] = {ATTN_BACKEND_MATH, ATTN_BACKEND_NAIVE};
  for (int i = 0; i < 2 && s->max_kv <= 300 && seed % 2 == 0; i++) {
    const int nan_rows = gathered[i] == ATTN_BACKEND_NAIVE;
    attn_cuda_fill_bytes(0, d.out, 0xff, c.out_bytes);
    if (d.lse) attn_cuda_fill_bytes(0, d.lse, 0xff, c.lse_n * 4);
    attn_status st = attn_forward(test_engine(), gathered[i], &d.args);
    int bad = st || attn_cuda_synchronize(0);
    if (!bad) {
      attn_cuda_to_host(0, c.out, d.out, c.out_bytes);
      if (d.lse) attn_cuda_to_host(0, c.lse, d.lse, c.lse_n * 4);
      bad = seqs_case_check(&c, c.out, c.lse, nan_rows, 1e-2, why, sizeof why);
    } else {
      snprintf(why, sizeof why, "%s", attn_last_error());
    }
    if (!bad) passes++;
    else if (failures++ < 25)
      printf("FAIL %s: %s\n     %s\n", attn_backend_name(gathered[i]), why, desc);
  }
  for (attn_backend b = ATTN_BACKEND_NAIVE; b < ATTN_BACKEND_COUNT; b++) {
    if (b == ATTN_BACKEND_FLASH) continue;
    if (attn_why_not(test_engine(), b, &d.args, why, sizeof why) == ATTN_STATUS_OK) continue; /* may take it */
    if (!strstr(why, "several sequences") && !strstr(why, "no implementation") &&
        !strstr(why, "cannot") && !strstr(why, "not available") && !strstr(why, "cuDNN")) {
      printf("FAIL %s refuses without naming several sequences: %s\n", attn_backend_name(b), why);
      failures++;
    }
  }
  dev_free(&d);
  seqs_case_free(&c);
}

static seqs_spec gpu_spec(test_rng *r, int i) {
  static const int64_t ds[] = {64, 128, 256};
  static const int64_t pss[] = {1, 7, 16, 64};
  seqs_spec s = seqs_spec_random(r);
  s.dtype = test_rng_int(r, 0, 1) ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F16;
  s.d = ds[i % 3];
  s.page_size = pss[test_rng_int(r, 0, 3)];
  s.max_new = i % 4 == 3 ? test_rng_int(r, 17, 90) : test_rng_int(r, 1, 16);
  if (i % 8 == 7) s.max_new = test_rng_int(r, 128, 300), s.b = test_rng_int(r, 1, 3); /* dense path */
  s.max_kv = i % 5 == 0 ? test_rng_int(r, 1000, 6000) : test_rng_int(r, 1, 300);
  if (s.max_kv > 1000) s.b = test_rng_int(r, 1, 2), s.hkv = 1; /* several splits */
  return s;
}

/* A paged decode whose table (in device memory) has a page out of range. */
static void bad_device_table(void) {
  seqs_spec s = {.dtype = ATTN_DTYPE_BF16, .b = 3, .hkv = 2, .group = 4, .d = 128,
                 .kv = SEQS_KV_PAGED, .page_size = 16, .max_new = 1, .max_kv = 100,
                 .causal = ATTN_CAUSAL_BOTTOM_RIGHT};
  test_rng r = {7};
  seqs_case c;
  dev_case d;
  seqs_case_make(&c, &s, &r);
  c.kv_len[1] = 1, c.table[1 * c.seqs.max_pages] = 912; /* row 1 uses one page */
  dev_make(&d, &c);
  attn_cuda_fill_bytes(0, d.out, 0xff, c.out_bytes);
  attn_status st = attn_forward(test_engine(), ATTN_BACKEND_FLASH, &d.args);
  char want[96];
  snprintf(want, sizeof want, "block_table[1][0] = 912: pages are 0..%lld", (long long)c.pages - 1);
  unsigned char *back = malloc(c.out_bytes);
  attn_cuda_to_host(0, back, d.out, c.out_bytes);
  size_t touched = 0;
  for (size_t i = 0; i < c.out_bytes; i++) touched += back[i] != 0xff;
  if (st != ATTN_STATUS_INVALID_ARGUMENT || !strstr(attn_last_error(), want) || touched) {
    printf("FAIL bad device table: status %d, \"%s\" (want \"%s\"), %zu bytes of out written\n",
           (int)st, attn_last_error(), want, touched);
    failures++;
  } else {
    passes++;
  }
  free(back);
  dev_free(&d);
  seqs_case_free(&c);
}

int main(void) {
  char why[512];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("skipped: %s\n", why);
    return 77;
  }
  int quick = getenv("SEQS_TEST_QUICK") && atoi(getenv("SEQS_TEST_QUICK"));
  test_rng r = {test_seed(0x5e9513)};
  int n = quick ? 12 : 240;
  for (int i = 0; i < n; i++) {
    seqs_spec s = gpu_spec(&r, i);
    run_case(&s, test_rng_next(&r));
  }
  bad_device_table();
  printf("%d passed, %d failed; %d cases ran several splits\n", passes, failures, split_cases);
  if (!quick && split_cases < 10) {
    printf("FAIL only %d cases took several splits: the combine kernel is not covered\n",
           split_cases);
    return 1;
  }
  return failures ? 1 : 0;
}
#else
#include <stdio.h>
int main(void) {
  printf("skipped: built without CUDA\n");
  return 77;
}
#endif
