// flash on CUDA: three kernels behind one backend.
//  - FlashAttention-2 on mma.sync (flash_fwd_kernel.cuh; sm_80 ISA, runs on
//    sm_80/86/89/90): bf16/f16, head dims 64/96/128/256, causal top-left or
//    bottom-right (tiles past the diagonal skipped) or none, Sq != Sk, GQA,
//    any S, lse. Instances: instances/fused_fwd_*.cu.
//  - the same algorithm on wgmma (flash_fwd_wgmma_kernel.cuh; sm_90a only):
//    D 64/128/256 on compute capability 9.0 where the ws kernel refuses;
//  - the same on a warp-specialized, TMA-fed kernel with ping-pong consumers
//    (flash_fwd_ws_kernel.cuh; sm_90a only), the default on compute
//    capability 9.0 for D 64/128/256 when TMA takes the strides.
// The handle's opts.flash_kernel (mma_sync, wgmma, ws: docs/engine.md)
// forces one; auto picks.
//
// One selector (flash_pick) answers both "is it supported?" and "which
// kernel runs": attn_forward calls the why-not check, which calls it.
#include <stdio.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/fused_launch.h"
#include "attn/cuda/fused/decode_cuda.h"
#ifdef ATTNPROF_HAVE_WGMMA
#include "attn/cuda/fused/ws_tile.h"
#include "attn/cuda/fused/ws_tma.h"
#endif

// The Hopper kernel for (dtype, D) when it is built and runs here, else NULL
// (flash_pick says why when opts.flash_kernel=wgmma demanded it).
static fused_fn wgmma_pick(const attn_args *a, int64_t d, int bf) {
#ifdef ATTNPROF_HAVE_WGMMA
  const struct cudaDeviceProp *pr = attn_cuda_props(a->q.device);
  if (!pr || pr->major != 9 || pr->minor != 0) return NULL;
  switch (d) {
    case 64:
      return bf ? wgmma_run<__nv_bfloat16, 64> : wgmma_run<__half, 64>;
    case 128:
      return bf ? wgmma_run<__nv_bfloat16, 128> : wgmma_run<__half, 128>;
    case 256:
      return bf ? wgmma_run<__nv_bfloat16, 256> : wgmma_run<__half, 256>;
    default:
      return NULL;
  }
#else
  (void)a, (void)d, (void)bf;
  return NULL;
#endif
}

#ifdef ATTNPROF_HAVE_WGMMA
// The ws instance for (tile shape, D, dtype).
template <int kTile>
static fused_fn ws_inst(int64_t d, int bf) {
  switch (d) {
    case 64:
      return bf ? ws_run<__nv_bfloat16, 64, kTile> : ws_run<__half, 64, kTile>;
    case 128:
      return bf ? ws_run<__nv_bfloat16, 128, kTile> : ws_run<__half, 128, kTile>;
    default:
      return bf ? ws_run<__nv_bfloat16, 256, kTile> : ws_run<__half, 256, kTile>;
  }
}
#endif

// The warp-specialized Hopper kernel (flash_fwd_ws_kernel.cuh) for (dtype, D),
// or NULL with the reason in why: it needs the build, compute capability 9.0,
// D 64/128/256 and strides TMA takes.
static fused_fn ws_pick(const attn_args *a, int64_t d, int bf, char *why, size_t why_len) {
#ifdef ATTNPROF_HAVE_WGMMA
  const struct cudaDeviceProp *pr = attn_cuda_props(a->q.device);
  if (!pr || pr->major != 9 || pr->minor != 0) {
    snprintf(why, why_len, "the ws kernel needs compute capability 9.0");
    return NULL;
  }
  if (d != 64 && d != 128 && d != 256) {
    snprintf(why, why_len, "the ws kernel takes D 64, 128 or 256 (D=%lld here)", (long long)d);
    return NULL;
  }
  if (!attn_ws_tma_ok(a, why, why_len)) return NULL;
  const int tile = ws_tile_pick((int)d, a->causal != ATTN_CAUSAL_NONE, (long long)attn_seq_q(a));
  return tile == WS_TILE_FA3 ? ws_inst<WS_TILE_FA3>(d, bf) : ws_inst<WS_TILE_BASE>(d, bf);
#else
  (void)a, (void)d, (void)bf;
  snprintf(why, why_len, "this build has no sm_90a kernels (nvcc < 12 or ATTNPROF_WGMMA=OFF)");
  return NULL;
#endif
}

