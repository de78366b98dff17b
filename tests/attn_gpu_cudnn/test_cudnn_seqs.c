/* The cudnn backend's refusals for several sequences (cudnn_seqs.c), on the
 * CPU against any cuDNN version number: packed queries and packed K/V
 * (taken, and their refusals), page sizes off powers of 2, paged
 * caches before 9.5, paged D > 128 before 9.10, bottom-right causal with
 * sizes off 64 before 9.6, rows that see no key, unused table entries that
 * are not pages; and what it takes (each refusal's neighbour is accepted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attn/cuda/cudnn/cudnn_seqs.h"

enum { B = 2, MAX_PAGES = 4 };

typedef struct {
  attn_args a;
  attn_seqs_view v;
  int32_t lens[B], table[B * MAX_PAGES], offs[B + 1];
} fixture;

/* Paged decode: 3 new tokens, pages of 16, 10 pages, lengths 40 and 64,
 * D 128, bottom-right causal, tables seen (checked path). */
static void paged(fixture *f) {
  memset(f, 0, sizeof *f);
  f->a.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
  f->lens[0] = 40, f->lens[1] = 64;
  for (int i = 0; i < B * MAX_PAGES; i++) f->table[i] = (i * 3) % 10;
  f->v = (attn_seqs_view){.batch = B,
                          .hq = 8,
                          .hkv = 2,
                          .d = 128,
                          .kv = ATTN_KV_PAGED,
                          .q_rows = 3,
                          .sk = 16,
                          .page_size = 16,
                          .pages = 10,
                          .max_pages = MAX_PAGES,
                          .table_stride = MAX_PAGES,
                          .kv_len = f->lens,
                          .table = f->table,
                          .have_tables = 1};
}

static attn_status ask(fixture *f, size_t version, char *why) {
  return attn_cudnn_seqs_why_not(version, &f->a, &f->v, why, 512);
}

static void paged_decode_is_taken(void **state) {
  (void)state;
  fixture f;
  char why[512] = "";
  paged(&f);
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK);
  assert_int_equal(attn_cudnn_seqs_reach(&f.v), 64);
  f.v.kv = ATTN_KV_CACHE, f.v.sk = 70, f.v.table = NULL;          /* contiguous cache */
  assert_int_equal(ask(&f, 90600, why), ATTN_STATUS_OK);          /* no paged load needed */
  assert_int_equal(ask(&f, 90500, why), ATTN_STATUS_UNSUPPORTED); /* 3 new tokens, BR */
  assert_int_equal(attn_cudnn_seqs_reach(&f.v), 70);
}

/* Packed queries (varlen): taken against a paged cache and with packed
 * K/V; refused with dense K/V, with an lse, past int32 offsets, and when a
 * sequence's rows see no key. An empty sequence has no rows. */
static void packed_layouts(void **state) {
  (void)state;
  fixture f;
  char why[512] = "";
  int32_t kv_offs[B + 1] = {0, 40, 104};
  paged(&f);
  f.offs[0] = 0, f.offs[1] = 3, f.offs[2] = 5; /* 3 and 2 query rows */
  f.v.q_packed = 1, f.v.q_off = f.offs, f.v.q_rows = 5, f.v.max_q = 3;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK); /* chunked prefill, paged */
  f.v.kv = ATTN_KV_PACKED, f.v.kv_off = kv_offs, f.v.sk = 104, f.v.max_kv = 64;
  f.v.table = NULL, f.v.kv_len = NULL;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK); /* varlen prefill */
  assert_int_equal(attn_cudnn_seqs_reach(&f.v), 64);
  kv_offs[1] = 0; /* sequence 0: 3 rows, no key */
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "sequence 0 has 0 keys (kv_offsets) for 3 query rows"));
  f.offs[1] = 0, f.offs[2] = 2; /* now sequence 0 is empty: nothing to see */
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK);
  float lse;
  f.a.lse = &lse;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "lse for packed queries"));
  f.a.lse = NULL;
  f.a.q.shape[2] = 1 << 20, f.a.q.strides[2] = 4096;     /* 2^32 elements */
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK); /* int64 offsets from 9.6 */
  assert_int_equal(ask(&f, 90500, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "int32 ragged offsets cuDNN takes before 9.6"));
  f.a.q.shape[2] = 0;
  f.v.kv = ATTN_KV_DENSE, f.v.kv_off = NULL, f.v.sk = 64;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "not with one dense K/V per sequence"));
}

static void version_limits_are_named(void **state) {
  (void)state;
  fixture f;
  char why[512] = "";
  paged(&f);
  assert_int_equal(ask(&f, 90402, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "cuDNN 9.4.2 has no paged cache load"));
  f.v.d = 256;
  assert_int_equal(ask(&f, 90900, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "D <= 128 only"));
  assert_non_null(strstr(why, "D=256"));
  assert_int_equal(ask(&f, 91000, why), ATTN_STATUS_OK);
  f.v.d = 128; /* bottom-right with 3 new tokens: 9.5 wants multiples of 64 */
  assert_int_equal(ask(&f, 90500, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "multiples of 64"));
  assert_int_equal(ask(&f, 90600, why), ATTN_STATUS_OK);
  f.a.causal = ATTN_CAUSAL_NONE;
  assert_int_equal(ask(&f, 90500, why), ATTN_STATUS_OK);
}

static void page_sizes_are_powers_of_two(void **state) {
  (void)state;
  fixture f;
  char why[512] = "";
  paged(&f);
  f.v.page_size = f.v.sk = 12, f.v.max_pages = 4; /* 48 keys reach: lengths 40 and 48 */
  f.lens[1] = 48;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "powers of 2"));
  assert_non_null(strstr(why, "page_size=12"));
  for (int64_t ps = 1; ps <= 64; ps *= 2) {
    f.v.page_size = f.v.sk = ps, f.v.max_pages = MAX_PAGES;
    f.lens[0] = f.lens[1] = (int32_t)(ps * MAX_PAGES > 3 ? 3 : ps * MAX_PAGES);
    assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK);
  }
}

static void rows_without_keys_are_refused(void **state) {
  (void)state;
  fixture f;
  char why[512] = "";
  paged(&f);
  f.lens[1] = 2; /* 3 new tokens, bottom-right: the first row sees nothing */
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "sequence 1 has 2 keys (kv_lens) for 3 query rows"));
  f.lens[1] = 3;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK);
  f.a.causal = ATTN_CAUSAL_NONE, f.lens[0] = 0;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "sequence 0 has 0 keys (kv_lens)"));
  f.lens[0] = 1;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK);
}

static void unused_entries_must_be_pages(void **state) {
  (void)state;
  fixture f;
  char why[512] = "";
  paged(&f);
  f.table[0 * MAX_PAGES + 3] = 999; /* sequence 0 uses 3 pages of 4 */
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "block_table[0][3] = 999 lies past"));
  assert_non_null(strstr(why, "0..9"));
  f.table[3] = -1;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_UNSUPPORTED);
  /* trusted tables on a device are not seen: the caller vouches for them */
  f.v.have_tables = 0;
  assert_int_equal(ask(&f, 91400, why), ATTN_STATUS_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(paged_decode_is_taken),
      cmocka_unit_test(packed_layouts),
      cmocka_unit_test(version_limits_are_named),
      cmocka_unit_test(page_sizes_are_powers_of_two),
      cmocka_unit_test(rows_without_keys_are_refused),
      cmocka_unit_test(unused_entries_must_be_pages),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
