/* Descriptor builders with a sticky error and owned descriptors; see
 * cudnn_desc.h. Attribute names and types follow cudnn_graph.h (9.x). */
#include "attn/cuda/cudnn_desc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

void attn_cudnn_builder_init(attn_cudnn_builder *b, const attn_cudnn_api *api) {
  *b = (attn_cudnn_builder){.api = api, .status = CUDNN_STATUS_SUCCESS};
}

void attn_cudnn_fail(attn_cudnn_builder *b, cudnnStatus_t st, const char *what) {
  if (b->status != CUDNN_STATUS_SUCCESS) return;
  b->status = st;
  snprintf(b->failed_call, sizeof b->failed_call, "%s", what);
}

void attn_cudnn_desc_release(attn_cudnn_builder *b) {
  /* Reverse order: users of a descriptor go before it. */
  for (size_t i = b->n_owned; i-- > 0;) b->api->BackendDestroyDescriptor(b->owned[i]);
  free(b->owned);
  b->owned = NULL;
  b->n_owned = b->cap_owned = 0;
}

static int own(attn_cudnn_builder *b, attn_cudnn_desc d) {
  if (b->n_owned == b->cap_owned) {
    size_t cap = b->cap_owned ? 2 * b->cap_owned : 64;
    attn_cudnn_desc *p = realloc(b->owned, cap * sizeof *p);
    if (!p) return 0;
    b->owned = p, b->cap_owned = cap;
  }
  b->owned[b->n_owned++] = d;
  return 1;
}

int attn_cudnn_adopt(attn_cudnn_builder *b, attn_cudnn_desc d) { return own(b, d); }

attn_cudnn_desc attn_cudnn_create(attn_cudnn_builder *b, cudnnBackendDescriptorType_t type,
                                  const char *what) {
  attn_cudnn_desc d = NULL;
  if (b->status != CUDNN_STATUS_SUCCESS) return NULL;
  cudnnStatus_t st = b->api->BackendCreateDescriptor(type, &d);
  if (st != CUDNN_STATUS_SUCCESS) {
    attn_cudnn_fail(b, st, what);
    return NULL;
  }
  if (!own(b, d)) {
    b->api->BackendDestroyDescriptor(d);
    attn_cudnn_fail(b, CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, what);
    return NULL;
  }
  return d;
}

void attn_cudnn_set(attn_cudnn_builder *b, attn_cudnn_desc d, cudnnBackendAttributeName_t name,
                    cudnnBackendAttributeType_t type, int64_t count, const void *value,
                    const char *what) {
  if (b->status != CUDNN_STATUS_SUCCESS) return;
  cudnnStatus_t st = b->api->BackendSetAttribute(d, name, type, count, value);
  if (st != CUDNN_STATUS_SUCCESS) attn_cudnn_fail(b, st, what);
}

void attn_cudnn_finalize(attn_cudnn_builder *b, attn_cudnn_desc d, const char *what) {
  if (b->status != CUDNN_STATUS_SUCCESS) return;
  cudnnStatus_t st = b->api->BackendFinalize(d);
  if (st != CUDNN_STATUS_SUCCESS) attn_cudnn_fail(b, st, what);
}

attn_cudnn_desc attn_cudnn_tensor(attn_cudnn_builder *b, const attn_cudnn_tensor_spec *t) {
  static const char what[] = "a tensor descriptor";
  /* 16 bytes: what cudaMalloc gives and what the fused kernels' vector
   * loads need; the why-not check refuses pointers aligned less. */
  const int64_t align = 16;
  const bool is_virtual = t->is_virtual != 0, by_value = t->by_value != 0;
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t->dtype, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t->dims, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t->strides, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &t->uid, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, what);
  if (by_value)
    attn_cudnn_set(b, d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, what);
  attn_cudnn_finalize(b, d, what);
  return d;
}

static attn_cudnn_desc pointwise_desc(attn_cudnn_builder *b, cudnnPointwiseMode_t mode,
                                      cudnnDataType_t prec, int64_t axis) {
  static const char what[] = "a pointwise descriptor";
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec, what);
  if (axis >= 0)
    attn_cudnn_set(b, d, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, what);
  attn_cudnn_finalize(b, d, what);
  return d;
}

attn_cudnn_desc attn_cudnn_pointwise(attn_cudnn_builder *b, cudnnPointwiseMode_t mode,
                                     cudnnDataType_t prec, int64_t axis, attn_cudnn_desc x,
                                     attn_cudnn_desc bx, attn_cudnn_desc t, attn_cudnn_desc y) {
  static const char what[] = "a pointwise operation";
  const float one = 1.0f; /* alpha1/alpha2: plain y = op(x, b) */
  attn_cudnn_desc pw = pointwise_desc(b, mode, prec, axis);
  attn_cudnn_desc op = attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &x, what);
  if (bx)
    attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   1, &bx, what);
  if (t)
    attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   1, &t, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &y, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one, what);
  attn_cudnn_finalize(b, op, what);
  return op;
}

attn_cudnn_desc attn_cudnn_reduction(attn_cudnn_builder *b, cudnnReduceTensorOp_t red,
                                     attn_cudnn_desc x, attn_cudnn_desc y) {
  static const char what[] = "a reduction operation";
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &red,
                 what);
  attn_cudnn_set(b, d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, what);
  attn_cudnn_finalize(b, d, what);
  attn_cudnn_desc op = attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &x, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &y, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &d, what);
  attn_cudnn_finalize(b, op, what);
  return op;
}

attn_cudnn_desc attn_cudnn_matmul(attn_cudnn_builder *b, attn_cudnn_desc a, attn_cudnn_desc bm,
                                  attn_cudnn_desc c) {
  static const char what[] = "a matmul operation";
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  attn_cudnn_desc d = attn_cudnn_create(b, CUDNN_BACKEND_MATMUL_DESCRIPTOR, what);
  attn_cudnn_set(b, d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, what);
  attn_cudnn_finalize(b, d, what);
  attn_cudnn_desc op = attn_cudnn_create(b, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bm,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c,
                 what);
  attn_cudnn_set(b, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d,
                 what);
  attn_cudnn_finalize(b, op, what);
  return op;
}
