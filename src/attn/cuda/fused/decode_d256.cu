// Instances of the decode kernels for D = 256 (decode_kernel.cuh, decode_cluster.cuh).
#include "attn/cuda/fused/decode_cluster.cuh"

DECODE_INSTANCE(__nv_bfloat16, 256, 1)
DECODE_INSTANCE(__nv_bfloat16, 256, 2)
DECODE_INSTANCE(__nv_bfloat16, 256, 4)
DECODE_INSTANCE(__half, 256, 1)
DECODE_INSTANCE(__half, 256, 2)
DECODE_INSTANCE(__half, 256, 4)
DECODE_CLUSTER_INSTANCE(__nv_bfloat16, 256)
DECODE_CLUSTER_INSTANCE(__half, 256)
