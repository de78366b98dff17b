/* Several sequences (attn_seqs) on the GPU against the fp64 reference:
 * flash's split-KV decode kernel on bf16/f16, D 64/128/256, packed and dense
 * queries (1..16 new tokens, empty and one-token sequences, longer prefill
 * chunks), dense, packed, contiguous-cache and paged K/V (shuffled and
 * shared pages, partly filled last pages, page sizes 1..64, lengths 0, 1 and
 * multiples of the page size), GQA 1..8, long caches that take several
 * splits (the combine kernel), prefill runs of 128+ rows (the dense flash
 * kernel per sequence), small grids through the cluster kernel (fixed
 * lengths per sequence), the split kernel at one split and at several with
 * NaN in the cache's spare rows, causal bottom-right or none, lse; each run
 * with the tables checked (a host copy) and again trusted. AUTO must take
 * it; math and naive (pages gathered) must pass the smaller cases; backends
 * that do not take several sequences must say so. Bad tables in
 * device memory are refused before launch with the entry named, out
 * untouched. Outputs poisoned (0xFF bytes) first.
 * --cudnn: the cudnn backend instead (dense queries, 1..16 new tokens,
 * against shuffled paged or contiguous caches; packed queries with packed
 * K/V (varlen prefill, empty and one-token sequences) or against pages; D
 * 64/128/256, GQA 1..8, page sizes 1, 16, 64, lengths 1 and page
 * multiples), checked and trusted, and its refusals of tables whose unused
 * entries are not pages, of page sizes off powers of 2 (7) and of an lse
 * with packed queries. SEQS_CUDNN_MAP=1 first prints what cuDNN
 * takes per D, new tokens, page size, causal and pool layout.
 * SEQS_TEST_QUICK=1: fewer cases (compute-sanitizer); 2: only six of the
 * cluster kernel's small-grid cases; 3: three of them (paged); 4: one, the
 * serving bench's cell (B=1, Hkv 8, G 4, D128, cache); 5: only the split
 * kernel's poisoned-cache cases of quick mode (spare_rows_cases_run). No
 * GPU: exit 77. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include "attnprof/device.h"
#include "attn/cuda/fused/decode_cuda.h"
#include "attn/seqs_testutil.h"

static int failures, passes, split_cases, cluster_cases;

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
  int cluster = 0;
  if (attn_decode_cuda_splits(test_engine(), &d.args, &cluster) > 1) split_cases += !cluster;
  cluster_cases += cluster > 0;
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
    if (attn_why_not(test_engine(), b, &d.args, why, sizeof why) == ATTN_STATUS_OK)
      continue; /* may take it */
    if (!strstr(why, "several sequences") && !strstr(why, "no implementation") &&
        !strstr(why, "cannot") && !strstr(why, "not available") && !strstr(why, "cuDNN")) {
      printf("FAIL %s refuses without naming several sequences: %s\n", attn_backend_name(b), why);
      failures++;
    }
  }
  dev_free(&d);
  seqs_case_free(&c);
}

/* A random problem on the GPU's terms: 16-bit, D by i, a page size the
 * kernels must take (odd ones included). */
static seqs_spec gpu_spec_base(test_rng *r, int i) {
  static const int64_t ds[] = {64, 128, 256};
  static const int64_t pss[] = {1, 7, 16, 64};
  seqs_spec s = seqs_spec_random(r);
  s.dtype = test_rng_int(r, 0, 1) ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F16;
  s.d = ds[i % 3];
  s.page_size = pss[test_rng_int(r, 0, 3)];
  return s;
}

static seqs_spec gpu_spec(test_rng *r, int i) {
  seqs_spec s = gpu_spec_base(r, i);
  s.max_new = i % 4 == 3 ? test_rng_int(r, 17, 90) : test_rng_int(r, 1, 16);
  if (i % 8 == 7)
    s.max_new = test_rng_int(r, 128, 300), s.b = test_rng_int(r, 1, 3); /* dense path */
  s.max_kv = i % 5 == 0 ? test_rng_int(r, 1000, 6000) : test_rng_int(r, 1, 300);
  if (s.max_kv > 1000) s.b = test_rng_int(r, 1, 2), s.hkv = 1; /* several splits */
  return s;
}