// The instance for (dtype, D), or NULL with the reason in why. The handle's
// opts.flash_kernel may force one kernel.
static fused_fn flash_pick(const attn_ctx *ctx, const attn_args *a, char *why, size_t why_len) {
  const int64_t d = attn_head_dim(a);
  const int bf = a->q.dtype == ATTN_DTYPE_BF16;
  if (a->q.dtype != ATTN_DTYPE_BF16 && a->q.dtype != ATTN_DTYPE_F16) {
    snprintf(why, why_len,
             "flash_cuda takes bf16 and f16 (tensor cores), got %s: efficient "
             "takes f32",
             attn_dtype_name(a->q.dtype));
    return NULL;
  }
  const attn_flash_kernel choice = ctx->opts.flash_kernel;
  // On compute capability 9.0 the ws kernel first; where it refuses (D 96,
  // a stride TMA cannot take), the wgmma kernel, then mma.sync.
  if (choice == ATTN_FLASH_KERNEL_AUTO || choice == ATTN_FLASH_KERNEL_WS) {
    char wwhy[200];
    fused_fn ws = ws_pick(a, d, bf, wwhy, sizeof wwhy);
    if (ws) return ws;
    if (choice == ATTN_FLASH_KERNEL_WS) {
      snprintf(why, why_len, "flash_cuda: opts.flash_kernel=ws: %s", wwhy);
      return NULL;
    }
  }
  fused_fn hopper = choice == ATTN_FLASH_KERNEL_MMA_SYNC ? NULL : wgmma_pick(a, d, bf);
  if (hopper) return hopper;
  if (choice == ATTN_FLASH_KERNEL_WGMMA) {
    snprintf(why, why_len,
             "flash_cuda: opts.flash_kernel=wgmma: the wgmma kernel needs a build "
             "with it, compute capability 9.0 and D 64, 128 or 256 (D=%lld here)",
             (long long)d);
    return NULL;
  }
  switch (d) {
    case 64:
      return bf ? fused_run<__nv_bfloat16, 64, false> : fused_run<__half, 64, false>;
    case 96:
      return bf ? fused_run<__nv_bfloat16, 96, false> : fused_run<__half, 96, false>;
    case 128:
      return bf ? fused_run<__nv_bfloat16, 128, false> : fused_run<__half, 128, false>;
    case 256:
      return bf ? fused_run<__nv_bfloat16, 256, false> : fused_run<__half, 256, false>;
    default:
      snprintf(why, why_len,
               "flash_cuda takes head dims 64, 96, 128, 256, got D=%lld: efficient "
               "takes any D up to 256",
               (long long)d);
      return NULL;
  }
}

static attn_status flash_why_not(attn_ctx *ctx, const attn_args *a, char *why, size_t why_len) {
  char vwhy[160];
  if (a->seqs) return attn_decode_cuda_why_not(a, why, why_len);  // fused/decode_cuda.cu
  if (!flash_pick(ctx, a, why, why_len)) return ATTN_STATUS_UNSUPPORTED;
  if (a->mask_kind != ATTN_MASK_NONE) {
    snprintf(why, why_len,
             "flash_cuda takes no mask tensor (causal or none): efficient takes "
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

static attn_status flash_dense(attn_ctx *ctx, const attn_args *a) {
  char why[256];
  fused_fn fn = flash_pick(ctx, a, why, sizeof why);
  if (!fn) return attn_fail(ATTN_STATUS_UNSUPPORTED, "%s", why);
  return attn_fused_call(ctx, fn, a);
}

static attn_status flash_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_decode_cuda_forward(ctx, a, flash_dense) : flash_dense(ctx, a);
}

extern "C" {
extern const attn_backend_impl attn_backend_flash_cuda;
const attn_backend_impl attn_backend_flash_cuda = {
    ATTN_BACKEND_FLASH,
    "flash_cuda",
    0, /* any CUDA device */
    "FlashAttention-2: one fused kernel, bf16/f16, D 64/96/128/256, causal tiles skipped; "
    "warp-specialized TMA + wgmma on compute capability 9.0, mma.sync elsewhere",
    ATTN_DTYPE_BIT(ATTN_DTYPE_F16) | ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    256,
    flash_why_not,
    flash_forward,
    attn_cuda_available,
    1, /* takes attn_seqs: the split-KV decode kernel */
};
}
