/* Bad inputs and faults of the CUDA baselines (naive, naive_inplace, math):
 * the S x S buffer too large for the device is refused with the bytes
 * needed before anything launches; a layout cuBLAS cannot take is refused
 * by naive with the reason and taken by math; a device ordinal the process
 * does not have is refused; CUDA and cuBLAS errors name the call and the
 * status. Without a GPU: exit 77 (Skipped). */
#include <stdio.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include "attn/cuda/cuda_common.h"
#include "attn/cuda/cuda_ctx.h"
#include "attn/cuda/cuda_util.h"

static int failures;

#define CHECK(cond, ...)                                    \
  do {                                                      \
    if (!(cond)) {                                          \
      failures++;                                           \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                  \
      printf("\n");                                         \
    }                                                       \
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
  attn_status st = attn_why_not(ATTN_BACKEND_NAIVE, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_OUT_OF_MEMORY, "status %s: %s", attn_status_string(st), why);
  CHECK(strstr(why, "282574488338432 bytes"), "naive's reason should give the bytes: '%s'", why);
  st = attn_forward(ATTN_BACKEND_MATH, &a);
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
  attn_status st = attn_why_not(ATTN_BACKEND_NAIVE_INPLACE, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_UNSUPPORTED, "status %s: %s", attn_status_string(st), why);
  CHECK(strstr(why, "stride 2 along D"), "the reason should name the stride: '%s'", why);
  st = attn_why_not(ATTN_BACKEND_MATH, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_OK, "math takes any strides, got %s: %s", attn_status_string(st), why);
}

static void test_device_ordinal(void *buf) {
  attn_tensor t = attn_tensor_bhsd(buf, ATTN_DTYPE_F16, 63, 1, 1, 4, 8);
  attn_args a = attn_args_make(t, t, t, t);
  char why[512];
  attn_status st = attn_why_not(ATTN_BACKEND_NAIVE, &a, why, sizeof why);
  CHECK(st == ATTN_STATUS_INVALID_ARGUMENT && strstr(why, "cuda:63"), "status %s: '%s'",
        attn_status_string(st), why);
}

int main(void) {
  char why[256];
  test_error_text();
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s (the error-text checks ran: %d failures)\n", why, failures);
    return failures ? 1 : 77;
  }
  void *buf = NULL;
  if (attn_cuda_malloc(0, 1 << 16, &buf)) {
    printf("FAIL: %s\n", attn_last_error());
    return 1;
  }
  attn_cuda_fill_bytes(0, buf, 0, 1 << 16);
  test_memory_refusal(buf);
  test_strides(buf);
  test_device_ordinal(buf);
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
