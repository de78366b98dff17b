/* Finding libcudnn at run time (CPU, runs in CI): a bogus ATTNPROF_CUDNN_LIB
 * gives a reason that names what was tried and what to set; a library
 * without the entry points (libm) is refused naming the missing one; a fake
 * library that has them all (built beside this test) is accepted and every
 * symbol resolves to it. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attn/cuda/cudnn/cudnn_loader.h"

static const char *const symbols[] = {"cudnnGetVersion", "cudnnCreate",
                                      "cudnnBackendCreateDescriptor", "cudnnBackendExecute"};
enum { N = sizeof symbols / sizeof symbols[0] };

static void bogus_name_says_why(void **state) {
  (void)state;
  void *syms[N];
  char why[1024] = "", path[256] = "";
  setenv(ATTN_CUDNN_LIB_ENV, "libcudnn_bogus_for_test.so.9", 1);
  assert_int_equal(attn_cudnn_lib_open(symbols, N, syms, path, sizeof path, why, sizeof why),
                   ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "libcudnn_bogus_for_test.so.9"));
  assert_non_null(strstr(why, ATTN_CUDNN_LIB_ENV));
  assert_non_null(strstr(why, "could not be loaded"));
}

static void library_without_cudnn_is_refused(void **state) {
  (void)state;
  void *syms[N];
  char why[1024] = "";
  setenv(ATTN_CUDNN_LIB_ENV, "libm.so.6", 1);
  assert_int_equal(attn_cudnn_lib_open(symbols, N, syms, NULL, 0, why, sizeof why),
                   ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "libm.so.6"));
  assert_non_null(strstr(why, "cudnnGetVersion"));
}

static void fake_library_resolves(void **state) {
  (void)state;
  void *syms[N];
  char why[1024] = "", path[1024] = "";
  setenv(ATTN_CUDNN_LIB_ENV, FAKE_CUDNN_PATH, 1);
  assert_int_equal(attn_cudnn_lib_open(symbols, N, syms, path, sizeof path, why, sizeof why),
                   ATTN_STATUS_OK);
  assert_string_equal(path, FAKE_CUDNN_PATH);
  /* Each symbol is the fake's own, not one from elsewhere in the process. */
  void *fake = dlopen(FAKE_CUDNN_PATH, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(fake);
  for (int i = 0; i < N; i++) assert_ptr_equal(syms[i], dlsym(fake, symbols[i]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bogus_name_says_why),
      cmocka_unit_test(library_without_cudnn_is_refused),
      cmocka_unit_test(fake_library_resolves),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