/* Small grids that the plan gives the cluster kernel (decode_cluster.cuh):
 * B 1..4, Hkv 1, 2 or 8, G 1..8 with G x new tokens <= 16, D 64/128/256,
 * contiguous cache, dense and packed K/V, pages of 16 and 7, dense and
 * packed queries; lengths fixed per
 * sequence: a long one (up to what 8 CTAs hold, odd), 1, a multiple of 64
 * and an odd one. The plan copies unpaged K/V by cp.async and pages by
 * bulk copies; cluster_kind_cases[paged] counts the fixed cases by kind. */
static int cluster_kind_cases[2];
static int cluster_cases_run(int quick) {
  static const int kinds[] = {SEQS_KV_CACHE, SEQS_KV_PAGED, SEQS_KV_DENSE, SEQS_KV_PACKED};
  static const int64_t groups[] = {1, 2, 4, 8}, ds[] = {64, 128, 256};
  test_rng r = {test_seed(0xc105e9)};
  int n = 0, ran = 0;
  if (quick == 5) return 0;
  for (int di = 0; di < 3; di++)
    for (int ki = 0; ki < 4; ki++)
      for (int gi = 0; gi < 4; gi++, n++) {
        if (quick == 4 ? n != 18 : quick == 3 ? n % 16 != 6 : quick && n % 8) continue;
        seqs_spec s;
        memset(&s, 0, sizeof s);
        s.dtype = n % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16;
        s.d = ds[di], s.kv = kinds[ki], s.group = groups[gi];
        s.hkv = gi == 2 ? 8 : 1 + n % 2, s.b = gi == 2 ? 1 : 1 + n % 4;
        s.page_size = n % 3 ? 16 : 7;
        s.max_new = 16 / s.group > 3 ? 3 : 16 / s.group;
        s.q_packed = n % 5 == 1;
        s.causal = n % 3 == 2 ? ATTN_CAUSAL_NONE : ATTN_CAUSAL_BOTTOM_RIGHT;
        s.lse = n % 2 == 0;
        /* 8 CTAs of DECODE_CLUSTER_KEYS (2048 keys at D128), so that the
         * plan's C = 8 or 16 both hold them; pages past the last and the
         * cache's spare rows keep max_kv within it */
        const int packed = s.kv == SEQS_KV_PACKED; /* max_kv: the packed total */
        const int64_t most = 8 * (32768 / s.d) - 81 - (packed ? 200 : 0);
        s.lens[0] = gi == 3 && !packed ? 960 : most - 2 * gi, s.lens[1] = 1;
        s.lens[2] = packed ? 128 : 640, s.lens[3] = packed ? 65 : 333;
        s.max_kv = s.lens[0];
        const int paged = s.kv == SEQS_KV_PAGED;
        run_case(&s, test_rng_next(&r));
        ran++;
        cluster_kind_cases[paged]++;
      }
  return ran;
}

/* Spare cache rows (past each sequence's length) to 0xFF bytes: NaN in
 * bf16 and f16, which a kernel must not let reach out (0 x NaN is NaN). */
static void poison_spare_rows(seqs_case *c) {
  const seqs_spec *s = &c->spec;
  const int64_t es = (int64_t)attn_dtype_size(s->dtype), rows = c->args.k.shape[2];
  const size_t row_bytes = (size_t)(s->hkv * s->d * es); /* memory [B, rows, Hkv, D] */
  for (int64_t b = 0; b < s->b; b++)
    for (int64_t j = c->kv_len[b]; j < rows; j++) {
      memset((char *)c->k + (size_t)(b * rows + j) * row_bytes, 0xff, row_bytes);
      memset((char *)c->v + (size_t)(b * rows + j) * row_bytes, 0xff, row_bytes);
    }
}

