// flash on CUDA: two kernels behind one backend.
//  - FlashAttention-2 on mma.sync (flash_fwd_kernel.cuh; sm_80 ISA, runs on
//    sm_80/86/89/90): bf16/f16, head dims 64/96/128/256, causal top-left or
//    bottom-right (tiles past the diagonal skipped) or none, Sq != Sk, GQA,
//    any S, lse. Instances: instances/fused_fwd_*.cu.
//  - the same algorithm on wgmma (flash_fwd_wgmma_kernel.cuh; sm_90a only):
//    D 64/128/256 on compute capability 9.0 where the ws kernel refuses;
//  - the same on a warp-specialized, TMA-fed kernel with ping-pong consumers
//    (flash_fwd_ws_kernel.cuh; sm_90a only), the default on compute
//    capability 9.0 for D 64/128/256 when TMA takes the strides.
// The handle's opts.flash_kernel (mma_sync, wgmma, ws) forces one (bench,
// tests); auto picks. Measured speed against PyTorch's FA2: bench/NOTES.md.
//
// One selector (flash_pick) answers both "is it supported?" and "which
// kernel runs": attn_forward calls the why-not check, which calls it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#ifdef ATTNPROF_HAVE_WGMMA
// The ws instance for (tile shape, D, dtype), flags kF (the backend's:
// WS_ALL; bench only: WS_ALL | WS_TREE, WS_ALL | WS_STALE).
template <int kTile, int kF = WS_ALL>
static fused_fn ws_inst(int64_t d, int bf) {
  switch (d) {
  case 64: return bf ? ws_run<__nv_bfloat16, 64, kF, kTile> : ws_run<__half, 64, kF, kTile>;
  case 128: return bf ? ws_run<__nv_bfloat16, 128, kF, kTile> : ws_run<__half, 128, kF, kTile>;
  default: return bf ? ws_run<__nv_bfloat16, 256, kF, kTile> : ws_run<__half, 256, kF, kTile>;
  }
}
#ifdef ATTNPROF_FLASH_WS_ABLATION
// Bench only: a bf16-only instance (flags f: the cluster, stepped-descriptor
// and other-turn ones) for (tile shape, D).
template <int kTile, int f>
static fused_fn ws_bf16_inst(int64_t d) {
  return d == 64 ? ws_run<__nv_bfloat16, 64, f, kTile>
         : d == 128 ? ws_run<__nv_bfloat16, 128, f, kTile> : ws_run<__nv_bfloat16, 256, f, kTile>;
}
#endif
#endif

// The warp-specialized Hopper kernel (flash_fwd_ws_kernel.cuh) for (dtype, D),
// or NULL with the reason in why: it needs the build, compute capability 9.0,
// D 64/128/256 and strides TMA takes. In a build with
// -DATTNPROF_FLASH_WS_ABLATION=ON (bench only; the library reads no
// environment otherwise), ATTNPROF_FLASH_WS_TILE (base, fa3) overrides
// ws_tile_pick's shape, and ATTNPROF_FLASH_WS_FLAGS picks an ablation instance at bf16 D128: 0 neither ping-pong nor overlap,
// 1 ping-pong only, 2 overlap only, 8 and 11 = 0 and 3 without setmaxnreg;
// 7 (any D, bf16) the tensor-core floor with the softmax removed (wrong
// results by design); ATTNPROF_FLASH_WS_AB bits WS_AB_CLUSTER, WS_AB_STALE
// and WS_AB_TREE (ws_tile.h) pick the cluster instances, those with the other
// softmax form than kWsStaleDefault's, and the softmax-tree instances;
// WS_AB_STAMPS the stamps instances (bf16, D64, D128 base); WS_AB_EXP_FMA8 /
// 4 those with part of the stale-max exp2 on the FMA pipe (bf16 D64);
// WS_AB_DESC those with the other wgmma descriptor form, WS_AB_TURN_EXP those
// with the ping-pong's turns in the other place (bf16); WS_AB_SERIAL (and
// WS_AB_SERIAL_WAIT) the bf16 D64 base tile in cuDNN's order; WS_AB_ROLLED
// the other key loop form (bf16 D64 and D128 base tiles; with WS_AB_PV_FIRST,
// the one that waits for P V before the exps); WS_AB_SPLIT the other row
// max / sum form (bf16 D64 base tile; with WS_AB_EXP_FMA8, with part of the
// exp2 on the FMA pipe too); WS_AB_Q_PREFETCH the other Q prefetch (bf16
// D64 and D128 base tiles; with WS_AB_STAMPS, D64's stamps); WS_AB_PLAIN_DIV
// the schedule's plain divisions (bf16); WS_AB_DIAG_FULL the other
// first-key-tile softmax (bf16; with WS_AB_STAMPS, D64's base stamps);
// WS_AB_FRESH_SKIP the other second-key-tile rule (bf16 D64, D128; with
// WS_AB_STAMPS, D64's base stamps);
// WS_AB_DYN and WS_AB_DYN_CODE the instances with the dynamic schedule compiled in (bf16),
// where no other bit picked an instance.
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
  int tile = ws_tile_pick((int)d, a->causal != ATTN_CAUSAL_NONE, (long long)attn_seq_q(a));
