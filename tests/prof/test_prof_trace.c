/* The event model: storage that keeps pointers valid, interning, devices,
 * dropped counts, concurrent appends, and the name tables. */
#include <pthread.h>
#include <stdio.h>

#include "prof/prof_test.h"

static void pointers_stay_valid(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  synth_op(t, "first", PROF_KIND_GEMM, 1, 10, 20);
  const prof_event *first = prof_trace_at(t, 0);
  for (int i = 1; i < 300000; i++) synth_op(t, "more", PROF_KIND_COPY, 1, i, 1);
  assert_i64(prof_trace_count(t), 300000);
  assert_true(first == prof_trace_at(t, 0));
  assert_str(first->name, "first");
  assert_i64(first->kind, PROF_KIND_GEMM);
  assert_i64(first->start_ns, 10);
  assert_i64(prof_trace_at(t, 299999)->start_ns, 299999);
  assert_null(prof_trace_at(t, 300000));
  prof_trace_destroy(t);
}

static void names_are_interned(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  char buf[32];
  snprintf(buf, sizeof buf, "%s", "gemm_qk");
  synth_op(t, buf, PROF_KIND_GEMM, 1, 0, 1);
  snprintf(buf, sizeof buf, "%s", "something else");
  synth_op(t, "gemm_qk", PROF_KIND_GEMM, 1, 2, 1);
  assert_true(prof_trace_at(t, 0)->name == prof_trace_at(t, 1)->name);
  assert_str(prof_trace_at(t, 0)->name, "gemm_qk");
  const char *in = NULL;
  assert_i64(prof_trace_intern(t, "gemm_qk", &in), ATTN_STATUS_OK);
  assert_true(in == prof_trace_at(t, 0)->name);
  assert_i64(prof_trace_intern(t, NULL, &in), ATTN_STATUS_OK);
  assert_null(in);
  /* Many distinct names, and a long one, all kept. */
  char name[64];
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "op_%d", i);
    synth_op(t, name, PROF_KIND_OTHER, 1, i, 1);
  }
  char long_name[100000];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = 0;
  const char *kept = NULL;
  assert_i64(prof_trace_intern(t, long_name, &kept), ATTN_STATUS_OK);
  assert_i64(strlen(kept), sizeof long_name - 1);
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "op_%d", i);
    assert_str(prof_trace_at(t, 2 + (size_t)i)->name, name);
  }
  prof_trace_destroy(t);
}

static void event_init_is_unknown(void **state) {
  prof_event e = prof_event_init(PROF_CAT_KERNEL, "k");
  assert_i64(e.cat, PROF_CAT_KERNEL);
  assert_i64(e.device, -1);
  assert_i64(e.stream, -1);
  assert_i64(e.cbid, -1);
  assert_i64(e.correlation, 0);
  assert_near(e.fp.occupancy_pct_in_file, -1, 0);
}

static void devices_dropped_process(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_device d = {.id = 0, .name = "Test GPU", .num_sms = 132};
  prof_trace_add_device(t, &d);
  d.id = 1;
  prof_trace_add_device(t, &d);
  d.num_sms = 66; /* the same id again replaces, never duplicates */
  prof_trace_add_device(t, &d);
  assert_i64(prof_trace_device_count(t), 2);
  assert_i64(prof_trace_device(t, 1)->num_sms, 66);
  assert_str(prof_trace_device(t, 0)->name, "Test GPU");
  assert_null(prof_trace_device(t, 2));
  prof_trace_add_dropped(t, 3);
  prof_trace_add_dropped(t, 4);
  assert_i64(prof_trace_dropped(t), 7);
  prof_trace_set_process(t, 77, "python3");
  assert_i64(prof_trace_process_id(t), 77);
  assert_str(prof_trace_process_name(t), "python3");
  prof_trace_destroy(t);
}

static void name_tables(void **state) {
  assert_str(prof_cat_name(PROF_CAT_GPU_USER_ANNOTATION), "gpu_user_annotation");
  assert_str(prof_cat_name(PROF_CAT_CUDA_RUNTIME), "cuda_runtime");
  for (int c = 0; c < PROF_CAT_COUNT; c++)
    assert_i64(prof_cat_from_name(prof_cat_name((prof_cat)c)), c);
  assert_i64(prof_cat_from_name("python_function"), PROF_CAT_OTHER);
  prof_kind got = PROF_KIND_COUNT;
  for (int k = 0; k < PROF_KIND_COUNT; k++) {
    assert_i64(prof_kind_from_name(prof_kind_name((prof_kind)k), &got), ATTN_STATUS_OK);
    assert_i64(got, k);
  }
  got = PROF_KIND_KERNEL;
  assert_i64(prof_kind_from_name("nope", &got), ATTN_STATUS_INVALID_ARGUMENT);
  assert_i64(got, PROF_KIND_KERNEL);
  assert_str(prof_kind_name(PROF_KIND_SOFTMAX), "softmax");
}

enum { THREADS = 8, PER_THREAD = 20000 };

static void *append_many(void *arg) {
  prof_trace *t = arg;
  for (int i = 0; i < PER_THREAD; i++)
    synth_op(t, "mt", PROF_KIND_ELEMENTWISE, (int64_t)pthread_self(), i, 1);
  return NULL;
}

static void concurrent_appends(void **state) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, append_many, t);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  assert_i64(prof_trace_count(t), THREADS * PER_THREAD);
  long long sum = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) sum += prof_trace_at(t, i)->start_ns;
  assert_i64(sum, (long long)THREADS * PER_THREAD * (PER_THREAD - 1) / 2);
  prof_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pointers_stay_valid),   cmocka_unit_test(names_are_interned),
      cmocka_unit_test(event_init_is_unknown), cmocka_unit_test(devices_dropped_process),
      cmocka_unit_test(name_tables),           cmocka_unit_test(concurrent_appends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
