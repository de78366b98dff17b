// C++ declarations of the decode kernel instances (decode_d*.cu) for the
// host side (decode_cuda.cu), which compiles no kernel itself.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LAUNCH_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_DECODE_LAUNCH_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/fused/decode_params.h"
#include "attn/cuda/fused/fused_launch.h"

// The kernel (and, with splits > 1, the combine) for storage type T, head
// dim kD, kWM row atoms (16 * kWM query rows per CTA).
template <typename T, int kD, int kWM>
attn_status decode_run(const attn_decode_params &p, cudaStream_t stream);
// CTAs of that instance one SM holds (1 when it cannot be asked).
template <typename T, int kD, int kWM>
int decode_occupancy(void);

#endif
