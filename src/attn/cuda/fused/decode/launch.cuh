// What the decode launchers learn once per handle and device, kept in the
// handle's launch record (common/launch_record.h) under the kernel's host
// pointer; a NULL handle (attn_decode_cuda_splits without one) sets and asks
// every time and records nothing.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LAUNCH_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LAUNCH_CUH

#include "attn/cuda/common/launch_record.h"
#include "attn/cuda/fused/decode_launch.h"

// Record keys besides the kernel: 0 is attn_launch_smem_limit's.
enum {
  DECODE_REC_CARVEOUT = 1,   // the largest shared-memory carveout asked
  DECODE_REC_CLUSTER = 2,    // clusters of 16 (non-portable) allowed
  DECODE_REC_OCCUPANCY = 3,  // CTAs an SM holds
  DECODE_REC_FIT = 1 << 16   // + (c << 10 | chunk / 16): clusters the device runs at once
};

// Sets fn's attribute attr to val once per handle and device (sub: its record key).
static inline attn_status decode_attr_once(attn_ctx *ctx, const void *fn, int sub,
                                           cudaFuncAttribute attr, int val) {
  int dev = 0, done = 0;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  if (attn_launch_find(ctx, dev, fn, sub, &done)) return ATTN_STATUS_OK;
  ATTN_CUDA_TRY(cudaFuncSetAttribute(fn, attr, val));
  return attn_launch_put(ctx, dev, fn, sub, 1);
}

// The largest carveout: two 113 KB split CTAs per SM need all 228 KB; the
// combine asks for the same split (it reads through L2, not L1).
static inline attn_status decode_carveout(attn_ctx *ctx, const void *fn) {
  return decode_attr_once(ctx, fn, DECODE_REC_CARVEOUT,
                          cudaFuncAttributePreferredSharedMemoryCarveout,
                          cudaSharedmemCarveoutMaxShared);
}

// A value recorded for (fn, sub) on the current device, else ask()'s,
// recorded; ask() < 0: it failed, fail is returned and nothing recorded.
template <typename Ask>
int decode_recorded(attn_ctx *ctx, const void *fn, int sub, int fail, Ask ask) {
  int dev = 0, val = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return fail;
  if (attn_launch_find(ctx, dev, fn, sub, &val)) return val;
  if ((val = ask()) < 0) return fail;
  (void)attn_launch_put(ctx, dev, fn, sub, val);  // not kept: asked again next time
  return val;
}

#endif
