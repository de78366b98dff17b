/* Bad inputs and faults of the CUDA baselines (naive, naive_inplace, math):
 * the S x S buffer too large for the device is refused with the bytes
 * needed before anything launches; a layout cuBLAS cannot take is refused
 * by naive with the reason and taken by math; a device ordinal the process
 * does not have is refused; CUDA and cuBLAS errors name the call and the
 * status; a handle's workspace_limit refuses naive and math with the figures
 * while flash and efficient (no S x S buffer) still take the inputs, and the
 * handle's statistics show the scratch held. Without a GPU: exit 77
 * (Skipped). */
#include <stdio.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include "attn/cuda/common/cuda_common.h"
#include "attn/cuda/baselines/cuda_ctx.h"
#include "attnprof/device.h"

static int failures;
static attn_ctx *g_ctx;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    if (!(cond)) {                                           \
      failures++;                                            \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
  } while (0)

/* Error text: "CALL failed: STATUS_NAME (text)", and the status. */
static void test_error_text(void) {
  attn_status st = attn_cublas_fail(CUBLAS_STATUS_NOT_SUPPORTED, "cublasGemmStridedBatchedEx");
  CHECK(st == ATTN_STATUS_BACKEND_ERROR, "status %s", attn_status_string(st));
  CHECK(strstr(attn_last_error(), "cublasGemmStridedBatchedEx failed: CUBLAS_STATUS_NOT_SUPPORTED"),
        "got '%s'", attn_last_error());
  st = attn_cuda_fail(cudaErrorMemoryAllocation, "cudaMalloc");
  CHECK(st == ATTN_STATUS_OUT_OF_MEMORY, "status %s", attn_status_string(st));
  CHECK(strstr(attn_last_error(), "cudaMalloc failed: cudaErrorMemoryAllocation"), "got '%s'",
        attn_last_error());
}

/* Device tensors of a huge logical shape over a small real buffer: the
 * why-not check reads no data, and must refuse before any launch. */
static attn_args huge_args(void *buf, int64_t s) {
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_BF16, 0, 1, 64, s, 64);
  attn_args a = attn_args_make(t, t, t, t);
  a.causal = ATTN_CAUSAL_TOP_LEFT;
  return a;
}

static void test_memory_refusal(void *buf) {
  attn_args a = huge_args(buf, (int64_t)1 << 20);
  char why[512];
  /* naive: 2 bf16 buffers of 64 * 2^40 scores = 2^48 bytes, plus the 2^40
   * bytes of the causal mask. */
  attn_status st = attn_why_not(g_ctx, ATTN_BACKEND_NAIVE, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_OUT_OF_MEMORY, "status %s: %s", attn_status_string(st), why);
  CHECK(strstr(why, "282574488338432 bytes"), "naive's reason should give the bytes: '%s'", why);
  st = attn_forward(g_ctx, ATTN_BACKEND_MATH, &a);
  CHECK(st == ATTN_STATUS_OUT_OF_MEMORY, "math forward: %s", attn_status_string(st));
  CHECK(strstr(attn_last_error(), "bytes") && strstr(attn_last_error(), "free"),
        "math's reason should give bytes needed and free: '%s'", attn_last_error());
  CHECK(attn_cuda_synchronize(0) == ATTN_STATUS_OK, "a launch happened and failed: %s",
        attn_last_error());
}

static void test_strides(void *buf) {
  /* Every other element along D: naive hands rows to cuBLAS and refuses. */
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_F16, 0, 1, 2, 16, 8);
  for (int i = 0; i < 4; i++) t.strides[i] *= 2;
  attn_args a = attn_args_make(t, t, t, t);
  char why[512];
  attn_status st = attn_why_not(g_ctx, ATTN_BACKEND_NAIVE_INPLACE, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_UNSUPPORTED, "status %s: %s", attn_status_string(st), why);
  CHECK(strstr(why, "stride 2 along D"), "the reason should name the stride: '%s'", why);
  st = attn_why_not(g_ctx, ATTN_BACKEND_MATH, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_OK, "math takes any strides, got %s: %s", attn_status_string(st), why);
}

