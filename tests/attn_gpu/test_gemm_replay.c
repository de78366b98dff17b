/* The eager replay of cuBLAS's launches (launch_replay.h, on by default) is
 * really taken, and what it replays is right: naive, naive_inplace and math
 * run the same problem three times (outputs poisoned and checked against the
 * fp64 reference each time, gpu_check.c); afterwards the QK^T GEMM of that
 * problem must be held as kept launches (attn_gemm_describe), which is
 * what calls two and three ran. bf16 (nvjet kernels, cuLaunchKernelEx) and
 * f32 (FP32 kernels, cudaLaunchKernelExC); causal and not.
 *
 * With ATTNPROF_GEMM_REPLAY=0 or ATTNPROF_CUDA_GRAPHS=1 there is nothing to
 * check: it says so and exits 77 (Skipped). No GPU: the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include "attn/cuda/cuda_ctx.h"
#include "attn/cuda/cuda_util.h"
#include "attn/cuda/gemm_plan.h"
#include "attn/cuda/launch_replay.h"
#include "attn_gpu/gpu_harness.h"

static int failures, passes;

/* The QK^T plan naive_ops and math_ops made for this case: scores (or
 * math's fp32 scores) at the start of the context's scratch. */
static int qk_replayed(const gpu_case *c, attn_backend b, char *what, size_t len) {
  const attn_cuda_ctx *ctx = attn_cuda_ctx_peek(0);
  attn_gemm g;
  char why[256];
  if (!ctx || !ctx->scratch) return snprintf(what, len, "no context"), 0;
  if (b == ATTN_BACKEND_MATH) /* math multiplies its fp32 copies, first in the scratch */
    return snprintf(what, len, "(math: kept launches not looked up)"), -1;
  if (attn_gemm_plan_qk(&c->dev.q, &c->dev.k, ctx->scratch, c->dev.q.dtype, 1.0f, &g, why,
                        sizeof why))
    return snprintf(what, len, "plan: %s", why), 0;
  return attn_gemm_describe(ctx, &g, what, len);
}

static void one(attn_backend b, attn_dtype dt, attn_causal causal, uint64_t *rng) {
  gpu_problem p = {.dtype = dt, .b = 2, .hq = 3, .hkv = 3, .sq = 200, .sk = 200, .d = 64,
                   .causal = causal, .layout = GPU_LAYOUT_BHSD};
  gpu_case c;
  gpu_outcome o;
  char what[512] = "";
  if (gpu_case_create(&c, &p, 0, rng)) {
    failures++;
    return;
  }
  int rc = gpu_case_run(&c, b, dt == ATTN_DTYPE_F32 ? 1e-5 : 1e-2, b != ATTN_BACKEND_MATH, &o);
  int kept = rc == GPU_RUN_PASSED ? qk_replayed(&c, b, what, sizeof what) : 0;
  int ok = rc == GPU_RUN_PASSED && kept != 0;
  printf("%s %s %s causal=%d: %s err %.2e; QK^T: %s\n", ok ? "ok  " : "FAIL",
         attn_backend_name(b), attn_dtype_name(dt), (int)causal,
         rc == GPU_RUN_PASSED ? "3 calls passed," : o.failure, o.err, what);
  ok ? passes++ : failures++;
  gpu_case_destroy(&c);
}

int main(void) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  const char *graphs = getenv("ATTNPROF_CUDA_GRAPHS");
  if ((graphs && !strcmp(graphs, "1")) || !attn_cuda_replay_enabled()) {
    printf("SKIP: the GEMM replay is off here (ATTNPROF_GEMM_REPLAY=0, ATTNPROF_CUDA_GRAPHS=1 "
           "or the driver entry points missing)\n");
    return 77;
  }
  uint64_t rng = 777;
  const attn_backend bs[] = {ATTN_BACKEND_NAIVE, ATTN_BACKEND_NAIVE_INPLACE, ATTN_BACKEND_MATH};
  const attn_dtype dts[] = {ATTN_DTYPE_BF16, ATTN_DTYPE_F32};
  for (int i = 0; i < 3; i++)
    for (int d = 0; d < 2; d++)
      for (int causal = 0; causal < 2; causal++)
        one(bs[i], dts[d], causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE, &rng);
  printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
