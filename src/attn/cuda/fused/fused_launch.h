// C++ declarations the fused backends share: the kernel instances (defined in
// the generated files instances/*.cu, so that flash_cuda.cu and
// efficient_cuda.cu compile no kernel themselves) and the call helper.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_LAUNCH_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_LAUNCH_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "attn/cuda/common/launch_record.h"
#include "attn/cuda/fused/fused_params.h"

typedef attn_status (*fused_fn)(const attn_fused_params &, cudaStream_t);

// Tensor-core instance for (storage type, padded head dim); kMask: the
// efficient kernel (mask, explicit scale), else the flash kernel.
template <typename T, int kD, bool kMask>
attn_status fused_run(const attn_fused_params &p, cudaStream_t stream);

// Hopper instance (flash_fwd_wgmma_kernel.cuh, sm_90a only) for head dims
// 64, 128, 256; defined when ATTNPROF_HAVE_WGMMA.
template <typename T, int kD>
attn_status wgmma_run(const attn_fused_params &p, cudaStream_t stream);

// Warp-specialized Hopper instance (fused/flash_fwd_ws_kernel.cuh, sm_90a
// only) for head dims 64, 128, 256; kFlags: WS_* (WS_ALL is the backend's);
// kTile: WS_TILE_* (fused/ws_tile.h; ws_tile_pick chooses).
// WS_NO_SOFTMAX (bench only): the tensor-core floor, wrong results by design.
// WS_NO_SETMAXNREG (bench, diagnosis): every warp keeps the launch's registers.
// WS_TREE (bench): the softmax form kWsTreeDefault (ws_tile.h) does not name.
// WS_STALE (bench): the softmax form kWsStaleDefault (ws_tile.h) does not name.
// WS_STAMPS (bench): clock stamps per CTA and tile (flash_fwd_ws_kernel.cuh).
// WS_EXP_FMA8 / 4 (bench): every 8th / 4th exp2 of the stale-max softmax on
// the FMA pipe (wg_exp2_fma), the rest on the special-function unit.
// WS_DESC (bench): the wgmma descriptor form kWsDescStepDefault (ws_tile.h)
// does not name. WS_TURN_EXP (bench): the place for the ping-pong's turns
// (around the exps or the product issue) kWsTurnExpDefault does not name.
// WS_SERIAL (bench, D64 base tile): cuDNN's order per key tile, S issued and
// waited, softmax, P V issued and left in flight until the next S's wait (no
// S of the next tile under the softmax); with WS_SERIAL_WAIT, P V waited at once.
// WS_ROLLED (bench): the key loop form kWsRolledDefault (ws_tile.h) does not name;
// with WS_PV_FIRST, that loop waits for P V(i-1) before the exps, not after.
// WS_DYN (bench): the dynamic tile schedule (WS_AB_DYN) compiled in; the
// other instances have it compiled out (no run-time test in their loops).
// WS_SPLIT (bench): the softmax's row max and sum chains in the other form
// than kWsSplitDefault (ws_tile.h) names (kWsSplit partials, or one chain).
// WS_QPF (bench): the next tile's Q prefetched into L2 or not, the other
// than kWsQPrefetchDefault (ws_tile.h) names. WS_DIVQ (bench): the tile
// schedule's divisions as plain / and % (flash_fwd_ws_kernel.cuh ws_div).
// WS_LATE (bench): the hand-over of the turn after the stale-max exps in the
// other form than kWsLateDefault (ws_tile.h) names (on the row sums and P's
// packs, ws_turn_pass_late, or through l after the check's vote).
// WS_RSKIP (bench): stale-max steps with alpha known to be 1 (no fresh max,
// no fallback) skip O's rescale without its vote.
// WS_DIAG_FULL (bench): the first key tile's softmax in the other form than
// kWsDiagHalfDefault (ws_tile.h) names (on the kept keys where the rest is
// masked for all of a consumer's rows, or on the whole tile).
// WS_FRESH_SKIP (bench): the other rule for the stale-max loop's second key
// tile's fresh max than kWsFreshSkipDefault (ws_tile.h) names.
enum { WS_PINGPONG = 1, WS_OVERLAP = 2, WS_ALL = 3, WS_NO_SOFTMAX = 4, WS_NO_SETMAXNREG = 8,
       WS_CLUSTER = 16, WS_TREE = 32, WS_STALE = 64, WS_STAMPS = 128, WS_EXP_FMA8 = 256,
       WS_EXP_FMA4 = 512, WS_DESC = 1024, WS_TURN_EXP = 2048, WS_SERIAL = 4096,
       WS_SERIAL_WAIT = 8192, WS_ROLLED = 16384, WS_DYN = 32768, WS_PV_FIRST = 65536,
       WS_SPLIT = 131072, WS_QPF = 262144, WS_DIVQ = 524288, WS_LATE = 1048576,
       WS_RSKIP = 2097152, WS_DIAG_FULL = 4194304, WS_FRESH_SKIP = 16777216 };
template <typename T, int kD, int kFlags, int kTile>
attn_status ws_run(const attn_fused_params &p, cudaStream_t stream);

// Scalar instance (efficient_simt_kernel.cuh) for head dims up to kDmax.
template <typename T, int kDmax>
attn_status simt_run(const attn_fused_params &p, cudaStream_t stream);


// Fills the parameters and runs fn on the tensors' device; ctx is the
// handle whose cache holds what a kernel keeps (the ws kernel's TMA maps).
attn_status attn_fused_call(attn_ctx *ctx, fused_fn fn, const attn_args *a);

// Bench only (ablation build): the ws kernel's A/B switches (ws_tile.h
// WS_AB_*) from ATTNPROF_FLASH_WS_AB, 0 when unset; read by the instance
// pick and into attn_fused_params.ws_ab.
int attn_fused_ws_ab(void);

#endif
