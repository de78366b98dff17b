/* Device limits through the driver API (see cupti_device.h). The driver is
 * used rather than the runtime because the injected collector runs inside
 * programs whose runtime we do not own, and the driver needs no context. */
#include "prof/collect/cupti_device.h"

#include <stdio.h>
#include <string.h>

#include "prof/collect/cupti_lib.h"

int cupti_read_device(int ordinal, prof_device *out) {
  const cuda_drv_fns *d = cuda_drv_load(NULL, 0);
  CUdevice dev;
  if (!d || d->DeviceGet(&dev, ordinal) != CUDA_SUCCESS) return -1;
  memset(out, 0, sizeof *out);
  out->id = ordinal;
  if (d->DeviceGetName(out->name, (int)sizeof out->name, dev) != CUDA_SUCCESS)
    snprintf(out->name, sizeof out->name, "CUDA device %d", ordinal);
  size_t mem = 0;
  if (d->DeviceTotalMem(&mem, dev) == CUDA_SUCCESS) out->total_global_mem = (int64_t)mem;
  static const struct {
    CUdevice_attribute attr;
    size_t offset;
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(prof_device, compute_major)},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(prof_device, compute_minor)},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(prof_device, num_sms)},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(prof_device, max_threads_per_block)},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
       offsetof(prof_device, max_threads_per_sm)},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, offsetof(prof_device, max_blocks_per_sm)},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, offsetof(prof_device, regs_per_block)},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, offsetof(prof_device, regs_per_sm)},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(prof_device, warp_size)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
       offsetof(prof_device, shared_memory_per_block)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       offsetof(prof_device, shared_memory_per_block_optin)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
       offsetof(prof_device, shared_memory_per_sm)},
      {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
       offsetof(prof_device, reserved_shared_memory_per_block)},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    if (d->DeviceGetAttribute(&v, attrs[i].attr, dev) != CUDA_SUCCESS) return -1;
    memcpy((char *)out + attrs[i].offset, &v, sizeof v);
  }
  return 0;
}

int cupti_add_devices(prof_trace *t, char *why, size_t why_len) {
  const cuda_drv_fns *d = cuda_drv_load(why, why_len);
  if (!d) return -1;
  int n = 0;
  CUresult r = d->DeviceGetCount(&n);
  if (r != CUDA_SUCCESS) {
    snprintf(why, why_len, "cuDeviceGetCount failed (CUDA error %d)", (int)r);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    prof_device dev;
    if (!cupti_read_device(i, &dev)) prof_trace_add_device(t, &dev);
  }
  return n;
}
