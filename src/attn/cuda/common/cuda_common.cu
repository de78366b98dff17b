// Shared CUDA plumbing: availability, cached device properties (the error
// line is the core's, core/cuda_error.c).
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "attn/cuda/common/cuda_common.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static char probe_why[256];
static attn_status probe_status;

// Without a driver the runtime says "driver version is insufficient"; the
// driver's library being absent tells the two apart.
static int driver_installed(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  return h != NULL; /* left open: the runtime uses it anyway */
}

// One probe per process: cudaGetDeviceCount initializes the runtime and says
// why no device can be used (no driver, no GPU, ...).
static void probe(void) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if ((err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice) && !driver_installed()) {
    snprintf(probe_why, sizeof probe_why,
             "no NVIDIA driver was found (libcuda.so.1 is not installed on this machine)");
    probe_status = ATTN_STATUS_NO_DEVICE;
  } else if (err != cudaSuccess) {
    snprintf(probe_why, sizeof probe_why, "no usable CUDA device: %s (%s)", cudaGetErrorName(err),
             cudaGetErrorString(err));
    probe_status = ATTN_STATUS_NO_DEVICE;
  } else if (n == 0) {
    snprintf(probe_why, sizeof probe_why, "no CUDA device found");
    probe_status = ATTN_STATUS_NO_DEVICE;
  }
}

extern "C" attn_status attn_cuda_available(char *why, size_t why_len) {
  pthread_once(&probe_once, probe);
  if (probe_status != ATTN_STATUS_OK && why && why_len) snprintf(why, why_len, "%s", probe_why);
  return probe_status;
}

enum { MAX_DEVICES = 64 };
static struct cudaDeviceProp props[MAX_DEVICES];
static int props_read[MAX_DEVICES];
static pthread_mutex_t props_lock = PTHREAD_MUTEX_INITIALIZER;

extern "C" const struct cudaDeviceProp *attn_cuda_props(int device) {
  if (device < 0 || device >= MAX_DEVICES || attn_cuda_available(NULL, 0)) return NULL;
  pthread_mutex_lock(&props_lock);
  if (!props_read[device] && cudaGetDeviceProperties(&props[device], device) == cudaSuccess)
    props_read[device] = 1;
  pthread_mutex_unlock(&props_lock);
  return props_read[device] ? &props[device] : NULL;
}

extern "C" size_t attn_cuda_memory_free(int device) {
  size_t free_b = 0, total = 0;
  int prev = 0;
  if (attn_cuda_available(NULL, 0) || cudaGetDevice(&prev) != cudaSuccess) return 0;
  if (cudaSetDevice(device) == cudaSuccess && cudaMemGetInfo(&free_b, &total) != cudaSuccess)
    free_b = 0;
  cudaSetDevice(prev);
  return free_b;
}

extern "C" int attn_device_cc(int device) {
  const struct cudaDeviceProp *p = attn_cuda_props(device);
  return p ? p->major * 10 + p->minor : 0;
}
