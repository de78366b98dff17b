// Instances of the split-KV decode kernel for D = 128 (decode_kernel.cuh).
#include "attn/cuda/fused/decode_kernel.cuh"

DECODE_INSTANCE(__nv_bfloat16, 128, 1)
DECODE_INSTANCE(__nv_bfloat16, 128, 2)
DECODE_INSTANCE(__nv_bfloat16, 128, 4)
DECODE_INSTANCE(__half, 128, 1)
DECODE_INSTANCE(__half, 128, 2)
DECODE_INSTANCE(__half, 128, 4)
DECODE_INSTANCE_S(__nv_bfloat16, 128, 1, DECODE_DEEP_STAGES)
DECODE_INSTANCE_S(__half, 128, 1, DECODE_DEEP_STAGES)
