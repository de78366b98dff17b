// Instances of the split-KV decode kernel for D = 64 (decode_kernel.cuh).
#include "attn/cuda/fused/decode_kernel.cuh"

DECODE_INSTANCE(__nv_bfloat16, 64, 1)
DECODE_INSTANCE(__nv_bfloat16, 64, 2)
DECODE_INSTANCE(__nv_bfloat16, 64, 4)
DECODE_INSTANCE(__half, 64, 1)
DECODE_INSTANCE(__half, 64, 2)
DECODE_INSTANCE(__half, 64, 4)
