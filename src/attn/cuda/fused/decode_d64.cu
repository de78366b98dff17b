// Instances of the decode kernels for D = 64 (decode_kernel.cuh, decode_cluster.cuh).
#include "attn/cuda/fused/decode_cluster.cuh"

DECODE_INSTANCE(__nv_bfloat16, 64, 1)
DECODE_INSTANCE(__nv_bfloat16, 64, 2)
DECODE_INSTANCE(__nv_bfloat16, 64, 4)
DECODE_INSTANCE(__half, 64, 1)
DECODE_INSTANCE(__half, 64, 2)
DECODE_INSTANCE(__half, 64, 4)
DECODE_CLUSTER_INSTANCE(__nv_bfloat16, 64)
DECODE_CLUSTER_INSTANCE(__half, 64)
