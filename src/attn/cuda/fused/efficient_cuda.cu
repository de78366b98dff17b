// efficient on CUDA: the broadest fused backend, one kernel per forward that
// never writes S x S. Boolean or additive masks (f32/f16/bf16) broadcast over
// B and H through strides, f32/f16/bf16, any head dim up to 256, Sq != Sk,
// GQA, causal top-left or bottom-right, lse, a fully masked row -> 0, lse -inf.
//
// Two kernels behind one selector (efficient_pick, used by the why-not check
// and the launch alike):
//  - 16-bit inputs whose rows can be copied 16 bytes at a time (D % 8 == 0,
//    aligned, unit d stride): efficient_fwd_kernel, the flash tensor-core
//    kernel (flash_fwd_kernel.cuh) with the mask tile copied to shared memory
//    and the head dim zero-padded to 64/96/128/256 inside (the scale uses the
//    true D);
//  - f32 inputs and every other 16-bit layout: efficient_simt_kernel
//    (efficient_simt_kernel.cuh), fp32 FMA on CUDA cores.
#include <stdio.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/efficient_simt_kernel.cuh"
#include "attn/cuda/fused/fused_launch.h"

// The head dim the tensor-core kernel is padded to (an instance exists for
// each): the smallest of 64, 96, 128, 256 that holds D.
static int efficient_padded_d(int64_t d) {
  return d <= 64 ? 64 : d <= 96 ? 96 : d <= 128 ? 128 : 256;
}

static fused_fn efficient_mma_pick(attn_dtype dt, int dp) {
  const int bf = dt == ATTN_DTYPE_BF16;
  switch (dp) {
    case 64:
      return bf ? fused_run<__nv_bfloat16, 64, true> : fused_run<__half, 64, true>;
    case 96:
      return bf ? fused_run<__nv_bfloat16, 96, true> : fused_run<__half, 96, true>;
    case 128:
      return bf ? fused_run<__nv_bfloat16, 128, true> : fused_run<__half, 128, true>;
    default:
      return bf ? fused_run<__nv_bfloat16, 256, true> : fused_run<__half, 256, true>;
  }
}

static fused_fn efficient_simt_pick(attn_dtype dt, int64_t d) {
  const int dm = d <= 64 ? 64 : d <= 128 ? 128 : 256;
  switch (dt) {
    case ATTN_DTYPE_F32:
      return dm == 64    ? simt_run<float, 64>
             : dm == 128 ? simt_run<float, 128>
                         : simt_run<float, 256>;
    case ATTN_DTYPE_BF16:
      return dm == 64    ? simt_run<__nv_bfloat16, 64>
             : dm == 128 ? simt_run<__nv_bfloat16, 128>
                         : simt_run<__nv_bfloat16, 256>;
    default:
      return dm == 64    ? simt_run<__half, 64>
             : dm == 128 ? simt_run<__half, 128>
                         : simt_run<__half, 256>;
  }
}

// The kernel for these inputs, or NULL with the reason in why.
static fused_fn efficient_pick(const attn_args *a, int force_scalar, char *why, size_t why_len) {
  const int64_t d = attn_head_dim(a);
  if (d > 256) {
    snprintf(why, why_len, "efficient_cuda takes head dims up to 256, got D=%lld", (long long)d);
    return NULL;
  }
  if (a->mask_kind == ATTN_MASK_ADDITIVE &&
      ((uintptr_t)a->mask.data % attn_dtype_size(a->mask.dtype)) != 0) {
    snprintf(why, why_len, "efficient_cuda: the %s mask is not aligned to its element size",
             attn_dtype_name(a->mask.dtype));
    return NULL;
  }
  if (a->lse && ((uintptr_t)a->lse & 3)) {
    snprintf(why, why_len, "efficient_cuda: lse is not 4-byte aligned");
    return NULL;
  }
  char vwhy[160];
  if (!force_scalar && a->q.dtype != ATTN_DTYPE_F32 && attn_fused_vector_ok(a, vwhy, sizeof vwhy))
    return efficient_mma_pick(a->q.dtype, efficient_padded_d(d));
  return efficient_simt_pick(a->q.dtype, d);
}

static attn_status efficient_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t why_len) {
  if (!efficient_pick(a, 0, why, why_len)) return ATTN_STATUS_UNSUPPORTED;
  return attn_fused_device_ok(a, "efficient_cuda", why, why_len);
}

static attn_status efficient_forward(attn_ctx *ctx, const attn_args *a) {
  char why[256];
  fused_fn fn = efficient_pick(a, 0, why, sizeof why);
  if (!fn) return attn_fail(ATTN_STATUS_UNSUPPORTED, "%s", why);
  return attn_fused_call(ctx, fn, a);
}

extern "C" attn_status attn_efficient_cuda_run_scalar(attn_ctx *ctx, const attn_args *a) {
  char why[256];
  attn_status st = attn_why_not(ctx, ATTN_BACKEND_EFFICIENT, a, why, sizeof why);
  if (st) return attn_fail(st, "%s", why);
  fused_fn fn = efficient_pick(a, 1, why, sizeof why);
  if (!fn) return attn_fail(ATTN_STATUS_UNSUPPORTED, "%s", why);
  return attn_fused_call(ctx, fn, a);
}

// The scalar instances live here (small kernels); the tensor-core ones in
// instances/fused_fwd_*.cu.
template attn_status simt_run<float, 64>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<float, 128>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<float, 256>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<__nv_bfloat16, 64>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<__nv_bfloat16, 128>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<__nv_bfloat16, 256>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<__half, 64>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<__half, 128>(const attn_fused_params &, cudaStream_t);
template attn_status simt_run<__half, 256>(const attn_fused_params &, cudaStream_t);

extern "C" {
extern const attn_backend_impl attn_backend_efficient_cuda;
const attn_backend_impl attn_backend_efficient_cuda = {
    ATTN_BACKEND_EFFICIENT,
    "efficient_cuda",
    0, /* any CUDA device */
    "memory-efficient fused kernel: any mask, f32/f16/bf16, any D <= 256 (tensor cores for "
    "16-bit, CUDA cores for f32)",
    ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
        ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    256,
    efficient_why_not,
    efficient_forward,
    attn_cuda_available,
};
}
