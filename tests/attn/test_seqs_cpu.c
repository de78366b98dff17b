/* Several sequences (attn_seqs) on every CPU backend that takes them (flash,
 * math, naive, naive_inplace, and AUTO) against the fp64 reference: random
 * cases (packed and dense queries; dense, packed, contiguous-cache and paged
 * K/V; shuffled and shared pages, partly filled last pages; lengths 0, 1 and
 * multiples of the page size; empty and one-token sequences; GQA 1..8; 1..16
 * new tokens and longer chunks; causal bottom-right or none; lse), then a
 * fixed set of edge cases, then every refusal of a bad table: named entry,
 * INVALID_ARGUMENT, output untouched. Outputs are poisoned before each run.
 * ATTNPROF_TEST_SEED changes the draw. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/seqs_testutil.h"

static int failures, passes;

static const attn_backend backends[] = {ATTN_BACKEND_FLASH, ATTN_BACKEND_MATH, ATTN_BACKEND_NAIVE,
                                        ATTN_BACKEND_NAIVE_INPLACE, ATTN_BACKEND_AUTO};

/* The bound on ||out - ref|| / ||ref||: 16-bit outputs are rounded once to
 * storage (1e-2 = 2.6 units of bf16 roundoff, 20 of f16); f32 sums in fp32
 * over at most 90 keys (1e-5 = 168 units of 2^-24). */
static double seqs_tol(attn_dtype dt) {
  return dt == ATTN_DTYPE_F32 ? 168 * test_unit_roundoff(dt) : 1e-2;
}

static void run_case(const seqs_spec *s, test_rng *r) {
  seqs_case c;
  char desc[256], why[512];
  seqs_spec_describe(s, desc, sizeof desc);
  if (seqs_case_make(&c, s, r)) {
    printf("FAIL setup %s\n", desc);
    failures++;
    seqs_case_free(&c);
    return;
  }
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    attn_backend b = backends[i];
    seqs_case_poison(&c);
    attn_status st = attn_forward(test_engine(), b, &c.args);
    int naive = b == ATTN_BACKEND_NAIVE || b == ATTN_BACKEND_NAIVE_INPLACE;
    if (st) {
      snprintf(why, sizeof why, "refused: %s", attn_last_error());
    } else if (!seqs_case_check(&c, c.out, c.lse, naive, seqs_tol(s->dtype), why, sizeof why)) {
      passes++;
      continue;
    }
    if (failures++ < 20) printf("FAIL %s: %s\n     %s\n", attn_backend_name(b), why, desc);
  }
  seqs_case_free(&c);
}

/* Edge cases named in the issue, each on every layout. */
static void edge_cases(test_rng *r) {
  for (int kv = 0; kv < SEQS_KV_COUNT; kv++)
    for (int g = 1; g <= 8; g *= 2)
      for (int packed = 0; packed < 2; packed++) {
        seqs_spec s = {.dtype = (attn_dtype)((kv + g) % 3),
                       .b = 3,
                       .hkv = 2,
                       .group = g,
                       .d = 32,
                       .q_packed = packed,
                       .kv = kv,
                       .page_size = g == 8 ? 16 : 4,
                       .max_new = g == 8 ? 16 : 1,
                       .max_kv = 64,
                       .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
                       .lse = 1};
        run_case(&s, r);
        s.max_new = 8, s.causal = ATTN_CAUSAL_NONE, s.page_size = 1;
        run_case(&s, r);
      }
}

/* ---- refusals ------------------------------------------------------------ */

/* A valid paged decode: B=2, Hq=4, Hkv=2, D=8, 8 pages of 4 keys. */
typedef struct {
  float q[2 * 4 * 8], out[2 * 4 * 8], k[8 * 2 * 4 * 8], v[8 * 2 * 4 * 8];
  int32_t table[2 * 3], lens[2], q_off[3], kv_off[3];
  attn_seqs seqs;
  attn_args args;
} bad_problem;

static void bad_init(bad_problem *p) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < 2 * 4 * 8; i++) p->q[i] = (float)(i % 7) * 0.1f;
  for (int i = 0; i < 8 * 2 * 4 * 8; i++) p->k[i] = p->v[i] = (float)(i % 5) * 0.2f;
  static const int32_t table[] = {3, 1, 7, 0, 2, -1};
  memcpy(p->table, table, sizeof table);
  p->lens[0] = 12, p->lens[1] = 5;
  p->q_off[0] = 0, p->q_off[1] = 1, p->q_off[2] = 2;
  attn_tensor pool = attn_tensor_bhsd(p->k, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 8, 2, 4, 8);
  p->args =
      attn_args_make(attn_tensor_bhsd(p->q, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 2, 4, 1, 8), pool,
                     pool, attn_tensor_bhsd(p->out, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 2, 4, 1, 8));
  p->args.v.data = p->v;
  p->seqs = (attn_seqs){.batch = 2, .kv_lens = p->lens, .block_table = p->table, .max_pages = 3};
  p->args.seqs = &p->seqs;
  p->args.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
}

/* Every backend (and AUTO) refuses with INVALID_ARGUMENT, the message holds
 * `want`, and out is left as poisoned. */
