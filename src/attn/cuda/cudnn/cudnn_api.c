/* Resolves the cuDNN entry points once per process (pthread_once) and keeps
 * the reason when that fails, so every why-not check can repeat it. */
#include "attn/cuda/cudnn/cudnn_api.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attn/cuda/cudnn/cudnn_loader.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static attn_cudnn_api api;
static int api_ok;
static char api_why[768]; /* room for a 512-byte path and the words */

static void load(void) {
  static const char *const names[] = {
#define ATTN_CUDNN_NAME(ret, name, params) "cudnn" #name,
      ATTN_CUDNN_FUNCS(ATTN_CUDNN_NAME)
#undef ATTN_CUDNN_NAME
  };
  enum { N = sizeof names / sizeof names[0] };
  void *syms[N];
  if (attn_cudnn_lib_open(names, N, syms, api.path, sizeof api.path, api_why, sizeof api_why))
    return;
  /* POSIX guarantees a dlsym result converts to a function pointer; memcpy
   * says so without a cast ISO C frowns on. */
  size_t i = 0;
#define ATTN_CUDNN_SET(ret, name, params) memcpy(&api.name, &syms[i++], sizeof api.name);
  ATTN_CUDNN_FUNCS(ATTN_CUDNN_SET)
#undef ATTN_CUDNN_SET
  api.version = api.GetVersion();
  if (api.version < 90000) {
    snprintf(api_why, sizeof api_why,
             "%s is cuDNN %zu.%zu: the cudnn backend needs cuDNN 9 (set ATTNPROF_CUDNN_LIB)",
             api.path, api.version < 10000 ? api.version / 1000 : api.version / 10000,
             api.version < 10000 ? api.version % 1000 / 100 : api.version / 100 % 100);
    return;
  }
  api_ok = 1;
}

const attn_cudnn_api *attn_cudnn_api_get(char *why, size_t why_len) {
  pthread_once(&load_once, load);
  if (!api_ok && why && why_len) snprintf(why, why_len, "%s", api_why);
  return api_ok ? &api : NULL;
}

void attn_cudnn_status_text(const attn_cudnn_api *a, cudnnStatus_t st, char *buf, size_t len) {
  char detail[256] = "";
  a->GetLastErrorString(detail, sizeof detail);
  /* cuDNN's detail is multi-line at times; one line reads better in a table. */
  for (char *p = detail; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  snprintf(buf, len, "%s%s%s%s", a->GetErrorString(st), *detail ? " (" : "", detail,
           *detail ? ")" : "");
}