static void test_device_ordinal(void *buf) {
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_F16, 63, 1, 1, 4, 8);
  attn_args a = attn_args_make(t, t, t, t);
  char why[512];
  attn_status st = attn_why_not(g_ctx, ATTN_BACKEND_NAIVE, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_INVALID_ARGUMENT && strstr(why, "cuda:63"), "status %s: '%s'",
        attn_status_string(st), why);
}

/* 4 MiB of workspace: the 2 x 4 x 512 x 512 scores of naive and math (8 MiB
 * in bf16, 16 in fp32) do not fit; a handle without a limit runs them. */
static void test_workspace_limit(void *buf) {
  attn_ctx_opts o = attn_ctx_opts_default();
  o.workspace_limit = (size_t)4 << 20;
  attn_ctx *small = NULL;
  CHECK(attn_ctx_create(&o, &small) == ATTN_STATUS_OK, "%s", attn_last_error());
  if (!small) return;
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_BF16, 0, 2, 4, 512, 64);
  attn_args a = attn_args_make(t, t, t, t);
  const attn_backend refused[] = {ATTN_BACKEND_NAIVE, ATTN_BACKEND_NAIVE_INPLACE,
                                  ATTN_BACKEND_MATH};
  char why[512];
  for (int i = 0; i < 3; i++) {
    attn_status st = attn_why_not(small, refused[i], &a, why, sizeof why);
    CHECK(
        st == ATTN_STATUS_OUT_OF_MEMORY && strstr(why, "workspace_limit") && strstr(why, "4194304"),
        "%s under a 4 MiB limit: %s: '%s'", attn_backend_name(refused[i]), attn_status_string(st),
        why);
    st = attn_forward(small, refused[i], &a);
    CHECK(st == ATTN_STATUS_OUT_OF_MEMORY && strstr(attn_last_error(), "workspace_limit"),
          "%s forward under the limit: %s: '%s'", attn_backend_name(refused[i]),
          attn_status_string(st), attn_last_error());
  }
  const attn_backend taken[] = {ATTN_BACKEND_FLASH, ATTN_BACKEND_EFFICIENT};
  for (int i = 0; i < 2; i++) {
    attn_status st = attn_why_not(small, taken[i], &a, why, sizeof why);
    CHECK(st == ATTN_STATUS_OK, "%s needs no S x S buffer, refused: %s",
          attn_backend_name(taken[i]), why);
  }
  attn_ctx_stats s;
  attn_ctx_stats_get(small, &s);
  CHECK(s.workspace_limit == o.workspace_limit && s.workspace_bytes <= o.workspace_limit,
        "stats: %zu bytes held, limit %zu", s.workspace_bytes, s.workspace_limit);
  attn_ctx_destroy(small);
  /* the default handle has no limit: math's why-not takes the same inputs */
  CHECK(attn_why_not(g_ctx, ATTN_BACKEND_MATH, &a, why, sizeof why) == ATTN_STATUS_OK,
        "math without a limit: %s", why);
}

int main(void) {
  char why[256];
  test_error_text();
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s (the error-text checks ran: %d failures)\n", why, failures);
    return failures ? 1 : 77;
  }
  void *buf = NULL;
  enum { BUF_BYTES = 2 * 4 * 512 * 64 * 2 }; /* the largest tensor used: workspace_limit's */
  if (attn_cuda_malloc(0, BUF_BYTES, &buf) || attn_ctx_create(NULL, &g_ctx)) {
    printf("FAIL: %s\n", attn_last_error());
    return 1;
  }
  attn_cuda_fill_bytes(0, buf, 0, BUF_BYTES);
  test_memory_refusal(buf);
  test_strides(buf);
  test_device_ordinal(buf);
  test_workspace_limit(buf);
  attn_ctx_destroy(g_ctx);
  attn_cuda_free(0, buf);
  printf("%s (%d failures)\n", failures ? "FAILED" : "all passed", failures);
  return failures ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
