// Packed sequences through cuDNN (cudnn_graph.h, SEQS graph with ragged
// offsets): the per-call tensors cuDNN reads that attn_seqs does not hold as
// such, made on the device from the caller's row offsets on the call's
// stream, so a trusted call stays free of host copies. One thread per
// sequence boundary; B + 1 of them.
#include <stdint.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/cudnn/cudnn_ragged.h"

template <typename O>
__global__ void cudnn_ragged_kernel(const int32_t *q_off, const int32_t *kv_off, int64_t b,
                                    int64_t qs, int64_t os, int64_t ks, int64_t vs, O *offs,
                                    int32_t *lens, int64_t stride) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i > b) return;
  if (q_off) {
    offs[i] = (O)(q_off[i] * qs), offs[stride + i] = (O)(q_off[i] * os);
    if (i < b) lens[i] = q_off[i + 1] - q_off[i];
  }
  if (kv_off) {
    offs[2 * stride + i] = (O)(kv_off[i] * ks), offs[3 * stride + i] = (O)(kv_off[i] * vs);
    if (i < b) lens[stride + i] = kv_off[i + 1] - kv_off[i];
  }
}

extern "C" attn_status attn_cudnn_ragged_fill(const attn_args *a, void *offs, int wide,
                                              int32_t *lens, int64_t stride, cudaStream_t stream) {
  const attn_seqs *s = a->seqs;
  const int64_t b = s->batch;
  const unsigned threads = 128, blocks = (unsigned)((b + threads) / threads);
  const int64_t qs = a->q.strides[2], os = a->out.strides[2], ks = a->k.strides[2],
                vs = a->v.strides[2];
  if (wide)
    cudnn_ragged_kernel<<<blocks, threads, 0, stream>>>(s->q_offsets, s->kv_offsets, b, qs, os, ks,
                                                        vs, (int64_t *)offs, lens, stride);
  else
    cudnn_ragged_kernel<<<blocks, threads, 0, stream>>>(s->q_offsets, s->kv_offsets, b, qs, os, ks,
                                                        vs, (int32_t *)offs, lens, stride);
  ATTN_CUDA_TRY(cudaGetLastError());
  return ATTN_STATUS_OK;
}
