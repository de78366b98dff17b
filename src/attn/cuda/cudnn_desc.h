/* Small builders over cuDNN's backend descriptors (tensors, pointwise,
 * reduction and matmul operations) with a sticky error: after the first
 * failing call every later one does nothing, and the builder remembers which
 * call failed and cuDNN's status. Graph code then reads as a straight list of
 * operations with one check at the end.
 *
 * Every descriptor created is owned by the builder and destroyed together
 * (attn_cudnn_desc_release): an execution plan keeps them alive as long as it
 * lives, since cuDNN does not promise a plan copies what it refers to. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_DESC_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_DESC_H

#include <stdint.h>

#include "attn/cuda/cudnn_api.h"

typedef cudnnBackendDescriptor_t attn_cudnn_desc;

typedef struct {
  const attn_cudnn_api *api;
  cudnnStatus_t status;  /* first failure, CUDNN_STATUS_SUCCESS while none */
  char failed_call[160]; /* what that was, e.g. "finalize of the operation graph" */
  attn_cudnn_desc *owned;
  size_t n_owned, cap_owned;
} attn_cudnn_builder;

void attn_cudnn_builder_init(attn_cudnn_builder *b, const attn_cudnn_api *api);
/* Destroys every descriptor the builder created. */
void attn_cudnn_desc_release(attn_cudnn_builder *b);
/* Hands a descriptor created elsewhere to the builder; 0 when out of memory
 * (the descriptor is then still the caller's). */
int attn_cudnn_adopt(attn_cudnn_builder *b, attn_cudnn_desc d);
/* Records a failure that did not come from a cuDNN call (out of memory). */
void attn_cudnn_fail(attn_cudnn_builder *b, cudnnStatus_t st, const char *what);

attn_cudnn_desc attn_cudnn_create(attn_cudnn_builder *b, cudnnBackendDescriptorType_t type,
                                  const char *what);
void attn_cudnn_set(attn_cudnn_builder *b, attn_cudnn_desc d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void *value,
                    const char *what);
void attn_cudnn_finalize(attn_cudnn_builder *b, attn_cudnn_desc d, const char *what);

/* A 4-D tensor. by_value: a host scalar passed in the variant pack. */
typedef struct {
  int64_t uid;
  cudnnDataType_t dtype;
  int64_t dims[4], strides[4];
  int is_virtual, by_value;
} attn_cudnn_tensor_spec;

attn_cudnn_desc attn_cudnn_tensor(attn_cudnn_builder *b, const attn_cudnn_tensor_spec *t);

/* y = mode(x [, bx [, t]]) with math precision prec; axis for GEN_INDEX
 * (-1 when the mode takes none). bx and t may be NULL. */
attn_cudnn_desc attn_cudnn_pointwise(attn_cudnn_builder *b, cudnnPointwiseMode_t mode,
                                     cudnnDataType_t prec, int64_t axis, attn_cudnn_desc x,
                                     attn_cudnn_desc bx, attn_cudnn_desc t, attn_cudnn_desc y);
/* y = reduce(x) over the dimensions where y has extent 1, in fp32. */
attn_cudnn_desc attn_cudnn_reduction(attn_cudnn_builder *b, cudnnReduceTensorOp_t op,
                                     attn_cudnn_desc x, attn_cudnn_desc y);
/* c = a b (batched over the leading dims), accumulated in fp32. */
attn_cudnn_desc attn_cudnn_matmul(attn_cudnn_builder *b, attn_cudnn_desc a, attn_cudnn_desc bm,
                                  attn_cudnn_desc c);

#endif
