// flash on CUDA: two kernels behind one backend.
//  - FlashAttention-2 on mma.sync (flash_fwd_kernel.cuh; sm_80 ISA, runs on
//    sm_80/86/89/90): bf16/f16, head dims 64/96/128/256, causal top-left or
//    bottom-right (tiles past the diagonal skipped) or none, Sq != Sk, GQA,
//    any S, lse. Instances: instances/fused_fwd_*.cu.
//  - the same algorithm on wgmma (flash_fwd_wgmma_kernel.cuh; sm_90a only):
//    taken on compute capability 9.0 for D 64/128/256, same inputs.
// ATTNPROF_FLASH_KERNEL=mma_sync or wgmma forces one (bench, tests); unset or
// auto picks. Measured speed against PyTorch's FA2: bench/NOTES.md.
//
// One selector (flash_pick) answers both "is it supported?" and "which
// kernel runs": attn_forward calls the why-not check, which calls it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/cuda/cuda_common.h"
#include "attn/cuda/fused_launch.h"
#include "attn/cuda/fused/decode_cuda.h"

// The Hopper kernel for (dtype, D) when it is built and runs here, else NULL
// (flash_pick says why when ATTNPROF_FLASH_KERNEL=wgmma demanded it).
static fused_fn wgmma_pick(const attn_args *a, int64_t d, int bf) {
#ifdef ATTNPROF_HAVE_WGMMA
  const struct cudaDeviceProp *pr = attn_cuda_props(a->q.device);
  if (!pr || pr->major != 9 || pr->minor != 0) return NULL;
  switch (d) {
  case 64: return bf ? wgmma_run<__nv_bfloat16, 64> : wgmma_run<__half, 64>;
  case 128: return bf ? wgmma_run<__nv_bfloat16, 128> : wgmma_run<__half, 128>;
  case 256: return bf ? wgmma_run<__nv_bfloat16, 256> : wgmma_run<__half, 256>;
  default: return NULL;
  }
#else
  (void)a, (void)d, (void)bf;
  return NULL;
#endif
}

// ATTNPROF_FLASH_KERNEL: 0 auto, 1 mma_sync, 2 wgmma, -1 not understood.
static int kernel_choice(void) {
  const char *k = getenv("ATTNPROF_FLASH_KERNEL");
  if (!k || !*k || !strcmp(k, "auto")) return 0;
  return !strcmp(k, "mma_sync") ? 1 : !strcmp(k, "wgmma") ? 2 : -1;
}

// The instance for (dtype, D), or NULL with the reason in why.
static fused_fn flash_pick(const attn_args *a, char *why, size_t why_len) {
  const int64_t d = attn_head_dim(a);
  const int bf = a->q.dtype == ATTN_DTYPE_BF16;
  if (a->q.dtype != ATTN_DTYPE_BF16 && a->q.dtype != ATTN_DTYPE_F16) {
    snprintf(why, why_len, "flash_cuda takes bf16 and f16 (tensor cores), got %s: efficient "
             "takes f32", attn_dtype_name(a->q.dtype));
    return NULL;
  }
  const int choice = kernel_choice();
  if (choice < 0) {
    snprintf(why, why_len, "ATTNPROF_FLASH_KERNEL=%s: accepted are auto, mma_sync, wgmma",
             getenv("ATTNPROF_FLASH_KERNEL"));
    return NULL;
  }
  fused_fn hopper = choice == 1 ? NULL : wgmma_pick(a, d, bf);
  if (hopper) return hopper;
  if (choice == 2) {
    snprintf(why, why_len, "ATTNPROF_FLASH_KERNEL=wgmma: the wgmma kernel needs a build with "
             "it, compute capability 9.0 and D 64, 128 or 256 (D=%lld here)", (long long)d);
    return NULL;
  }
  switch (d) {
  case 64: return bf ? fused_run<__nv_bfloat16, 64, false> : fused_run<__half, 64, false>;
  case 96: return bf ? fused_run<__nv_bfloat16, 96, false> : fused_run<__half, 96, false>;
  case 128: return bf ? fused_run<__nv_bfloat16, 128, false> : fused_run<__half, 128, false>;
  case 256: return bf ? fused_run<__nv_bfloat16, 256, false> : fused_run<__half, 256, false>;
  default:
    snprintf(why, why_len, "flash_cuda takes head dims 64, 96, 128, 256, got D=%lld: efficient "
             "takes any D up to 256", (long long)d);
    return NULL;
  }
}

