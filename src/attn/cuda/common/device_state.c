/* The engine handle's device state, gathered for attn_ctx_trim,
 * attn_ctx_destroy and attn_ctx_stats_get: the cuBLAS baselines' and the
 * cudnn backend's per-device handles, scratch and workspaces. */
#include "attn/cuda/baselines/cuda_ctx.h"
#include "attn/cuda/common/launch_record.h"
#ifdef ATTNPROF_HAVE_CUDNN
#include "attn/cuda/cudnn/cudnn_state.h"
#endif

void attn_cuda_ctx_release(attn_ctx *ctx, int keep_handles) {
#ifdef ATTNPROF_HAVE_CUDNN
  attn_cudnn_release(ctx, keep_handles);
#endif
  attn_cuda_baselines_release(ctx, keep_handles);
  if (!keep_handles) attn_launch_release(ctx);
}

size_t attn_cuda_ctx_bytes(const attn_ctx *ctx) {
  size_t n = attn_cuda_baselines_bytes(ctx);
#ifdef ATTNPROF_HAVE_CUDNN
  n += attn_cudnn_bytes(ctx);
#endif
  return n;
}
