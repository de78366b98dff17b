/* The backend table. Adding a backend: write its file (one attn_backend_impl)
 * and add one line here. AUTO's preference among backends is dispatch.c's
 * auto_order; this table says which implementations exist. */
#include "attn/backend.h"

/* CUDA implementations, one line each. */
#ifdef ATTNPROF_HAVE_CUDA
#ifdef ATTNPROF_HAVE_CUDNN /* headers found at build time; the library is dlopened */
#define ATTN_BACKEND_IMPL_CUDNN(X) X(attn_backend_cudnn_cuda)
#else
#define ATTN_BACKEND_IMPL_CUDNN(X)
#endif
#define ATTN_BACKEND_IMPLS_CUDA(X)   \
  ATTN_BACKEND_IMPL_CUDNN(X)         \
  X(attn_backend_flash_cuda)         \
  X(attn_backend_efficient_cuda)     \
  X(attn_backend_math_cuda)          \
  X(attn_backend_naive_inplace_cuda) \
  X(attn_backend_naive_cuda)
#else
#define ATTN_BACKEND_IMPLS_CUDA(X)
#endif

#define ATTN_BACKEND_IMPLS(X)       \
  X(attn_backend_flash_cpu)         \
  X(attn_backend_math_cpu)          \
  X(attn_backend_naive_inplace_cpu) \
  X(attn_backend_naive_cpu)         \
  ATTN_BACKEND_IMPLS_CUDA(X)

#define ATTN_DECLARE_IMPL(sym) extern const attn_backend_impl sym;
ATTN_BACKEND_IMPLS(ATTN_DECLARE_IMPL)
#undef ATTN_DECLARE_IMPL

const attn_backend_impl *const attn_backend_table[] = {
#define ATTN_TABLE_ENTRY(sym) &sym,
    ATTN_BACKEND_IMPLS(ATTN_TABLE_ENTRY)
#undef ATTN_TABLE_ENTRY
};

const size_t attn_backend_table_len = sizeof attn_backend_table / sizeof attn_backend_table[0];
