/* dlopen of libcudnn with an explicit search order and plain-words errors.
 * See cudnn_loader.h. */
#include "attn/cuda/cudnn/cudnn_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuDNN 9 splits into sublibraries that libcudnn_graph opens by soname;
 * opening them first from the folder of an explicit path makes that work
 * when the folder is not on the loader's path. Failures are harmless. */
static void preload_siblings(const char *path) {
  static const char *const siblings[] = {"libcudnn_graph.so.9", "libcudnn_heuristic.so.9",
                                         "libcudnn_engines_precompiled.so.9",
                                         "libcudnn_engines_runtime_compiled.so.9"};
  const char *slash = strrchr(path, '/');
  if (!slash) return;
  for (size_t i = 0; i < sizeof siblings / sizeof siblings[0]; i++) {
    char file[1024];
    int n = snprintf(file, sizeof file, "%.*s/%s", (int)(slash - path), path, siblings[i]);
    if (n > 0 && (size_t)n < sizeof file) dlopen(file, RTLD_NOW | RTLD_GLOBAL);
  }
}

/* The candidates in order; returns how many were written. */
static size_t candidates(const char **out, char (*buf)[1024]) {
  const char *env = getenv(ATTN_CUDNN_LIB_ENV);
  if (env && *env) {
    out[0] = env;
    return 1;
  }
  size_t n = 0;
  out[n++] = "libcudnn_graph.so.9";
  out[n++] = "libcudnn.so.9";
#ifdef ATTNPROF_CUDA_LIBDIR
  snprintf(buf[0], sizeof buf[0], "%s/libcudnn_graph.so.9", ATTNPROF_CUDA_LIBDIR);
  snprintf(buf[1], sizeof buf[1], "%s/libcudnn.so.9", ATTNPROF_CUDA_LIBDIR);
  out[n++] = buf[0];
  out[n++] = buf[1];
#else
  (void)buf;
#endif
  return n;
}

static attn_status resolve(void *lib, const char *file, const char *const *symbols, size_t n,
                           void **syms, char *why, size_t why_len) {
  for (size_t i = 0; i < n; i++) {
    dlerror();
    syms[i] = dlsym(lib, symbols[i]);
    if (!syms[i]) {
      snprintf(why, why_len,
               "%s was loaded but has no %s: it is not cuDNN 9 (set %s to the path of "
               "libcudnn_graph.so.9)",
               file, symbols[i], ATTN_CUDNN_LIB_ENV);
      return ATTN_STATUS_UNSUPPORTED;
    }
  }
  return ATTN_STATUS_OK;
}

attn_status attn_cudnn_lib_open(const char *const *symbols, size_t n, void **syms, char *path,
                                size_t path_len, char *why, size_t why_len) {
  const char *names[4];
  char buf[2][1024];
  size_t count = candidates(names, buf);
  char last_error[512] = "";
  for (size_t i = 0; i < count; i++) {
    if (strchr(names[i], '/')) preload_siblings(names[i]);
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *e = dlerror();
      snprintf(last_error, sizeof last_error, "%s", e ? e : names[i]);
      continue;
    }
    if (path && path_len) snprintf(path, path_len, "%s", names[i]);
    return resolve(lib, names[i], symbols, n, syms, why, why_len);
  }
  snprintf(why, why_len, "cuDNN 9 could not be loaded (tried %s%s): %s; install cuDNN 9 or set %s",
           names[0], count > 1 ? " and the other usual names" : "", last_error, ATTN_CUDNN_LIB_ENV);
  return ATTN_STATUS_UNSUPPORTED;
}
