/* attn_struct_size (attnprof/abi.h): the layouts bindings mirror. */
#include "attnprof/abi.h"

size_t attn_struct_size(attn_struct s) {
  static const size_t sizes[ATTN_STRUCT_COUNT] = {
      [ATTN_STRUCT_TENSOR] = sizeof(attn_tensor),
      [ATTN_STRUCT_ARGS] = sizeof(attn_args),
      [ATTN_STRUCT_CTX_OPTS] = sizeof(attn_ctx_opts),
      [ATTN_STRUCT_CTX_STATS] = sizeof(attn_ctx_stats),
      [ATTN_STRUCT_BACKEND_INFO] = sizeof(attn_backend_info),
  };
  return (unsigned)s < ATTN_STRUCT_COUNT ? sizes[s] : 0;
}
