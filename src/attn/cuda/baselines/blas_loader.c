/* dlopen of libcublas (see blas_loader.h). */
#include "attn/cuda/baselines/blas_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/backend.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

attn_blas_table attn_blas_fns;

/* The exported names (cublas_v2.h maps four of them to their _v2 symbols),
 * in the order of attn_blas_table's fields. */
static const char *const symbols[] = {"cublasCreate_v2",       "cublasDestroy_v2",
                                      "cublasSetStream_v2",    "cublasSetWorkspace_v2",
                                      "cublasSetMathMode",     "cublasGetStatusName",
                                      "cublasGetStatusString", "cublasGemmStridedBatchedEx"};

_Static_assert(sizeof(attn_blas_table) == sizeof symbols / sizeof symbols[0] * sizeof(void *),
               "one symbol per field of attn_blas_table");

static pthread_once_t once = PTHREAD_ONCE_INIT;
static attn_status load_status;
static char load_error[768];

static void *open_lib(char *tried, size_t len, char *err, size_t err_len) {
  const char *env = getenv(ATTN_CUBLAS_LIB_ENV);
  const char *names[2] = {env && *env ? env : SONAME, NULL};
#ifdef ATTNPROF_CUDA_LIBDIR
  if (!(env && *env)) names[1] = ATTNPROF_CUDA_LIBDIR "/" SONAME;
#endif
  snprintf(tried, len, "%s", names[0]);
  for (int i = 0; i < 2 && names[i]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    const char *e = dlerror();
    snprintf(err, err_len, "%s", e ? e : names[i]);
  }
  return NULL;
}

static void load_once(void) {
  char tried[256], err[384] = "";
  void *h = open_lib(tried, sizeof tried, err, sizeof err);
  if (!h) {
    load_status = ATTN_STATUS_UNSUPPORTED;
    snprintf(load_error, sizeof load_error,
             "cuBLAS could not be loaded (tried %s): %s; install cuBLAS %d or set %s", tried, err,
             CUBLAS_VER_MAJOR, ATTN_CUBLAS_LIB_ENV);
    return;
  }
  void **slot = (void **)&attn_blas_fns;
  for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
    dlerror();
    slot[i] = dlsym(h, symbols[i]);
    if (!slot[i]) {
      load_status = ATTN_STATUS_UNSUPPORTED;
      snprintf(load_error, sizeof load_error, "%s was loaded but has no %s: it is not cuBLAS %d",
               tried, symbols[i], CUBLAS_VER_MAJOR);
      memset(&attn_blas_fns, 0, sizeof attn_blas_fns);
      return;
    }
  }
}

attn_status attn_blas_load(void) {
  pthread_once(&once, load_once);
  if (load_status) return attn_fail(load_status, "%s", load_error);
  return ATTN_STATUS_OK;
}