/* The split kernel, flash only: one split on 16 x 8 CTAs (no cluster),
 * contiguous cache with NaN in its spare rows and dense K/V, D 64/128/256,
 * 1, 3 and 20 new tokens (20 x G 4: two row groups), lengths 257, 1, 64 and
 * 130 (the end inside and past the first blocks); and several splits with
 * two row atoms (20 query rows: no cluster; the merge's float4 partials).
 * The plan must give the one-split cases one split. */
static int spare_rows_cases_run(int quick) {
  test_rng r = {test_seed(0xf1c5)};
  int ran = 0;
  for (int n = 0; n < 12; n++) {
    if (quick && n % 4 && n != 5) continue;
    seqs_spec s;
    memset(&s, 0, sizeof s);
    s.dtype = n % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16;
    s.d = n % 3 == 0 ? 128 : n % 3 == 1 ? 64 : 256;
    s.kv = n % 4 == 3 ? SEQS_KV_DENSE : SEQS_KV_CACHE;
    s.b = 16, s.hkv = 8, s.group = 4, s.max_new = n % 5 == 4 ? 20 : n % 3 == 2 ? 3 : 1;
    s.causal = n % 2 ? ATTN_CAUSAL_NONE : ATTN_CAUSAL_BOTTOM_RIGHT;
    s.lse = n % 3 != 1;
    s.lens[0] = 257, s.lens[1] = 1, s.lens[2] = 64, s.lens[3] = 130, s.max_kv = 257;
    const int several = n % 6 == 5; /* long, few CTAs, no cluster: several splits */
    if (several) /* 20 query rows a KV head: two row atoms, not the cluster kernel's */
      s.b = 2, s.hkv = 2, s.max_new = 5, s.lens[0] = 2000, s.lens[1] = 1500, s.max_kv = 2000;
    seqs_case c;
    dev_case d;
    char desc[256], why[512];
    seqs_spec_describe(&s, desc, sizeof desc);
    if (seqs_case_make(&c, &s, &r) || dev_make(&d, &c)) {
      printf("FAIL setup %s: %s\n", desc, attn_last_error());
      failures++;
      seqs_case_free(&c);
      continue;
    }
    if (s.kv == SEQS_KV_CACHE) { /* after the reference, which reads only lengths */
      poison_spare_rows(&c);
      attn_cuda_to_device(0, d.k, c.k, c.kv_bytes), attn_cuda_to_device(0, d.v, c.v, c.kv_bytes);
    }
    int cluster = 0;
    const int splits = attn_decode_cuda_splits(test_engine(), &d.args, &cluster);
    if (cluster || (several ? splits < 2 : splits != 1)) {
      printf("FAIL plan: %d splits, cluster %d, want %s\n     %s\n", splits, cluster,
             several ? "several splits" : "one split", desc);
      failures++;
    }
    split_cases += several && splits > 1;
    if (!run_checked(&d, &c, ATTN_BACKEND_FLASH, why, sizeof why)) passes++;
    else if (failures++ < 25) printf("FAIL flash: %s\n     %s\n", why, desc);
    ran++;
    dev_free(&d);
    seqs_case_free(&c);
  }
  return ran;
}

