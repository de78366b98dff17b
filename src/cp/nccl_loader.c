/* Finding and opening libnccl.so.2 (see nccl_loader.h). A missing library
 * disables context parallelism with one line; nothing else depends on it. */
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp/nccl_loader.h"
#include "core/error.h"

static attn_nccl_api api;
static const attn_nccl_api *api_ok;
static char api_why[768];
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void *try_open(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) snprintf(api.path, sizeof api.path, "%s", path);
  return h;
}

/* The first match of a glob pattern that opens. */
static void *try_glob(const char *pattern) {
  glob_t g;
  void *h = NULL;
  if (glob(pattern, 0, NULL, &g) == 0)
    for (size_t i = 0; !h && i < g.gl_pathc; i++) h = try_open(g.gl_pathv[i]);
  globfree(&g);
  return h;
}

/* Python's own answer for where packages live (purelib and platlib), for
 * installs the fixed patterns miss. Runs python3 once, only as a last try. */
static void *try_python(void) {
  FILE *p = popen("python3 -c \"import sysconfig as s; p = s.get_paths(); "
                  "print(p['purelib']); print(p['platlib'])\" 2>/dev/null",
                  "r");
  if (!p) return NULL;
  char line[400], path[512];
  void *h = NULL;
  while (!h && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    snprintf(path, sizeof path, "%s/nvidia/nccl/lib/libnccl.so.2", line);
    h = try_open(path);
  }
  pclose(p);
  return h;
}

static void *find_library(void) {
  const char *env = getenv("ATTNPROF_NCCL_LIB");
  if (env && *env) return try_open(env); /* asked for one file: only that one */
  void *h = try_open("libnccl.so.2");
  const char *roots[] = {getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX"), "/usr/local", "/usr",
                         "/opt/conda"};
  char pattern[600];
  for (size_t i = 0; !h && i < sizeof roots / sizeof roots[0]; i++) {
    if (!roots[i]) continue;
    snprintf(pattern, sizeof pattern, "%s/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
             roots[i]);
    h = try_glob(pattern);
  }
  const char *home = getenv("HOME");
  if (!h && home) {
    snprintf(pattern, sizeof pattern,
             "%s/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", home);
    h = try_glob(pattern);
  }
  return h ? h : try_python();
}

static void open_once(void) {
  void *h = find_library();
  if (!h) {
    const char *env = getenv("ATTNPROF_NCCL_LIB");
    snprintf(api_why, sizeof api_why,
             "context parallelism needs NCCL: no libnccl.so.2 %s%s (set ATTNPROF_NCCL_LIB to its "
             "path, or install NCCL or PyTorch's nvidia-nccl wheel)",
             env && *env ? "at ATTNPROF_NCCL_LIB=" : "on the loader path or in Python's packages",
             env && *env ? env : "");
    return;
  }
#define NCCL_SYM(field, name)                                                                      \
  do {                                                                                             \
    *(void **)&api.field = dlsym(h, name);                                                         \
    if (!api.field) {                                                                              \
      snprintf(api_why, sizeof api_why, "%.500s has no %s: NCCL 2.7 or later is needed", api.path, \
               name);                                                                              \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
  NCCL_SYM(get_error_string, "ncclGetErrorString");
  NCCL_SYM(get_version, "ncclGetVersion");
  NCCL_SYM(get_unique_id, "ncclGetUniqueId");
  NCCL_SYM(comm_init_rank, "ncclCommInitRank");
  NCCL_SYM(comm_destroy, "ncclCommDestroy");
  NCCL_SYM(comm_count, "ncclCommCount");
  NCCL_SYM(comm_user_rank, "ncclCommUserRank");
  NCCL_SYM(group_start, "ncclGroupStart");
  NCCL_SYM(group_end, "ncclGroupEnd");
  NCCL_SYM(send, "ncclSend");
  NCCL_SYM(recv, "ncclRecv");
  NCCL_SYM(all_gather, "ncclAllGather");
#undef NCCL_SYM
  api_ok = &api; /* the handle stays open for the process's life */
}

const attn_nccl_api *attn_nccl_open(char *why, size_t why_len) {
  pthread_once(&api_once, open_once);
  if (!api_ok) {
    if (why && why_len) snprintf(why, why_len, "%s", api_why);
    attn_fail(ATTN_STATUS_NO_DEVICE, "%s", api_why);
  }
  return api_ok;
}

attn_status attn_nccl_fail(const attn_nccl_api *a, int result, const char *call) {
  return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cp: %s failed: %s (NCCL error %d)", call,
                   a && a->get_error_string ? a->get_error_string(result) : "?", result);
}
