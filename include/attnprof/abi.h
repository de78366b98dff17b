/* Sizes of the public structs as this library was built, for bindings that
 * mirror them field by field (the Python package checks its ctypes mirrors
 * against these when it loads, and refuses a library they do not match). */
#ifndef ATTNPROF_ABI_H
#define ATTNPROF_ABI_H

#include <stddef.h>

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ATTN_STRUCT_TENSOR,       /* attn_tensor */
  ATTN_STRUCT_ARGS,         /* attn_args */
  ATTN_STRUCT_CTX_OPTS,     /* attn_ctx_opts */
  ATTN_STRUCT_CTX_STATS,    /* attn_ctx_stats */
  ATTN_STRUCT_BACKEND_INFO, /* attn_backend_info */
  ATTN_STRUCT_COUNT
} attn_struct;

/* sizeof the struct in this library; 0 for a value outside the enum. */
ATTN_API size_t attn_struct_size(attn_struct s);

#ifdef __cplusplus
}
#endif
#endif
