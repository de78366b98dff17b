/* Device memory, copies and CUDA-event timing (attnprof/device.h): what the
 * yardsticks time with, and the test kit's device half. */
#include <stdlib.h>

#include "attn/cuda/common/cuda_common.h"
#include "attnprof/device.h"

struct attn_cuda_timer {
  int device, n;
  cudaEvent_t ev[];
};

static attn_status use(int device) {
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur == device) return ATTN_STATUS_OK;
  ATTN_CUDA_TRY(cudaSetDevice(device));
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_probe(char *why, size_t why_len) { return attn_cuda_available(why, why_len); }

const char *attn_cuda_device_name(int device) {
  const struct cudaDeviceProp *p = attn_cuda_props(device);
  return p ? p->name : "?";
}

attn_status attn_cuda_malloc(int device, size_t bytes, void **out) {
  attn_status st = use(device);
  if (st) return st;
  *out = NULL;
  ATTN_CUDA_TRY(cudaMalloc(out, bytes ? bytes : 1));
  return ATTN_STATUS_OK;
}

void attn_cuda_free(int device, void *p) {
  if (p && use(device) == ATTN_STATUS_OK) cudaFree(p);
}

attn_status attn_cuda_to_device(int device, void *dst, const void *src, size_t bytes) {
  attn_status st = use(device);
  if (st) return st;
  ATTN_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_to_host(int device, void *dst, const void *src, size_t bytes) {
  attn_status st = use(device);
  if (st) return st;
  ATTN_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_fill_bytes(int device, void *p, int byte, size_t bytes) {
  attn_status st = use(device);
  if (st) return st;
  ATTN_CUDA_TRY(cudaMemset(p, byte, bytes));
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_synchronize(int device) {
  attn_status st = use(device);
  if (st) return st;
  ATTN_CUDA_TRY(cudaDeviceSynchronize());
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_timer_create(int device, int n_marks, attn_cuda_timer **out) {
  attn_status st = use(device);
  if (st) return st;
  attn_cuda_timer *t = calloc(1, sizeof *t + sizeof(cudaEvent_t) * (size_t)n_marks);
  if (!t) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for %d events", n_marks);
  t->device = device;
  for (; t->n < n_marks; t->n++) {
    cudaError_t err = cudaEventCreate(&t->ev[t->n]);
    if (err != cudaSuccess) {
      attn_cuda_timer_destroy(t);
      return attn_cuda_fail(err, "cudaEventCreate");
    }
  }
  *out = t;
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_timer_mark(attn_cuda_timer *t, int i, void *stream) {
  ATTN_CUDA_TRY(cudaEventRecord(t->ev[i], (cudaStream_t)stream));
  return ATTN_STATUS_OK;
}

attn_status attn_cuda_timer_us(attn_cuda_timer *t, int i, int j, double *us) {
  float ms = 0;
  ATTN_CUDA_TRY(cudaEventSynchronize(t->ev[j]));
  ATTN_CUDA_TRY(cudaEventElapsedTime(&ms, t->ev[i], t->ev[j]));
  *us = (double)ms * 1e3;
  return ATTN_STATUS_OK;
}

void attn_cuda_timer_destroy(attn_cuda_timer *t) {
  if (!t) return;
  use(t->device);
  for (int i = 0; i < t->n; i++) cudaEventDestroy(t->ev[i]);
  free(t);
}
