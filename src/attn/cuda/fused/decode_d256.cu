// Instances of the split-KV decode kernel for D = 256 (decode_kernel.cuh).
#include "attn/cuda/fused/decode_kernel.cuh"

DECODE_INSTANCE(__nv_bfloat16, 256, 1)
DECODE_INSTANCE(__nv_bfloat16, 256, 2)
DECODE_INSTANCE(__nv_bfloat16, 256, 4)
DECODE_INSTANCE(__half, 256, 1)
DECODE_INSTANCE(__half, 256, 2)
DECODE_INSTANCE(__half, 256, 4)
