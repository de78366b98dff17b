/* The engine handle's options and entry points (attn.h), on the CPU:
 *  - attn_ctx_create refuses bad options with one line naming the field and
 *    what is accepted, and leaves *out NULL;
 *  - attn_ctx_opts_from_env fills the options from the six variables and
 *    refuses a value not understood, listing the accepted ones (an unknown
 *    ATTNPROF_FLASH_KERNEL among them), leaving the options as they were;
 *  - attn_forward, attn_why_not and attn_select refuse a NULL handle;
 *  - the options read back as given (cache_capacity 0 meaning 64), the
 *    statistics start at zero, trim and destroy (of NULL too) are safe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"

static void assert_one_line(const char *what, const char *msg) {
  if (!msg || !msg[0]) fail_msg("%s: the error message is empty", what);
  if (strchr(msg, '\n')) fail_msg("%s: the error message spans lines: \"%s\"", what, msg);
}

/* create refuses o with INVALID_ARGUMENT and a line holding both words. */
static void expect_create_refused(const attn_ctx_opts *o, const char *field, const char *accepted) {
  attn_ctx *ctx = NULL;
  attn_status st = attn_ctx_create(o, &ctx);
  if (st == ATTN_STATUS_OK) attn_ctx_destroy(ctx);
  if (st != ATTN_STATUS_INVALID_ARGUMENT)
    fail_msg("%s: attn_ctx_create returned %s, want invalid argument", field,
             attn_status_string(st));
  if (ctx) fail_msg("%s: attn_ctx_create refused but handed out a handle", field);
  const char *e = attn_last_error();
  assert_one_line(field, e);
  if (!strstr(e, field) || !strstr(e, accepted))
    fail_msg("the refusal of a bad %s does not name it and what is accepted (\"%s\"): \"%s\"",
             field, accepted, e);
  print_message("refused: %s\n", e);
}

static void test_create_refuses_bad_options(void **state) {
  (void)state;
  attn_ctx_opts o = attn_ctx_opts_default();
  o.flash_kernel = ATTN_FLASH_KERNEL_COUNT;
  expect_create_refused(&o, "flash_kernel", "AUTO");
  o = attn_ctx_opts_default(), o.flash_kernel = (attn_flash_kernel)-1;
  expect_create_refused(&o, "flash_kernel", "AUTO");
  o = attn_ctx_opts_default(), o.cudnn_graph = (attn_cudnn_graph)3;
  expect_create_refused(&o, "cudnn_graph", "COMPOSITE");
  o = attn_ctx_opts_default(), o.cpu_threads = -2;
  expect_create_refused(&o, "cpu_threads", "0");
  o = attn_ctx_opts_default(), o.cpu_isa = "avx512-and-then-some";
  expect_create_refused(&o, "cpu_isa", "portable");
  /* attn.h lists the names cpu_isa takes; another must not pass as "auto" */
  o = attn_ctx_opts_default(), o.cpu_isa = "sse9";
  expect_create_refused(&o, "cpu_isa", "portable");
  /* a size this library does not know: built against another attn.h */
  o = attn_ctx_opts_default();
  assert_int_equal(o.size, sizeof o);
  o.size = sizeof o - sizeof(int) - 8;
  expect_create_refused(&o, "attn_ctx_opts.size", "accepted");
  o.size = sizeof o + 8;
  expect_create_refused(&o, "attn_ctx_opts.size", "attn_ctx_opts_default");
  assert_int_equal(attn_ctx_opts_from_env(&o), ATTN_STATUS_INVALID_ARGUMENT);
}

static void test_options_read_back(void **state) {
  (void)state;
  attn_ctx_opts o = attn_ctx_opts_default();
  assert_int_equal(o.cache_capacity, 64);
  assert_int_equal(o.workspace_limit, 0);
  assert_int_equal(o.cuda_graphs, 0);
  assert_int_equal(o.flash_kernel, ATTN_FLASH_KERNEL_AUTO);
  assert_int_equal(o.locked, 0);
  char isa[] = "portable";
  o.cache_capacity = 0, o.cpu_threads = 1, o.cpu_isa = isa, o.locked = 1;
  o.flash_kernel = ATTN_FLASH_KERNEL_WS, o.workspace_limit = 12345;
  attn_ctx *ctx = NULL;
  assert_int_equal(attn_ctx_create(&o, &ctx), ATTN_STATUS_OK);
  assert_non_null(ctx);
  isa[0] = 'X'; /* the handle keeps its own copy of the string */
  const attn_ctx_opts *got = attn_ctx_options(ctx);
  assert_int_equal(got->cache_capacity, 64); /* 0 means the default */
  assert_int_equal(got->cpu_threads, 1);
  assert_string_equal(got->cpu_isa, "portable");
  assert_int_equal(got->flash_kernel, ATTN_FLASH_KERNEL_WS);
  assert_int_equal(got->workspace_limit, 12345);
  attn_ctx_stats s;
  attn_ctx_stats_get(ctx, &s);
  assert_int_equal(s.cache_capacity, 64);
  assert_int_equal(s.cache_entries, 0);
  assert_int_equal(s.cache_hits + s.cache_misses + s.cache_evictions, 0);
  assert_int_equal(s.workspace_limit, 12345);
  attn_ctx_trim(ctx);
  attn_ctx_destroy(ctx);
  attn_ctx_destroy(NULL);
  assert_int_equal(attn_ctx_create(NULL, &ctx), ATTN_STATUS_OK); /* NULL: the defaults */
  assert_int_equal(attn_ctx_options(ctx)->cache_capacity, 64);
  attn_ctx_destroy(ctx);
}