/* A paged decode whose table (in device memory) has a page out of range. */
static void bad_device_table(void) {
  seqs_spec s = {.dtype = ATTN_DTYPE_BF16,
                 .b = 3,
                 .hkv = 2,
                 .group = 4,
                 .d = 128,
                 .kv = SEQS_KV_PAGED,
                 .page_size = 16,
                 .max_new = 1,
                 .max_kv = 100,
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

/* ---- cudnn: paged and contiguous caches through cuDNN's graph ---------- */

/* Query rows of sequence b. */
static int64_t case_nq(const seqs_case *c, int64_t b) {
  return c->q_off ? c->q_off[b + 1] - c->q_off[b] : c->spec.max_new;
}

/* Every row sees a key (cudnn refuses rows that see none); an empty
 * sequence has no rows. */
static int cudnn_lengths_fit(const seqs_case *c) {
  for (int64_t b = 0; b < c->spec.b; b++) {
    const int64_t nq = case_nq(c, b);
    if (nq > 0 && c->kv_len[b] < (c->spec.causal == ATTN_CAUSAL_BOTTOM_RIGHT ? nq : 1)) return 0;
  }
  return 1;
}

/* Packed queries through cuDNN: cases run, and among them sequences with no
 * and with one query token. */
static int packed_runs, packed_empty, packed_one;

static void count_packed(const seqs_case *c) {
  if (!c->q_off) return;
  packed_runs++;
  for (int64_t b = 0; b < c->spec.b; b++) {
    packed_empty += case_nq(c, b) == 0;
    packed_one += case_nq(c, b) == 1;
  }
}

/* Unused table entries: a page each (seqs_testutil leaves them out of
 * range, which cudnn must refuse first). 1 when any was out of range. */
static int cudnn_fill_table(seqs_case *c, dev_case *d) {
  int changed = 0;
  for (int64_t b = 0; b < c->spec.b; b++)
    for (int64_t p = 0; p < c->seqs.max_pages; p++) {
      int32_t *e = &c->table[b * c->seqs.max_pages + p];
      if (*e >= 0 && *e < c->pages) continue;
      *e = (int32_t)((b * 7 + p * 3) % c->pages), changed = 1;
    }
  attn_cuda_to_device(0, d->tab[3], c->table, c->table_n * 4);
  return changed;
}

static int cudnn_refusals_shown;

/* cudnn must refuse d's problem with a reason holding `want`. */
static void cudnn_expect_refusal(dev_case *d, const char *want, const char *desc) {
  char why[512];
  attn_status st = attn_why_not(test_engine(), ATTN_BACKEND_CUDNN, &d->args, why, sizeof why);
  if (st == ATTN_STATUS_OK || !strstr(why, want)) {
    printf("FAIL cudnn should refuse (\"%s\"): %s\n     %s\n", want, st ? why : "(accepted)", desc);
    failures++;
  } else {
    passes++;
  }
}

static void cudnn_case(const seqs_spec *s, test_rng *r) {
  seqs_case c;
  dev_case d;
  char desc[256], why[512];
  int tries = 0;
  do {
    if (tries) seqs_case_free(&c);
    if (seqs_case_make(&c, s, r)) {
      printf("FAIL setup: %s\n", attn_last_error());
      failures++;
      seqs_case_free(&c);
      return;
    }
  } while (!cudnn_lengths_fit(&c) && ++tries < 200);
  seqs_spec_describe(s, desc, sizeof desc);
  if (!cudnn_lengths_fit(&c) || dev_make(&d, &c)) {
    printf("FAIL setup %s: %s\n", desc, tries >= 200 ? "no fitting lengths" : attn_last_error());
    failures++;
    seqs_case_free(&c);
    return;
  }
  /* attn.h's packed lse is [Hq, total_q]: cudnn gives none, and says so;
   * cuDNN's paged load takes power-of-2 pages only: the why-not must say so */
  const int lse_refused = s->q_packed && s->lse;
  if (lse_refused || (s->kv == SEQS_KV_PAGED && (s->page_size & (s->page_size - 1)))) {
    if (s->kv == SEQS_KV_PAGED) cudnn_fill_table(&c, &d);
    cudnn_expect_refusal(&d, lse_refused ? "lse for packed queries" : "powers of 2", desc);
    dev_free(&d);
    seqs_case_free(&c);
    return;
  }
  if (s->kv == SEQS_KV_PAGED) {
    /* the table as flash takes it: entries past a sequence's pages out of range */
    int had_bad = 0;
    for (size_t i = 0; i < c.table_n; i++) had_bad |= c.table[i] < 0 || c.table[i] >= c.pages;
    attn_status st = attn_why_not(test_engine(), ATTN_BACKEND_CUDNN, &d.args, why, sizeof why);
    if (had_bad && (st == ATTN_STATUS_OK || !strstr(why, "lies past"))) {
      printf("FAIL cudnn took a table with unused entries out of range: %s\n     %s\n",
             st ? why : "(accepted)", desc);
      failures++;
    } else if (had_bad) {
      passes++;
    }
    cudnn_fill_table(&c, &d);
  }
  for (int t = 0; t < 2; t++) {
    d.seqs.trusted = t;
    d.seqs.max_q = s->max_new;
    d.seqs.max_kv = s->kv == SEQS_KV_PAGED ? d.seqs.max_pages * s->page_size : c.args.k.shape[2];
    if (!run_checked(&d, &c, ATTN_BACKEND_CUDNN, why, sizeof why)) {
      passes++;
      if (t == 0) count_packed(&c);
    } else if (failures++ < 25 || cudnn_refusals_shown++ < 4) {
      printf("FAIL cudnn%s: %s\n     %s\n", t ? " trusted" : "", why, desc);
    }
  }
  dev_free(&d);
  seqs_case_free(&c);
}

static seqs_spec cudnn_spec(test_rng *r, int i) {
  seqs_spec s = gpu_spec_base(r, i);
  s.q_packed = 0;
  s.kv = i % 4 == 3 ? SEQS_KV_CACHE : SEQS_KV_PAGED;
  s.max_new = i % 5 == 0 ? 1 : test_rng_int(r, 1, 16);
  s.max_kv = i % 6 == 0 ? test_rng_int(r, 1000, 4000) : test_rng_int(r, 16, 300);
  s.b = test_rng_int(r, 1, 6);
  if (i % 4 == 1 || i % 8 == 2) { /* packed queries: varlen prefill, or chunks against pages */
    s.q_packed = 1, s.kv = i % 4 == 1 ? SEQS_KV_PACKED : SEQS_KV_PAGED;
    s.max_new = test_rng_int(r, 1, i % 4 == 1 ? 64 : 16), s.b = test_rng_int(r, 1, 4);
    if (s.page_size == 7) s.page_size = 16;
  }
  return s;
}

/* What cuDNN takes, printed (a map for the reader, not a check): the plan
 * for pools kept [pages, page_size, Hkv, D] (attn.h's) or [pages, Hkv,
 * page_size, D], per D, new tokens, page size, causal. Only the why-not is
 * asked: the data are not read. */
static void cudnn_probe_map(test_rng *r) {
  /* D, new tokens, page size, causal, pool head-major */
  static const int64_t rows[][5] = {{64, 1, 16, 1, 0},  {128, 1, 16, 1, 0}, {256, 1, 16, 1, 0},
                                    {64, 8, 16, 1, 0},  {128, 8, 16, 1, 0}, {256, 8, 16, 1, 0},
                                    {128, 4, 1, 1, 0},  {128, 4, 64, 1, 0}, {128, 4, 16, 0, 0},
                                    {128, 4, 16, 1, 1}, {128, 16, 7, 1, 0}};
  char why[512];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    seqs_spec s = cudnn_spec(r, 1);
    s.d = rows[i][0], s.max_new = rows[i][1], s.page_size = rows[i][2];
    s.causal = rows[i][3] ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
    s.b = 2, s.max_kv = 200, s.kv = SEQS_KV_PAGED;
    seqs_case c;
    dev_case d;
    int tries = 0;
    do {
      if (tries) seqs_case_free(&c);
      seqs_case_make(&c, &s, r);
    } while (!cudnn_lengths_fit(&c) && ++tries < 200);
    dev_make(&d, &c);
    cudnn_fill_table(&c, &d);
    if (rows[i][4]) { /* same shape, pages stored head-major */
      attn_tensor *t[2] = {&d.args.k, &d.args.v};
      for (int j = 0; j < 2; j++) t[j]->strides[1] = s.page_size * s.d, t[j]->strides[2] = s.d;
    }
    attn_status st = attn_why_not(test_engine(), ATTN_BACKEND_CUDNN, &d.args, why, sizeof why);
    printf("cudnn map: pool %s D=%-3lld new=%-2lld page=%-2lld %s: %s\n",
           rows[i][4] ? "[pages,Hkv,ps,D]" : "[pages,ps,Hkv,D]", (long long)s.d,
           (long long)s.max_new, (long long)s.page_size, s.causal ? "causal-br" : "full",
           st ? why : "taken");
    dev_free(&d);
    seqs_case_free(&c);
  }
}

static int cudnn_main(int quick) {
  char why[512];
  test_rng r = {test_seed(0xcd9513)};
  /* Built without cuDNN: nothing to test here. Built with it, a GPU machine
   * without a loadable libcudnn fails (test_cudnn_gpu_missing_lib is the
   * case that expects it). */
  seqs_spec probe = cudnn_spec(&r, 1);
  seqs_case c;
  dev_case d;
  seqs_case_make(&c, &probe, &r);
  dev_make(&d, &c);
  attn_status st = attn_why_not(test_engine(), ATTN_BACKEND_CUDNN, &d.args, why, sizeof why);
  dev_free(&d);
  seqs_case_free(&c);
  if (st && strstr(why, "no implementation")) {
    printf("skipped: %s\n", why);
    return 77;
  }
  if (getenv("SEQS_CUDNN_MAP")) cudnn_probe_map(&r);
  int n = quick ? 6 : getenv("SEQS_CUDNN_CASES") ? atoi(getenv("SEQS_CUDNN_CASES")) : 72;
  for (int i = 0; i < n; i++) {
    seqs_spec s = cudnn_spec(&r, i);
    cudnn_case(&s, &r);
  }
  printf("cudnn: %d passed, %d failed; packed queries: %d cases ran, with %d empty and %d "
         "one-token sequences\n",
         passes, failures, packed_runs, packed_empty, packed_one);
  if (!quick && (!packed_runs || !packed_empty || !packed_one)) {
    printf("FAIL packed queries are not covered (every case refused?)\n");
    return 1;
  }
  return failures || !passes ? 1 : 0;
}

int main(int argc, char **argv) {
  char why[512];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("skipped: %s\n", why);
    return 77;
  }
  int quick = getenv("SEQS_TEST_QUICK") ? atoi(getenv("SEQS_TEST_QUICK")) : 0;
  if (argc > 1 && !strcmp(argv[1], "--cudnn")) return cudnn_main(quick);
  test_rng r = {test_seed(0x5e9513)};
  int n = quick >= 2 ? 0 : quick ? 12 : 240; /* 2, 3: only the cluster kernel's cases */
  for (int i = 0; i < n; i++) {
    seqs_spec s = gpu_spec(&r, i);
    run_case(&s, test_rng_next(&r));
  }
  const int random_clusters = cluster_cases;
  const int fixed = cluster_cases_run(quick);
  const int spare_runs = quick >= 2 && quick != 5 ? 0 : spare_rows_cases_run(quick);
  bad_device_table();
  printf("%d passed, %d failed; %d cases ran several splits and a combine, %d the cluster "
         "kernel (%d of them random); fixed cluster cases: %d unpaged (cp.async), %d paged "
         "(bulk copies); %d runs of the split kernel on a poisoned cache\n",
         passes, failures, split_cases, cluster_cases, random_clusters, cluster_kind_cases[0],
         cluster_kind_cases[1], spare_runs);
  if (!quick && split_cases < 10) {
    printf("FAIL only %d cases took several splits: the combine kernel is not covered\n",
           split_cases);
    return 1;
  }
  /* on sm_90 the plan must give the fixed small-grid cases the cluster kernel */
  if (attn_decode_cuda_cluster_capable(0) && cluster_cases - random_clusters < fixed) {
    printf("FAIL only %d of the %d small-grid cases took the cluster kernel\n",
           cluster_cases - random_clusters, fixed);
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
