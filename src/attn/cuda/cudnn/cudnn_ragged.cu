// Packed sequences through cuDNN (cudnn_graph.h, SEQS graph with ragged
// offsets): the per-call tensors cuDNN reads that attn_seqs does not hold as
// such, made on the device from the caller's row offsets on the call's
// stream, so a trusted call stays free of host copies. One thread per
// sequence boundary; B + 1 of them.
#include <stdint.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/cudnn/cudnn_ragged.h"

__global__ void cudnn_ragged_kernel(const int32_t *q_off, const int32_t *kv_off, int64_t b,
                                    int64_t qs, int64_t os, int64_t ks, int64_t vs, int32_t *out,
                                    int64_t stride) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i > b) return;
  if (q_off) {
    out[i] = (int32_t)(q_off[i] * qs), out[stride + i] = (int32_t)(q_off[i] * os);
    if (i < b) out[4 * stride + i] = q_off[i + 1] - q_off[i];
  }
  if (kv_off) {
    out[2 * stride + i] = (int32_t)(kv_off[i] * ks), out[3 * stride + i] = (int32_t)(kv_off[i] * vs);
    if (i < b) out[5 * stride + i] = kv_off[i + 1] - kv_off[i];
  }
}

extern "C" attn_status attn_cudnn_ragged_fill(const attn_args *a, int32_t *out, int64_t stride,
                                              cudaStream_t stream) {
  const attn_seqs *s = a->seqs;
  const int64_t b = s->batch;
  const unsigned threads = 128, blocks = (unsigned)((b + threads) / threads);
  cudnn_ragged_kernel<<<blocks, threads, 0, stream>>>(
      s->q_offsets, s->kv_offsets, b, a->q.strides[2], a->out.strides[2], a->k.strides[2],
      a->v.strides[2], out, stride);
  ATTN_CUDA_TRY(cudaGetLastError());
  return ATTN_STATUS_OK;
}
