/* The roofline yardsticks on a GPU (label "gpu"; exits 77 without one): the
 * device-to-device copy bandwidth is a plausible figure for a card (above a
 * PCIe link, below any HBM yet built), the key names the card and driver,
 * the stated peak of an H200/H100 is the datasheet's, and the measured cuBLAS
 * GEMM stays under it. */
#include <stdio.h>
#include <string.h>

#include "attnprof/device.h"

#ifdef ATTNPROF_HAVE_CUDA

int main(void) {
  char why[256], key[300];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  int bad = 0;
  double gbps = 0;
  attn_status st = attn_copy_bandwidth(0, (size_t)512 << 20, 5, &gbps);
  printf("%s copy bandwidth %.1f GB/s (status %d %s)\n",
         !st && gbps > 50 && gbps < 20000 ? "ok  " : "FAIL", gbps, (int)st,
         st ? attn_last_error() : "");
  bad += st || !(gbps > 50 && gbps < 20000);
  st = attn_device_key(0, key, sizeof key);
  int key_ok = !st && strstr(key, attn_cuda_device_name(0)) && strstr(key, "; driver ");
  printf("%s key '%s'\n", key_ok ? "ok  " : "FAIL", key);
  bad += !key_ok;
  const char *src = NULL;
  double peak = attn_matmul_peak_tflops(0, ATTN_DTYPE_BF16, &src);
  int h = strstr(attn_cuda_device_name(0), "H200") ||
          strstr(attn_cuda_device_name(0), "H100 80GB HBM3");
  int peak_ok = h ? peak == 989.5 : peak == 0;
  printf("%s peak %.1f TFLOP/s (%s)\n", peak_ok ? "ok  " : "FAIL", peak, src);
  bad += !peak_ok;
  double gemm = 0;
  st = attn_matmul_tflops_measured(0, ATTN_DTYPE_BF16, &gemm);
  /* measured under the datasheet's dense figure where there is one */
  int gemm_ok = !st && gemm > 1 && (peak == 0 || gemm < 1.05 * peak);
  printf("%s cuBLAS bf16 GEMM %.1f TFLOP/s (status %d %s)\n", gemm_ok ? "ok  " : "FAIL", gemm,
         (int)st, st ? attn_last_error() : "");
  bad += !gemm_ok;
  printf("%s\n", bad ? "FAILED" : "all passed");
  return bad ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
