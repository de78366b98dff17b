/* Attribution: the innermost user range on the same thread that contains a
 * CPU event, and for a GPU activity the range around its launch call (found by
 * correlation id), wherever the activity itself falls in time. */
#include <stdlib.h>

#include "prof/analysis/nest.h"
#include "prof/prof_test.h"

static void nested_ranges(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  /* Appended in the order the collector appends: a range when it closes. */
  int64_t a = synth_op(t, "a", PROF_KIND_GEMM, 1, 20, 10);      /* in inner */
  int64_t inner = synth_range(t, "inner", 1, 10, 40);           /* [10, 50] */
  int64_t b = synth_op(t, "b", PROF_KIND_COPY, 1, 60, 10);      /* in outer only */
  int64_t outer = synth_range(t, "outer", 1, 0, 100);           /* [0, 100] */
  int64_t c = synth_op(t, "c", PROF_KIND_COPY, 1, 200, 10);     /* in none */
  int64_t edge = synth_op(t, "edge", PROF_KIND_COPY, 1, 50, 0); /* at inner's end */
  int64_t *r = NULL;
  prof_attribute(t, &r);
  assert_non_null(r);
  assert_i64(r[a], inner);
  assert_i64(r[b], outer);
  assert_i64(r[c], -1);
  assert_i64(r[inner], outer); /* a range's own range is the one around it */
  assert_i64(r[outer], -1);
  assert_i64(r[edge], inner);
  free(r);
  prof_trace_destroy(t);
}

static void other_threads_and_processes(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  int64_t range = synth_range(t, "fwd", 1, 0, 100);
  int64_t other_tid = synth_op(t, "worker", PROF_KIND_GEMM, 2, 10, 10);
  prof_event e = prof_event_init(PROF_CAT_CPU_OP, "other process");
  e.pid = TEST_PID + 1, e.tid = 1, e.start_ns = 10, e.dur_ns = 10;
  int64_t other_pid = -1;
  prof_trace_append(t, &e, &other_pid);
  int64_t same = synth_op(t, "main", PROF_KIND_GEMM, 1, 30, 10);
  int64_t *r = NULL;
  prof_attribute(t, &r);
  assert_i64(r[other_tid], -1);
  assert_i64(r[other_pid], -1);
  assert_i64(r[same], range);
  free(r);
  prof_trace_destroy(t);
}

static void gpu_through_correlation(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  int64_t fwd = synth_range(t, "attn_fwd", 1, 0, 100);
  int64_t other = synth_range(t, "other", 2, 0, 1000); /* another thread, spans the kernels */
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", 1, 10, 5, 7);
  synth_launch(t, PROF_CAT_CUDA_DRIVER, "cuLaunchKernelEx", 1, 20, 5, 8);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaMemcpyAsync", 2, 30, 5, 9);
  /* The kernels run after the range closed: the launch decides. */
  int64_t k1 = synth_gpu(t, PROF_CAT_KERNEL, "k1", 0, 7, 500, 100, 7);
  int64_t k2 = synth_gpu(t, PROF_CAT_KERNEL, "k2", 0, 7, 600, 100, 8);
  int64_t cp = synth_gpu(t, PROF_CAT_GPU_MEMCPY, "Memcpy DtoD", 0, 7, 700, 10, 9);
  int64_t orphan = synth_gpu(t, PROF_CAT_KERNEL, "orphan", 0, 7, 50, 10, 99);
  int64_t none = synth_gpu(t, PROF_CAT_GPU_MEMSET, "no correlation", 0, 7, 50, 10, 0);
  int64_t *r = NULL;
  prof_attribute(t, &r);
  assert_i64(r[k1], fwd);
  assert_i64(r[k2], fwd);
  assert_i64(r[cp], other);
  assert_i64(r[orphan], -1);
  assert_i64(r[none], -1);
  free(r);
  prof_trace_destroy(t);
}

static void equal_spans(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  int64_t op = synth_op(t, "op", PROF_KIND_FUSED, 1, 10, 10);
  int64_t range = synth_range(t, "r", 1, 10, 10); /* the same span: the range holds the op */
  int64_t *r = NULL;
  prof_attribute(t, &r);
  assert_i64(r[op], range);
  assert_i64(r[range], -1);
  free(r);
  prof_trace_destroy(t);
}

/* Many ranges and ops in shuffled order: each op lands in its own range. */
static void big_shuffled(void **state) {
  enum { N = 50000 };
  prof_trace *t = NULL;
  prof_trace_create(&t);
  int64_t *range_of_op = malloc(N * sizeof *range_of_op), *op_idx = malloc(N * sizeof *op_idx);
  srand(7);
  for (int i = N - 1; i >= 0; i--) { /* appended newest first */
    int64_t base = (int64_t)i * 1000;
    op_idx[i] = synth_op(t, "op", PROF_KIND_GEMM, 1 + i % 3, base + 100 + rand() % 500, 50);
    range_of_op[i] = synth_range(t, i % 2 ? "odd" : "even", 1 + i % 3, base, 900);
  }
  int64_t *r = NULL;
  prof_attribute(t, &r);
  for (int i = 0; i < N; i++)
    if (r[op_idx[i]] != range_of_op[i])
      fail_msg("op %d attributed to %lld, expected %lld", i, (long long)r[op_idx[i]],
               (long long)range_of_op[i]);
  free(r);
  free(range_of_op);
  free(op_idx);
  prof_trace_destroy(t);
}

static void empty_trace(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  int64_t *r = NULL;
  prof_attribute(t, &r);
  assert_non_null(r);
  free(r);
  prof_trace_destroy(t);
}

/* The nesting the analyses share: one per trace while it holds the same
 * events, a new one once a live trace grew, the old one still whole for a
 * caller that holds it. */
static void shared_nest_follows_growth(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  int64_t fwd = synth_range(t, "fwd", 1, 0, 100);
  int64_t op = synth_op(t, "op", PROF_KIND_GEMM, 1, 10, 10);
  const prof_nest *a = prof_nest_acquire(t), *b = prof_nest_acquire(t);
  assert_non_null(a);
  assert_true(a == b);
  prof_nest_release(b);
  int64_t late = synth_op(t, "late", PROF_KIND_GEMM, 1, 50, 10);
  const prof_nest *c = prof_nest_acquire(t);
  assert_non_null(c);
  assert_true(c != a);
  assert_i64(c->n, 3);
  assert_i64(c->range[late], fwd);
  assert_i64(a->n, 2); /* still held: unchanged */
  assert_i64(a->range[op], fwd);
  prof_nest_release(a);
  prof_nest_release(c);
  prof_trace_destroy(t); /* frees the one the trace keeps (ASan checks) */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nested_ranges),
      cmocka_unit_test(other_threads_and_processes),
      cmocka_unit_test(gpu_through_correlation),
      cmocka_unit_test(equal_spans),
      cmocka_unit_test(big_shuffled),
      cmocka_unit_test(empty_trace),
      cmocka_unit_test(shared_nest_follows_growth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