static const char *const env_vars[] = {"ATTNPROF_FLASH_KERNEL",   "ATTNPROF_CUDA_GRAPHS",
                                       "ATTNPROF_CUDNN_GRAPH",    "ATTNPROF_CPU_ISA",
                                       "ATTNPROF_CACHE_CAPACITY", "ATTNPROF_WORKSPACE_LIMIT"};

static void env_clear(void) {
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) unsetenv(env_vars[i]);
}

static void test_env_fills_options(void **state) {
  (void)state;
  env_clear();
  attn_ctx_opts o = attn_ctx_opts_default(), d = o;
  assert_int_equal(attn_ctx_opts_from_env(&o), ATTN_STATUS_OK);
  assert_memory_equal(&o, &d, sizeof o); /* nothing set: nothing changed */
  setenv("ATTNPROF_FLASH_KERNEL", "mma_sync", 1);
  setenv("ATTNPROF_CUDA_GRAPHS", "1", 1);
  setenv("ATTNPROF_CUDNN_GRAPH", "node", 1);
  setenv("ATTNPROF_CPU_ISA", "avx2", 1);
  setenv("ATTNPROF_CACHE_CAPACITY", "5", 1);
  setenv("ATTNPROF_WORKSPACE_LIMIT", "1048576", 1);
  assert_int_equal(attn_ctx_opts_from_env(&o), ATTN_STATUS_OK);
  assert_int_equal(o.flash_kernel, ATTN_FLASH_KERNEL_MMA_SYNC);
  assert_int_equal(o.cuda_graphs, 1);
  assert_int_equal(o.cudnn_graph, ATTN_CUDNN_GRAPH_NODE);
  assert_string_equal(o.cpu_isa, "avx2");
  assert_int_equal(o.cache_capacity, 5);
  assert_int_equal(o.workspace_limit, 1048576);
  env_clear();
}

/* var=value is refused, the options untouched, the line lists `accepted`. */
static void expect_env_refused(const char *var, const char *value, const char *accepted) {
  env_clear();
  setenv(var, value, 1);
  attn_ctx_opts o = attn_ctx_opts_default(), d = o;
  attn_status st = attn_ctx_opts_from_env(&o);
  env_clear();
  if (st != ATTN_STATUS_INVALID_ARGUMENT)
    fail_msg("%s=%s: attn_ctx_opts_from_env returned %s", var, value, attn_status_string(st));
  const char *e = attn_last_error();
  assert_one_line(var, e);
  if (!strstr(e, var) || !strstr(e, value) || !strstr(e, accepted))
    fail_msg("%s=%s: the refusal does not name the variable, the value and \"%s\": \"%s\"", var,
             value, accepted, e);
  assert_memory_equal(&o, &d, sizeof o);
  print_message("refused: %s\n", e);
}

static void test_env_refuses_unknown_values(void **state) {
  (void)state;
  expect_env_refused("ATTNPROF_FLASH_KERNEL", "fastest", "auto, mma_sync, wgmma, ws");
  expect_env_refused("ATTNPROF_CUDA_GRAPHS", "yes", "0, 1");
  expect_env_refused("ATTNPROF_CUDNN_GRAPH", "sdpa", "composite");
  expect_env_refused("ATTNPROF_CPU_ISA", "sse9", "portable");
  expect_env_refused("ATTNPROF_CACHE_CAPACITY", "-3", "whole number");
  expect_env_refused("ATTNPROF_WORKSPACE_LIMIT", "1G", "whole number");
}

static void test_null_handle_refused(void **state) {
  (void)state;
  float q[8] = {0}, k[8] = {0}, v[8] = {0}, out[8];
  attn_args a = attn_args_make(attn_tensor_bhsd(q, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 2, 4),
                               attn_tensor_bhsd(k, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 2, 4),
                               attn_tensor_bhsd(v, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 2, 4),
                               attn_tensor_bhsd(out, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 2, 4));
  memset(out, 0xff, sizeof out);
  assert_int_equal(attn_forward(NULL, ATTN_BACKEND_MATH, &a), ATTN_STATUS_INVALID_ARGUMENT);
  assert_one_line("attn_forward(NULL)", attn_last_error());
  assert_non_null(strstr(attn_last_error(), "handle"));
  for (int i = 0; i < 8; i++) { /* nothing written */
    uint32_t u;
    memcpy(&u, &out[i], 4);
    assert_int_equal(u, 0xffffffffu);
  }
  char why[256] = "";
  assert_int_equal(attn_why_not(NULL, ATTN_BACKEND_AUTO, &a, why, sizeof why),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(why, "handle"));
  attn_backend picked = ATTN_BACKEND_COUNT;
  assert_int_equal(attn_select(NULL, &a, &picked, NULL, 0), ATTN_STATUS_INVALID_ARGUMENT);
  assert_int_equal(picked, ATTN_BACKEND_COUNT);
  /* the same inputs on a handle run */
  attn_ctx *ctx = test_engine_new(NULL);
  assert_int_equal(attn_forward(ctx, ATTN_BACKEND_MATH, &a), ATTN_STATUS_OK);
  attn_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_refuses_bad_options),
      cmocka_unit_test(test_options_read_back),
      cmocka_unit_test(test_env_fills_options),
      cmocka_unit_test(test_env_refuses_unknown_values),
      cmocka_unit_test(test_null_handle_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