#ifdef ATTNPROF_FLASH_WS_ABLATION
  const char *ts = getenv("ATTNPROF_FLASH_WS_TILE");
  if (ts && !strcmp(ts, "base")) tile = WS_TILE_BASE;
  if (ts && !strcmp(ts, "fa3")) tile = WS_TILE_FA3;
  const int ab = attn_fused_ws_ab();
  constexpr int kCluster = WS_ALL | WS_CLUSTER, kDesc = WS_ALL | WS_DESC, kTurn = WS_ALL | WS_TURN_EXP;
  if ((ab & WS_AB_CLUSTER) && bf && a->causal == ATTN_CAUSAL_NONE)
    return tile == WS_TILE_FA3 ? ws_bf16_inst<WS_TILE_FA3, kCluster>(d) : ws_bf16_inst<WS_TILE_BASE, kCluster>(d);
  // The other hand-over after the stale-max exps (WS_AB_LATE), or stepped
  // descriptors with the rescale's vote skipped where alpha is 1 (WS_AB_RSKIP):
  // bf16 D64 base tile only, each with a stamps instance.
  constexpr int kLate = WS_ALL | WS_LATE, kLateStamps = kLate | WS_STAMPS;
  constexpr int kRsk = WS_ALL | WS_DESC | WS_RSKIP, kRskStamps = kRsk | WS_STAMPS;
  if ((ab & (WS_AB_LATE | WS_AB_RSKIP)) && bf && d == 64 && tile == WS_TILE_BASE) {
    if (ab & WS_AB_RSKIP)
      return (ab & WS_AB_STAMPS) ? ws_run<__nv_bfloat16, 64, kRskStamps, WS_TILE_BASE>
                                 : ws_run<__nv_bfloat16, 64, kRsk, WS_TILE_BASE>;
    return (ab & WS_AB_STAMPS) ? ws_run<__nv_bfloat16, 64, kLateStamps, WS_TILE_BASE>
                               : ws_run<__nv_bfloat16, 64, kLate, WS_TILE_BASE>;
  }
  // The other first-key-tile softmax (WS_AB_DIAG_FULL; bf16, both tiles,
  // and D64's base tile with stamps).
  constexpr int kDiag = WS_ALL | WS_DIAG_FULL, kDiagStamps = kDiag | WS_STAMPS;
  if ((ab & WS_AB_DIAG_FULL) && bf) {
    if ((ab & WS_AB_STAMPS) && d == 64 && tile == WS_TILE_BASE)
      return ws_run<__nv_bfloat16, 64, kDiagStamps, WS_TILE_BASE>;
    return tile == WS_TILE_FA3 ? ws_bf16_inst<WS_TILE_FA3, kDiag>(d) : ws_bf16_inst<WS_TILE_BASE, kDiag>(d);
  }
  // The other rule for the stale-max loop's second key tile (WS_AB_FRESH_SKIP;
  // bf16 D64 and D128, both tiles, and D64's base tile with stamps).
  constexpr int kFresh = WS_ALL | WS_FRESH_SKIP, kFreshStamps = kFresh | WS_STAMPS;
  if ((ab & WS_AB_FRESH_SKIP) && bf && d <= 128) {
    if ((ab & WS_AB_STAMPS) && d == 64 && tile == WS_TILE_BASE)
      return ws_run<__nv_bfloat16, 64, kFreshStamps, WS_TILE_BASE>;
    if (tile == WS_TILE_FA3)
      return d == 64 ? ws_run<__nv_bfloat16, 64, kFresh, WS_TILE_FA3> : ws_run<__nv_bfloat16, 128, kFresh, WS_TILE_FA3>;
    return d == 64 ? ws_run<__nv_bfloat16, 64, kFresh, WS_TILE_BASE> : ws_run<__nv_bfloat16, 128, kFresh, WS_TILE_BASE>;
  }
  if ((ab & WS_AB_DESC) && bf)
    return tile == WS_TILE_FA3 ? ws_bf16_inst<WS_TILE_FA3, kDesc>(d) : ws_bf16_inst<WS_TILE_BASE, kDesc>(d);
  // cuDNN's order per key tile: bf16 D64 base tile only (elsewhere the default runs).
  constexpr int kSerial = WS_ALL | WS_SERIAL, kSerialWait = kSerial | WS_SERIAL_WAIT;
  if ((ab & WS_AB_SERIAL) && bf && d == 64 && tile == WS_TILE_BASE)
    return (ab & WS_AB_SERIAL_WAIT) ? ws_run<__nv_bfloat16, 64, kSerialWait, WS_TILE_BASE>
                                    : ws_run<__nv_bfloat16, 64, kSerial, WS_TILE_BASE>;
  constexpr int kRolled = WS_ALL | WS_ROLLED, kPvFirst = kRolled | WS_PV_FIRST;
  if ((ab & WS_AB_ROLLED) && bf && d <= 128 && tile == WS_TILE_BASE) {
    if (ab & WS_AB_PV_FIRST)
      return d == 64 ? ws_run<__nv_bfloat16, 64, kPvFirst, WS_TILE_BASE>
                     : ws_run<__nv_bfloat16, 128, kPvFirst, WS_TILE_BASE>;
    return d == 64 ? ws_run<__nv_bfloat16, 64, kRolled, WS_TILE_BASE>
                   : ws_run<__nv_bfloat16, 128, kRolled, WS_TILE_BASE>;
  }
  constexpr int kSplit = WS_ALL | WS_SPLIT, kSplitFma8 = kSplit | WS_EXP_FMA8;
  if ((ab & WS_AB_SPLIT) && bf && d == 64 && tile == WS_TILE_BASE)
    return (ab & WS_AB_EXP_FMA8) ? ws_run<__nv_bfloat16, 64, kSplitFma8, WS_TILE_BASE>
                                 : ws_run<__nv_bfloat16, 64, kSplit, WS_TILE_BASE>;
  if ((ab & WS_AB_TURN_EXP) && bf)
    return tile == WS_TILE_FA3 ? ws_bf16_inst<WS_TILE_FA3, kTurn>(d) : ws_bf16_inst<WS_TILE_BASE, kTurn>(d);
  constexpr int kDivq = WS_ALL | WS_DIVQ;
  if ((ab & WS_AB_PLAIN_DIV) && bf)
    return tile == WS_TILE_FA3 ? ws_bf16_inst<WS_TILE_FA3, kDivq>(d) : ws_bf16_inst<WS_TILE_BASE, kDivq>(d);
  constexpr int kQpf = WS_ALL | WS_QPF, kStampsQpf = kQpf | WS_STAMPS;
  if ((ab & WS_AB_Q_PREFETCH) && bf && d <= 128 && tile == WS_TILE_BASE) {
    if (!(ab & WS_AB_STAMPS))
      return d == 64 ? ws_run<__nv_bfloat16, 64, kQpf, WS_TILE_BASE> : ws_run<__nv_bfloat16, 128, kQpf, WS_TILE_BASE>;
    if (d == 64) return ws_run<__nv_bfloat16, 64, kStampsQpf, WS_TILE_BASE>;
  }
  constexpr int kStamps = WS_ALL | WS_STAMPS;
  if ((ab & WS_AB_STAMPS) && bf && (d == 64 || (d == 128 && tile == WS_TILE_BASE)))
    return d == 128 ? ws_run<__nv_bfloat16, 128, kStamps, WS_TILE_BASE>
           : tile == WS_TILE_FA3 ? ws_run<__nv_bfloat16, 64, kStamps, WS_TILE_FA3>
                                 : ws_run<__nv_bfloat16, 64, kStamps, WS_TILE_BASE>;
  constexpr int kFma8 = WS_ALL | WS_EXP_FMA8, kFma4 = WS_ALL | WS_EXP_FMA4;
  if ((ab & (WS_AB_EXP_FMA8 | WS_AB_EXP_FMA4)) && bf && d == 64) {
    if (ab & WS_AB_EXP_FMA8)
      return tile == WS_TILE_FA3 ? ws_run<__nv_bfloat16, 64, kFma8, WS_TILE_FA3>
                                 : ws_run<__nv_bfloat16, 64, kFma8, WS_TILE_BASE>;
    return tile == WS_TILE_FA3 ? ws_run<__nv_bfloat16, 64, kFma4, WS_TILE_FA3>
                               : ws_run<__nv_bfloat16, 64, kFma4, WS_TILE_BASE>;
  }
  constexpr int kTree = WS_ALL | WS_TREE, kStale = WS_ALL | WS_STALE;
  if (ab & WS_AB_STALE)
    return tile == WS_TILE_FA3 ? ws_inst<WS_TILE_FA3, kStale>(d, bf) : ws_inst<WS_TILE_BASE, kStale>(d, bf);
  if (ab & WS_AB_TREE)
    return tile == WS_TILE_FA3 ? ws_inst<WS_TILE_FA3, kTree>(d, bf) : ws_inst<WS_TILE_BASE, kTree>(d, bf);
  constexpr int kDyn = WS_ALL | WS_DYN;
  if ((ab & (WS_AB_DYN | WS_AB_DYN_CODE)) && bf)
    return tile == WS_TILE_FA3 ? ws_bf16_inst<WS_TILE_FA3, kDyn>(d)
                               : ws_bf16_inst<WS_TILE_BASE, kDyn>(d);
