/* The ops each CPU backend records per forward, read back from a profiler
 * trace (never from the code under test): the shapes the backends' file
 * comments promise. naive has exactly one more op than naive_inplace, and it
 * is the copy; with neither a causal rule nor a mask both skip copy and fill;
 * math shows its casts; flash is one fused op. Every op carries its bytes,
 * and the GEMMs and the fused op their FLOPs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"
#include "attnprof/prof.h"

enum { B = 1, H = 2, S = 48, D = 16 };

typedef struct {
  int total;
  int kind[PROF_KIND_COUNT];
} op_counts;

/* One forward of `backend` under a CPU profiling session; counts its cpu_op
 * events by kind and checks their bytes/flops. */
static op_counts profile_forward(attn_backend backend, attn_dtype dt, attn_causal causal) {
  /* fp32-sized storage serves every dtype; all-zero inputs are a valid problem */
  static float q[B * H * S * D], k[B * H * S * D], v[B * H * S * D], o[B * H * S * D];
  attn_args a = attn_args_make(attn_tensor_bhsd(q, dt, ATTN_DEVICE_CPU, B, H, S, D),
                               attn_tensor_bhsd(k, dt, ATTN_DEVICE_CPU, B, H, S, D),
                               attn_tensor_bhsd(v, dt, ATTN_DEVICE_CPU, B, H, S, D),
                               attn_tensor_bhsd(o, dt, ATTN_DEVICE_CPU, B, H, S, D));
  a.causal = causal;
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_non_null(t);
  assert_int_equal(prof_start(t, PROF_COLLECT_CPU, NULL), ATTN_STATUS_OK);
  attn_status st = attn_forward(test_engine(), backend, &a);
  prof_stop();
  assert_int_equal(st, ATTN_STATUS_OK);
  op_counts c = {0};
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_CPU_OP) continue;
    c.total++;
    c.kind[e->kind]++;
    if (e->bytes <= 0) fail_msg("%s: op %s has no bytes", attn_backend_name(backend), e->name);
    if ((e->kind == PROF_KIND_GEMM || e->kind == PROF_KIND_FUSED) && !(e->flops > 0))
      fail_msg("%s: op %s has no flops", attn_backend_name(backend), e->name);
  }
  prof_trace_destroy(t);
  return c;
}

static void test_naive_one_more_op_the_copy(void **state) {
  for (attn_dtype dt = ATTN_DTYPE_F32; dt <= ATTN_DTYPE_BF16; dt++) {
    op_counts n = profile_forward(ATTN_BACKEND_NAIVE, dt, ATTN_CAUSAL_TOP_LEFT);
    op_counts ip = profile_forward(ATTN_BACKEND_NAIVE_INPLACE, dt, ATTN_CAUSAL_TOP_LEFT);
    assert_int_equal(n.total, 6);
    assert_int_equal(ip.total, 5);
    assert_int_equal(n.kind[PROF_KIND_COPY], 1);
    assert_int_equal(ip.kind[PROF_KIND_COPY], 0);
    for (int k = 0; k < PROF_KIND_COUNT; k++)
      if (k != PROF_KIND_COPY) assert_int_equal(n.kind[k], ip.kind[k]);
    assert_int_equal(ip.kind[PROF_KIND_GEMM], 2);
    assert_int_equal(ip.kind[PROF_KIND_ELEMENTWISE], 2); /* scale, masked fill */
    assert_int_equal(ip.kind[PROF_KIND_SOFTMAX], 1);
  }
}

static void test_naive_without_mask_skips_copy_and_fill(void **state) {
  op_counts n = profile_forward(ATTN_BACKEND_NAIVE, ATTN_DTYPE_F32, ATTN_CAUSAL_NONE);
  op_counts ip = profile_forward(ATTN_BACKEND_NAIVE_INPLACE, ATTN_DTYPE_F32, ATTN_CAUSAL_NONE);
  assert_int_equal(n.total, 4);
  assert_int_equal(ip.total, 4);
  assert_int_equal(n.kind[PROF_KIND_COPY], 0);
  assert_int_equal(n.kind[PROF_KIND_ELEMENTWISE], 1); /* scale only */
}

static void test_math_shows_casts_and_mask(void **state) {
  op_counts bf = profile_forward(ATTN_BACKEND_MATH, ATTN_DTYPE_BF16, ATTN_CAUSAL_BOTTOM_RIGHT);
  assert_int_equal(bf.kind[PROF_KIND_CAST], 4); /* q, k, v up; out down */
  assert_int_equal(bf.kind[PROF_KIND_GEMM], 2);
  assert_int_equal(bf.kind[PROF_KIND_ELEMENTWISE], 3); /* build_mask, scale, add_bias */
  assert_int_equal(bf.kind[PROF_KIND_SOFTMAX], 1);
  assert_int_equal(bf.total, 10);
  op_counts f = profile_forward(ATTN_BACKEND_MATH, ATTN_DTYPE_F32, ATTN_CAUSAL_NONE);
  assert_int_equal(f.kind[PROF_KIND_CAST], 0);
  assert_int_equal(f.total, 4); /* gemm, scale, softmax, gemm */
}

static void test_flash_one_fused_op(void **state) {
  for (attn_dtype dt = ATTN_DTYPE_F32; dt <= ATTN_DTYPE_BF16; dt++) {
    op_counts c = profile_forward(ATTN_BACKEND_FLASH, dt, ATTN_CAUSAL_TOP_LEFT);
    assert_int_equal(c.total, 1);
    assert_int_equal(c.kind[PROF_KIND_FUSED], 1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_naive_one_more_op_the_copy),
      cmocka_unit_test(test_naive_without_mask_skips_copy_and_fill),
      cmocka_unit_test(test_math_shows_casts_and_mask),
      cmocka_unit_test(test_flash_one_fused_op),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