static void expect_bad(bad_problem *p, const char *what, const char *want) {
  int ok = 1;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    memset(p->out, 0xff, sizeof p->out);
    attn_status st = attn_forward(test_engine(), backends[i], &p->args);
    const char *msg = attn_last_error();
    unsigned char probe[sizeof p->out];
    memset(probe, 0xff, sizeof probe);
    if (st != ATTN_STATUS_INVALID_ARGUMENT || !strstr(msg, want) || strchr(msg, '\n') ||
        memcmp(probe, p->out, sizeof probe)) {
      printf("FAIL bad input '%s' on %s: status %d, message \"%s\" (want \"%s\")\n", what,
             attn_backend_name(backends[i]), (int)st, msg, want);
      ok = 0;
    }
  }
  char why[512];
  if (attn_why_not(test_engine(), ATTN_BACKEND_FLASH, &p->args, why, sizeof why) !=
      ATTN_STATUS_INVALID_ARGUMENT)
    printf("FAIL bad input '%s': attn_why_not accepted it\n", what), ok = 0;
  ok ? passes++ : failures++;
}

static void bad_tables(void) {
  bad_problem p;
  bad_init(&p);
  if (attn_forward(test_engine(), ATTN_BACKEND_FLASH, &p.args))
    printf("FAIL the valid base problem was refused: %s\n", attn_last_error()), failures++;
#define BAD(what, edit, want)   \
  do {                          \
    bad_init(&p);               \
    edit;                       \
    expect_bad(&p, what, want); \
  } while (0)
  BAD("page out of range", p.table[4] = 912, "block_table[1][1] = 912: pages are 0..7");
  BAD("negative page", p.table[1] = -3, "block_table[0][1] = -3: pages are 0..7");
  BAD("length beyond the pages", p.lens[1] = 13,
      "kv_lens[1] = 13: a block_table row holds 3 "
      "pages of 4 = 12 keys");
  BAD("negative length", p.lens[0] = -1, "kv_lens[0] = -1");
  BAD("batch 0", p.seqs.batch = 0, "seqs.batch = 0");
  BAD("q batch", p.seqs.batch = 3, "q.shape[0] = 2");
  BAD("table without lengths", p.seqs.kv_lens = NULL, "block_table without kv_lens");
  BAD("max_pages 0", p.seqs.max_pages = 0, "max_pages = 0");
  BAD("table stride", p.seqs.table_stride = 2, "row stride 2");
  BAD("offsets and lengths", p.seqs.kv_offsets = p.kv_off, "kv_offsets and kv_lens");
  BAD("mask", (p.args.mask_kind = ATTN_MASK_BOOL, p.args.mask = p.args.q), "a mask with seqs");
  BAD("top-left", p.args.causal = ATTN_CAUSAL_TOP_LEFT, "causal top-left with seqs");
  BAD("trusted without bounds", (p.seqs.trusted = 1, p.seqs.max_q = -1), "trusted tables");
  /* packed queries: q is [1, Hq, total_q = 2, D] */
#define PACKED                                                                               \
  (p.args.q.shape[0] = p.args.out.shape[0] = 1, p.args.q.shape[2] = p.args.out.shape[2] = 2, \
   p.seqs.q_offsets = p.q_off)
  BAD("first q offset", (PACKED, p.q_off[0] = 1, p.q_off[1] = 1), "q_offsets[0] = 1");
  BAD("q offsets decrease", (PACKED, p.q_off[1] = 3), "q_offsets[2] = 2 < q_offsets[1] = 3");
  BAD("last q offset", (PACKED, p.q_off[2] = 1, p.q_off[1] = 1),
      "q_offsets[B=2] = 1 but q has 2 rows");
  BAD("q not packed", (p.seqs.q_offsets = p.q_off), "q.shape[0] = 2 but q_offsets is given");
  /* packed keys: k is [1, Hkv, 8*4 = 32 rows, D] */
#define KPACKED                                                                         \
  (p.seqs.kv_lens = NULL, p.seqs.block_table = NULL, p.kv_off[0] = 0, p.kv_off[1] = 10, \
   p.kv_off[2] = 20, p.args.k.shape[0] = p.args.v.shape[0] = 1,                         \
   p.args.k.shape[2] = p.args.v.shape[2] = 32, p.seqs.kv_offsets = p.kv_off)
  BAD("kv offsets decrease", (KPACKED, p.kv_off[2] = 9), "kv_offsets[2] = 9 < kv_offsets[1] = 10");
  BAD("kv offsets past k", (KPACKED, p.kv_off[2] = 33), "kv_offsets[B=2] = 33 but k has 32 rows");
  BAD("negative kv offset", (KPACKED, p.kv_off[0] = -2), "kv_offsets[0] = -2");
  BAD("k packed batch", (KPACKED, p.args.k.shape[0] = p.args.v.shape[0] = 2), "k.shape[0] = 2");
  /* contiguous cache: k is [B=2, Hkv, 16, D] */
#define CACHE                                                            \
  (p.seqs.block_table = NULL, p.args.k.shape[0] = p.args.v.shape[0] = 2, \
   p.args.k.shape[2] = p.args.v.shape[2] = 16)
  BAD("length beyond the cache", (CACHE, p.lens[1] = 17), "kv_lens[1] = 17: the cache holds 16");
  BAD("v batch", (CACHE, p.args.v.shape[0] = 1), "v.shape[0] = 1");
#undef BAD
}

int main(void) {
  test_rng r = {test_seed(0x5e9513)};
  int n = getenv("ATTNPROF_SEQS_CASES") ? atoi(getenv("ATTNPROF_SEQS_CASES")) : 200;
  for (int i = 0; i < n; i++) {
    seqs_spec s = seqs_spec_random(&r);
    run_case(&s, &r);
  }
  edge_cases(&r);
  bad_tables();
  printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