static attn_status flash_why_not(const attn_args *a, char *why, size_t why_len) {
  char vwhy[160];
  if (a->seqs) return attn_decode_cuda_why_not(a, why, why_len); // fused/decode_cuda.cu
  if (!flash_pick(a, why, why_len)) return ATTN_STATUS_UNSUPPORTED;
  if (a->mask_kind != ATTN_MASK_NONE) {
    snprintf(why, why_len, "flash_cuda takes no mask tensor (causal or none): efficient takes "
             "boolean and additive masks");
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (!(attn_scale_of(a) > 0)) {
    snprintf(why, why_len, "flash_cuda takes a positive scale, got %g: efficient takes any",
             attn_scale_of(a));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (!attn_fused_vector_ok(a, vwhy, sizeof vwhy)) {
    snprintf(why, why_len, "flash_cuda copies 16-byte rows: %s (efficient takes it)", vwhy);
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (a->lse && ((uintptr_t)a->lse & 3)) {
    snprintf(why, why_len, "flash_cuda: lse is not 4-byte aligned");
    return ATTN_STATUS_UNSUPPORTED;
  }
  return attn_fused_device_ok(a, "flash_cuda", why, why_len);
}

static attn_status flash_dense(const attn_args *a) {
  char why[256];
  fused_fn fn = flash_pick(a, why, sizeof why);
  if (!fn) return attn_fail(ATTN_STATUS_UNSUPPORTED, "%s", why);
  return attn_fused_call(fn, a);
}

static attn_status flash_forward(const attn_args *a) {
  return a->seqs ? attn_decode_cuda_forward(a, flash_dense) : flash_dense(a);
}

// ---- versions kept for the bench (bench/NOTES.md) ---------------------------
// 0: flash_cfg (the backend's). Further versions exist with
// ATTNPROF_FUSED_EXPERIMENTS=ON (instances/fused_fwd_exp.cu).
#ifdef ATTNPROF_FUSED_EXPERIMENTS
const char *attn_flash_exp_name(int version);
fused_fn attn_flash_exp_pick(const attn_args *a, int version);
#endif

extern "C" const char *attn_flash_cuda_version_name(int version) {
  if (version == 0)
    return "the backend's kernel: wgmma on compute capability 9.0 (D 64/128/256), else "
           "mma.sync with flash_cfg's tiles";
#ifdef ATTNPROF_FUSED_EXPERIMENTS
  return attn_flash_exp_name(version);
#else
  return NULL;
#endif
}

extern "C" attn_status attn_flash_cuda_run_version(const attn_args *a, int version) {
  char why[256];
  attn_status st = attn_why_not(ATTN_BACKEND_FLASH, a, why, sizeof why);
  if (st) return attn_fail(st, "flash: %s", why);
  if (version == 0) return flash_forward(a);
#ifdef ATTNPROF_FUSED_EXPERIMENTS
  fused_fn fn = attn_flash_exp_pick(a, version);
  if (fn) return attn_fused_call(fn, a);
#endif
  return attn_fail(ATTN_STATUS_UNSUPPORTED, "flash version %d is not built for D=%lld %s",
                   version, (long long)attn_head_dim(a), attn_dtype_name(a->q.dtype));
}

extern "C" {
extern const attn_backend_impl attn_backend_flash_cuda;
const attn_backend_impl attn_backend_flash_cuda = {
    ATTN_BACKEND_FLASH,
    "flash_cuda",
    0, /* any CUDA device */
    "FlashAttention-2: one fused kernel, bf16/f16, D 64/96/128/256, causal tiles skipped; "
    "wgmma on compute capability 9.0, mma.sync elsewhere",
    ATTN_DTYPE_BIT(ATTN_DTYPE_F16) | ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    256,
    flash_why_not,
    flash_forward,
    attn_cuda_available,
    1, /* takes attn_seqs: the split-KV decode kernel */
};
}
