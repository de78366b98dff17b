// C++ declarations of the decode kernel instances (decode_d*.cu) for the
// host side (decode_cuda.cu), which compiles no kernel itself. Every entry
// takes the handle whose launch record (common/launch_record.h) keeps what
// the launchers learn once per device; a NULL handle asks the driver each
// time and records nothing.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LAUNCH_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LAUNCH_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/decode_params.h"
#include "attn/cuda/fused/fused_launch.h"

// Ring depth by head dim: one K+V stage is 64 x kD x 2 x 2 bytes (16, 32,
// 64 KB); 4, 3, 2 stages keep 2-3 steps in flight and let 3, 2, 1 CTAs share
// an SM's 228 KB.
template <int kD>
struct decode_cfg {
  static constexpr int kStages = kD == 256 ? 2 : kD == 128 ? 3 : 4;
};

// The split kernel (and, with splits > 1, the combine) for storage type T,
// head dim kD, kWM row atoms (16 * kWM query rows per CTA) and the copies'
// addressing path kPath:
//  LOOKUP   each 16-byte chunk's (batch or page, row) read from shared memory
//           and multiplied out (any K/V);
//  LINEAR   unpaged K/V, fixed strides from one base per thread;
//  OFFSETS  paged K/V whose K and V strides agree: one element offset per
//           key row, computed once where the table entry is stored.
enum { DECODE_PATH_LOOKUP, DECODE_PATH_LINEAR, DECODE_PATH_OFFSETS };
template <typename T, int kD, int kWM, int kPath>
attn_status decode_run(const attn_decode_params &p, attn_ctx *ctx, cudaStream_t stream);
// CTAs of that instance one SM holds (1 when it cannot be asked).
template <typename T, int kD, int kWM, int kPath>
int decode_occupancy(attn_ctx *ctx);

// The cluster kernel (decode_cluster.cuh, sm_90): the splits of a (sequence,
// KV head) as one cluster of p.splits CTAs of at most DECODE_CLUSTER_KEYS
// keys each (K and V of a CTA in 128 KB of shared memory, 136 KB with bulk
// copies' padded rows), merged through distributed shared memory; at most 16
// query rows per KV head.
#define DECODE_CLUSTER_KEYS(d) (32768 / (d))
// kBulk: K/V rows by bulk copies on mbarriers (1) or by 16-byte cp.async (0).
template <typename T, int kD, int kBulk>
attn_status decode_cluster_run(const attn_decode_params &p, attn_ctx *ctx, cudaStream_t stream);
// Clusters of c CTAs of `chunk` keys the device runs at once (0: cannot say).
template <typename T, int kD, int kBulk>
int decode_cluster_fit(attn_ctx *ctx, int c, int chunk);

#endif
