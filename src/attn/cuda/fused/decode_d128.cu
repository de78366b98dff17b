// Instances of the decode kernels for D = 128 (decode_kernel.cuh, decode_cluster.cuh).
#include "attn/cuda/fused/decode_cluster.cuh"

DECODE_INSTANCE(__nv_bfloat16, 128, 1)
DECODE_INSTANCE(__nv_bfloat16, 128, 2)
DECODE_INSTANCE(__nv_bfloat16, 128, 4)
DECODE_INSTANCE(__half, 128, 1)
DECODE_INSTANCE(__half, 128, 2)
DECODE_INSTANCE(__half, 128, 4)
DECODE_CLUSTER_INSTANCE(__nv_bfloat16, 128)
DECODE_CLUSTER_INSTANCE(__half, 128)
