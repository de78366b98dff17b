/* The device side of attn_copy_bandwidth and attn_device_key (roofline.c):
 * a device-to-device cudaMemcpyAsync between two buffers, timed by CUDA
 * events, one pair of events per copy. */
#include <stdio.h>
#include <stdlib.h>

#include "attn/cuda/common/cuda_common.h"
#include "attnprof/device.h"

attn_status attn_cuda_copy_bandwidth(int device, size_t bytes, int reps, double *gbps);
attn_status attn_cuda_device_key(int device, char *buf, size_t len);

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static attn_status timed_copies(int device, void *dst, const void *src, size_t bytes, int reps,
                                float *ms) {
  attn_cuda_timer *t = NULL;
  attn_status st = attn_cuda_timer_create(device, 2 * reps, &t);
  if (st) return st;
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0); /* warm-up */
  for (int i = 0; i < reps && !st && err == cudaSuccess; i++) {
    st = attn_cuda_timer_mark(t, 2 * i, NULL);
    err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
    if (!st && err == cudaSuccess) st = attn_cuda_timer_mark(t, 2 * i + 1, NULL);
  }
  for (int i = 0; i < reps && !st && err == cudaSuccess; i++) {
    double us = 0;
    st = attn_cuda_timer_us(t, 2 * i, 2 * i + 1, &us);
    ms[i] = (float)(us / 1e3);
  }
  attn_cuda_timer_destroy(t);
  if (!st && err != cudaSuccess) st = attn_cuda_fail(err, "cudaMemcpyAsync (device to device)");
  return st;
}

attn_status attn_cuda_copy_bandwidth(int device, size_t bytes, int reps, double *gbps) {
  void *src = NULL, *dst = NULL;
  float *ms = malloc(sizeof *ms * (size_t)reps);
  if (!ms) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "copy bandwidth: no host memory");
  attn_status st = attn_cuda_malloc(device, bytes, &src);
  if (!st) st = attn_cuda_malloc(device, bytes, &dst);
  if (!st) st = attn_cuda_fill_bytes(device, src, 1, bytes);
  if (!st) st = timed_copies(device, dst, src, bytes, reps, ms);
  if (!st) {
    qsort(ms, (size_t)reps, sizeof *ms, cmp_float);
    double med = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    *gbps = med > 0 ? 2.0 * (double)bytes / (med * 1e6) : 0;
  }
  if (src) attn_cuda_free(device, src);
  if (dst) attn_cuda_free(device, dst);
  free(ms);
  return st;
}

attn_status attn_cuda_device_key(int device, char *buf, size_t len) {
  int driver = 0;
  ATTN_CUDA_TRY(cudaDriverGetVersion(&driver));
  snprintf(buf, len, "%s; driver %d", attn_cuda_device_name(device), driver);
  return ATTN_STATUS_OK;
}
