/* The roofline yardsticks of device.h on the host: a measured memcpy
 * bandwidth that is a plausible positive figure, the host's key, the
 * unknown matmul peak, and the refusals of bad arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "attnprof/device.h"

static void test_host_copy_bandwidth(void **state) {
  (void)state;
  double gbps = -1;
  assert_int_equal(attn_copy_bandwidth(ATTN_DEVICE_CPU, (size_t)8 << 20, 3, &gbps), ATTN_STATUS_OK);
  /* read + written per second: above a floppy disk, below any memory bus yet built */
  assert_true(gbps > 0.01 && gbps < 10000);
}

static void test_bad_arguments(void **state) {
  (void)state;
  double gbps = 7;
  assert_int_equal(attn_copy_bandwidth(ATTN_DEVICE_CPU, 100, 3, &gbps),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_int_equal(attn_copy_bandwidth(ATTN_DEVICE_CPU, 1 << 20, 0, &gbps),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_int_equal(attn_copy_bandwidth(ATTN_DEVICE_CPU, 1 << 20, 3, NULL),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_true(gbps == 7); /* untouched on refusal */
  assert_non_null(strstr(attn_last_error(), "4096"));
  assert_int_equal(attn_device_key(ATTN_DEVICE_CPU, NULL, 0), ATTN_STATUS_INVALID_ARGUMENT);
}

static void test_host_key_and_peak(void **state) {
  (void)state;
  char key[256];
  assert_int_equal(attn_device_key(ATTN_DEVICE_CPU, key, sizeof key), ATTN_STATUS_OK);
  assert_memory_equal(key, "cpu: ", 5);
  assert_true(strlen(key) > 5);
  const char *src = NULL;
  assert_true(attn_matmul_peak_tflops(ATTN_DEVICE_CPU, ATTN_DTYPE_BF16, &src) == 0);
  assert_string_equal(src, "unknown");
  double tflops = 5;
  assert_int_equal(attn_matmul_tflops_measured(ATTN_DEVICE_CPU, ATTN_DTYPE_BF16, &tflops),
                   ATTN_STATUS_NO_DEVICE);
  assert_int_equal(attn_matmul_tflops_measured(0, ATTN_DTYPE_BOOL, &tflops),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_true(tflops == 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_copy_bandwidth),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_host_key_and_peak),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
