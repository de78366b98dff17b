/* The handle's per-device launch record (launch_record.h): a small array
 * searched linearly, since a process launches a few dozen kernel instances. */
#include <stdlib.h>

#include "attn/ctx.h"
#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/common/launch_record.h"

typedef struct {
  const void *key;
  int sub, val;
} launch_entry;

struct attn_launch_record {
  launch_entry *e;
  int n, cap;
};

static struct attn_launch_record *record_of(const attn_ctx *ctx, int device) {
  return ctx && device >= 0 && device < ATTN_CTX_MAX_DEVICES ? ctx->launch[device] : NULL;
}

int attn_launch_find(const attn_ctx *ctx, int device, const void *key, int sub, int *val) {
  const struct attn_launch_record *r = record_of(ctx, device);
  for (int i = 0; r && i < r->n; i++)
    if (r->e[i].key == key && r->e[i].sub == sub) return *val = r->e[i].val, 1;
  return 0;
}

attn_status attn_launch_put(attn_ctx *ctx, int device, const void *key, int sub, int val) {
  if (!ctx) return ATTN_STATUS_OK; /* no handle: nothing is kept, the caller asks again */
  if (device < 0 || device >= ATTN_CTX_MAX_DEVICES)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "launch record: device %d: accepted are 0..%d",
                     device, ATTN_CTX_MAX_DEVICES - 1);
  struct attn_launch_record *r = ctx->launch[device];
  if (!r && !(r = ctx->launch[device] = calloc(1, sizeof *r)))
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a launch record");
  for (int i = 0; i < r->n; i++)
    if (r->e[i].key == key && r->e[i].sub == sub) return r->e[i].val = val, ATTN_STATUS_OK;
  if (r->n == r->cap) {
    const int cap = r->cap ? 2 * r->cap : 32;
    launch_entry *e = realloc(r->e, (size_t)cap * sizeof *e);
    if (!e) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for a launch record");
    r->e = e, r->cap = cap;
  }
  r->e[r->n++] = (launch_entry){key, sub, val};
  return ATTN_STATUS_OK;
}

attn_status attn_launch_smem_limit(attn_ctx *ctx, const void *kernel, int bytes) {
  if (bytes <= 48 * 1024) return ATTN_STATUS_OK;
  int dev = 0, done = 0;
  ATTN_CUDA_TRY(cudaGetDevice(&dev));
  if (attn_launch_find(ctx, dev, kernel, 0, &done) && done >= bytes) return ATTN_STATUS_OK;
  ATTN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return attn_launch_put(ctx, dev, kernel, 0, bytes);
}

void attn_launch_release(attn_ctx *ctx) {
  for (int i = 0; i < ATTN_CTX_MAX_DEVICES; i++) {
    if (!ctx->launch[i]) continue;
    free(ctx->launch[i]->e);
    free(ctx->launch[i]);
    ctx->launch[i] = NULL;
  }
}
