/* The cuDNN entry points the cudnn backend calls, resolved once per process
 * from the library cudnn_loader.c finds. cudnn_graph.h is included for its
 * types and enums only: nothing links against libcudnn. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_API_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_API_H

#include <cudnn_graph.h>
#include <stddef.h>

#include "attnprof/attn.h"

/* X(return type, name without the "cudnn" prefix, parameters) */
#define ATTN_CUDNN_FUNCS(X)                                                                       \
  X(size_t, GetVersion, (void))                                                                   \
  X(const char *, GetErrorString, (cudnnStatus_t))                                                \
  X(void, GetLastErrorString, (char *, size_t))                                                   \
  X(cudnnStatus_t, Create, (cudnnHandle_t *))                                                     \
  X(cudnnStatus_t, Destroy, (cudnnHandle_t))                                                      \
  X(cudnnStatus_t, SetStream, (cudnnHandle_t, cudaStream_t))                                      \
  X(cudnnStatus_t, BackendCreateDescriptor,                                                       \
    (cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *))                                   \
  X(cudnnStatus_t, BackendDestroyDescriptor, (cudnnBackendDescriptor_t))                          \
  X(cudnnStatus_t, BackendFinalize, (cudnnBackendDescriptor_t))                                   \
  X(cudnnStatus_t, BackendSetAttribute,                                                           \
    (cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, int64_t, \
     const void *))                                                                               \
  X(cudnnStatus_t, BackendGetAttribute,                                                           \
    (cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,    \
     int64_t, int64_t *, void *))                                                                 \
  X(cudnnStatus_t, BackendExecute,                                                                \
    (cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t))

typedef struct {
#define ATTN_CUDNN_FIELD(ret, name, params) ret(*name) params;
  ATTN_CUDNN_FUNCS(ATTN_CUDNN_FIELD)
#undef ATTN_CUDNN_FIELD
  size_t version; /* cudnnGetVersion(): 91400 for 9.14.0 */
  char path[512]; /* the file that was opened */
} attn_cudnn_api;

/* The entry points, or NULL with the reason in why (library missing, not
 * cuDNN 9, older than 9.0). Loaded once; later calls return the same. */
const attn_cudnn_api *attn_cudnn_api_get(char *why, size_t why_len);

/* "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN (detail from cuDNN)" into buf. */
void attn_cudnn_status_text(const attn_cudnn_api *api, cudnnStatus_t st, char *buf, size_t len);

#endif
