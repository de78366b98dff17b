/* The elementwise and row kernels of the baselines (naive, naive_inplace,
 * math on CUDA), behind C launchers. Each launcher enqueues one kernel on
 * `stream`, checks the launch and returns an attn_status (the message names
 * the kernel). The GEMMs are cuBLAS's (gemm_plan.h). */
#ifndef ATTNPROF_SRC_ATTN_CUDA_BASELINE_KERNELS_H
#define ATTNPROF_SRC_ATTN_CUDA_BASELINE_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "attn/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A strided [B, H, S, D] (or mask [B, H, Sq, Sk]) tensor as a kernel reads
 * it: element (b, h, s, d) at data + b*st[0] + h*st[1] + s*st[2] + d*st[3]
 * elements, with the stride of every size-1 dimension already set to 0 (the
 * broadcast rule of attn_tensor). */
typedef struct {
  const void *data;
  attn_dtype dtype;
  int64_t shape[4];
  int64_t st[4];
} attn_cuda_view;

/* The view of t (strides of size-1 dims zeroed). */
attn_cuda_view attn_cuda_view_of(const attn_tensor *t);

/* The [B, Hq, Sq, Sk] score rows one forward works on, contiguous, and what
 * the fill and softmax kernels apply to them. */
typedef struct {
  void *scores;     /* B*Hq*Sq rows of Sk elements, in `dtype` */
  attn_dtype dtype; /* f32, f16 or bf16 */
  int64_t b, hq, sq, sk;
  /* naive's fill: the cached causal mask, [Sq, Sk] bytes, 1 = attend. */
  const uint8_t *causal_keep;
  /* math's softmax: the causal mask rebuilt as an additive [Sq, Sk] fp32
   * bias (0 or -inf). */
  const float *causal_bias;
  attn_mask_kind mask_kind; /* the caller's mask, read through mask.st */
  attn_cuda_view mask;
  float *lse; /* [B, Hq, Sq] natural-log sum-exp, or NULL */
  int safe;   /* softmax: a fully masked row gives 0 and lse -inf */
} attn_cuda_rows;

/* x[0..n) *= scale, in x's dtype (fp32 arithmetic, one rounding). */
attn_status attn_cuda_scale(void *x, attn_dtype dtype, int64_t n, float scale, cudaStream_t stream);

/* keep[i*sk + j] = (j <= i + offset): the causal mask naive caches. */
attn_status attn_cuda_causal_keep(uint8_t *keep, int64_t sq, int64_t sk, int64_t offset,
                                  cudaStream_t stream);

/* bias[i*sk + j] = j <= i + offset ? 0 : -inf: math's per-call mask. */
attn_status attn_cuda_causal_bias(float *bias, int64_t sq, int64_t sk, int64_t offset,
                                  cudaStream_t stream);

/* In place on r->scores: causally hidden keys (r->causal_keep) and keys a
 * bool mask hides become -inf; an additive mask is added (a -inf mask value
 * gives -inf whatever the score). With the causal mask alone only the hidden
 * elements are written and no score is read. */
attn_status attn_cuda_masked_fill(const attn_cuda_rows *r, cudaStream_t stream);

/* Softmax of every row in place (fp32 arithmetic), after adding
 * r->causal_bias and the mask when given; writes r->lse when non-NULL.
 * r->safe = 0 is the plain softmax: a fully masked row is NaN. */
attn_status attn_cuda_softmax(const attn_cuda_rows *r, cudaStream_t stream);

/* Up to three strided tensors converted to contiguous fp32 [B, H, S, D]
 * buffers in one launch (math's upcast). */
typedef struct {
  attn_cuda_view src;
  float *dst;
} attn_cuda_upcast_job;

attn_status attn_cuda_upcast(const attn_cuda_upcast_job *jobs, int n_jobs, cudaStream_t stream);

/* A contiguous fp32 [B, H, S, D] buffer written into the strided tensor
 * dst in its dtype (math's downcast). */
attn_status attn_cuda_downcast(const float *src, const attn_tensor *dst, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