#endif
#ifdef ATTNPROF_FLASH_WS_FLAG_INSTANCES
  const char *fl = getenv("ATTNPROF_FLASH_WS_FLAGS");
  if (fl && *fl && bf && d == 128) {
    if (!strcmp(fl, "0")) return ws_run<__nv_bfloat16, 128, 0, WS_TILE_BASE>;
    if (!strcmp(fl, "1")) return ws_run<__nv_bfloat16, 128, 1, WS_TILE_BASE>;
    if (!strcmp(fl, "2")) return ws_run<__nv_bfloat16, 128, 2, WS_TILE_BASE>;
    if (!strcmp(fl, "8")) return ws_run<__nv_bfloat16, 128, 8, WS_TILE_BASE>;
    if (!strcmp(fl, "11")) return ws_run<__nv_bfloat16, 128, 11, WS_TILE_BASE>;
  }
  if (fl && !strcmp(fl, "7") && bf)
    return d == 64    ? ws_run<__nv_bfloat16, 64, 7, WS_TILE_BASE>
           : d == 128 ? ws_run<__nv_bfloat16, 128, 7, WS_TILE_BASE>
                      : ws_run<__nv_bfloat16, 256, 7, WS_TILE_BASE>;
#endif
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
    snprintf(why, why_len, "flash_cuda takes bf16 and f16 (tensor cores), got %s: efficient "
             "takes f32", attn_dtype_name(a->q.dtype));
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
    snprintf(why, why_len, "flash_cuda: opts.flash_kernel=wgmma: the wgmma kernel needs a build "
             "with it, compute capability 9.0 and D 64, 128 or 256 (D=%lld here)", (long long)d);
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

static attn_status flash_why_not(attn_ctx *ctx, const attn_args *a, char *why,
                                 size_t why_len) {
  char vwhy[160];
  if (a->seqs) return attn_decode_cuda_why_not(a, why, why_len); // fused/decode_cuda.cu
  if (!flash_pick(ctx, a, why, why_len)) return ATTN_STATUS_UNSUPPORTED;
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
