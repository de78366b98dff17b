/* The roofline's yardsticks: measured copy bandwidth (host memcpy here, a
 * device-to-device copy in copy_bw.c) and a stated matmul peak. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/device.h"
#include "attnprof/clock.h"
#include "core/error.h"

#ifdef ATTNPROF_HAVE_CUDA
attn_status attn_cuda_copy_bandwidth(int device, size_t bytes, int reps, double *gbps);
attn_status attn_cuda_device_key(int device, char *buf, size_t len);
attn_status attn_cuda_gemm_tflops(int device, attn_dtype dtype, double *tflops);
#endif

attn_status attn_matmul_tflops_measured(int device, attn_dtype dtype, double *tflops) {
  if (!tflops || (unsigned)dtype > ATTN_DTYPE_BF16)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "matmul roof: give f32, f16 or bf16 and an output");
  if (device < 0) return attn_fail(ATTN_STATUS_NO_DEVICE, "matmul roof: measured on a GPU only");
#ifdef ATTNPROF_HAVE_CUDA
  return attn_cuda_gemm_tflops(device, dtype, tflops);
#else
  return attn_fail(ATTN_STATUS_NO_DEVICE, "matmul roof: this build has no CUDA");
#endif
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Buffers written before timing so that first-touch page faults are not timed. */
static attn_status host_copy_bandwidth(size_t bytes, int reps, double *gbps) {
  char *src = malloc(bytes), *dst = malloc(bytes);
  double *t = malloc(sizeof *t * (size_t)reps);
  if (!src || !dst || !t) {
    free(src), free(dst), free(t);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "copy bandwidth: no memory for 2 x %zu bytes",
                     bytes);
  }
  memset(src, 1, bytes), memset(dst, 2, bytes);
  memcpy(dst, src, bytes);
  for (int i = 0; i < reps; i++) {
    int64_t t0 = attn_clock_ns();
    memcpy(dst, src, bytes);
    t[i] = (double)(attn_clock_ns() - t0);
    src[i % bytes] ^= dst[(size_t)i * 4099 % bytes]; /* the copy's result is used */
  }
  double ns = median(t, reps);
  *gbps = ns > 0 ? 2.0 * (double)bytes / ns : 0;
  free(src), free(dst), free(t);
  return ATTN_STATUS_OK;
}

attn_status attn_copy_bandwidth(int device, size_t bytes, int reps, double *gbps) {
  if (!gbps || bytes < 4096 || reps < 1)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "copy bandwidth: give at least 4096 bytes, one repetition and an output");
  if (device < 0) return host_copy_bandwidth(bytes, reps, gbps);
#ifdef ATTNPROF_HAVE_CUDA
  return attn_cuda_copy_bandwidth(device, bytes, reps, gbps);
#else
  return attn_fail(ATTN_STATUS_NO_DEVICE, "copy bandwidth: this build has no CUDA");
#endif
}

/* The host's name: the first "model name" line of /proc/cpuinfo. */
static void cpu_model(char *buf, size_t len) {
  snprintf(buf, len, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    char *c = strchr(line, ':');
    if (strncmp(line, "model name", 10) || !c) continue;
    c += 1 + (c[1] == ' ');
    c[strcspn(c, "\n")] = '\0';
    snprintf(buf, len, "%s", c);
    break;
  }
  if (f) fclose(f);
}

attn_status attn_device_key(int device, char *buf, size_t len) {
  if (!buf || !len) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "device key: no buffer");
  if (device < 0) {
    char model[256];
    cpu_model(model, sizeof model);
    snprintf(buf, len, "cpu: %s", model);
    return ATTN_STATUS_OK;
  }
#ifdef ATTNPROF_HAVE_CUDA
  return attn_cuda_device_key(device, buf, len);
#else
  return attn_fail(ATTN_STATUS_NO_DEVICE, "device key: this build has no CUDA");
#endif
}

/* Dense (not 2:4 sparse) tensor-core figures of NVIDIA's H100/H200 SXM
 * datasheets; f32 is the CUDA-core FP32 figure. */
static const struct {
  const char *name_has;
  double tflops_16bit, tflops_f32;
  const char *source;
} peaks[] = {
    {"H200", 989.5, 67.0, "NVIDIA H200 datasheet, dense BF16/FP16 989.5, FP32 67 TFLOP/s"},
    {"H100 80GB HBM3", 989.5, 67.0,
     "NVIDIA H100 SXM datasheet, dense BF16/FP16 989.5, FP32 67 TFLOP/s"},
};

double attn_matmul_peak_tflops(int device, attn_dtype dtype, const char **source) {
  if (source) *source = "unknown";
#ifdef ATTNPROF_HAVE_CUDA
  if (device < 0) return 0;
  const char *name = attn_cuda_device_name(device);
  for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++) {
    if (!strstr(name, peaks[i].name_has)) continue;
    if (source) *source = peaks[i].source;
    return dtype == ATTN_DTYPE_F32 ? peaks[i].tflops_f32 : peaks[i].tflops_16bit;
  }
#else
  (void)device, (void)dtype, (void)peaks;
#endif
  return 0;
}
