/* dlopen of libcupti and libcuda (see cupti_lib.h). The libraries are opened
 * once and never closed: CUPTI keeps threads and hooks in the process until
 * it exits, and unloading it under them crashes (CUDA 13.0's CUPTI leaves
 * dangling pointers behind; cuptiFinalize is the supported way out). */
#include "prof/collect/cupti_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ATTNPROF_CUDA_LIBDIR
#define ATTNPROF_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

static pthread_once_t cupti_once = PTHREAD_ONCE_INIT, drv_once = PTHREAD_ONCE_INIT;
static cupti_fns cupti;
static cuda_drv_fns drv;
static char cupti_why[1024], drv_why[512];
static int cupti_ok, drv_ok;

/* Resolves name into *slot; on failure notes the first missing symbol. */
static int sym(void *h, const char *name, void *slot, char *why, size_t len) {
  void *p = dlsym(h, name);
  memcpy(slot, &p, sizeof p); /* object -> function pointer, as POSIX allows */
  if (!p && !why[0]) snprintf(why, len, "symbol %s missing", name);
  return p != NULL;
}

static void *open_cupti(void) {
  const char *env = getenv("ATTNPROF_CUPTI_LIB");
  if (env && *env) { /* an explicit choice that fails is the answer */
    void *h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    if (h) snprintf(cupti.path, sizeof cupti.path, "%s", env);
    else
      snprintf(cupti_why, sizeof cupti_why, "cannot load CUPTI from ATTNPROF_CUPTI_LIB=%s (%s)",
               env, dlerror());
    return h;
  }
  static const char *const tries[] = {"libcupti.so.13",
                                      ATTNPROF_CUDA_LIBDIR "/libcupti.so.13",
                                      ATTNPROF_CUDA_LIBDIR "/../extras/CUPTI/lib64/libcupti.so.13",
                                      "/usr/local/cuda/lib64/libcupti.so.13",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
                                      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"};
  enum { N = sizeof tries / sizeof tries[0] };
  for (size_t i = 0; i < N; i++) {
    void *h = dlopen(tries[i], RTLD_NOW | RTLD_GLOBAL);
    if (h) {
      snprintf(cupti.path, sizeof cupti.path, "%s", tries[i]);
      return h;
    }
  }
  snprintf(cupti_why, sizeof cupti_why,
           "CUPTI (libcupti.so.13) not found on the loader's path nor in %s or its "
           "../extras/CUPTI/lib64; install the CUDA toolkit's CUPTI or set ATTNPROF_CUPTI_LIB",
           ATTNPROF_CUDA_LIBDIR);
  return NULL;
}

static void load_cupti(void) {
  void *h = open_cupti();
  if (!h) return;
  char *w = cupti_why;
  size_t n = sizeof cupti_why;
  w[0] = 0;
  int ok = 1;
#define S(field, name) ok &= sym(h, name, &cupti.field, w, n)
  S(GetVersion, "cuptiGetVersion");
  S(GetResultString, "cuptiGetResultString");
  S(Subscribe, "cuptiSubscribe");
  S(Unsubscribe, "cuptiUnsubscribe");
  S(EnableCallback, "cuptiEnableCallback");
  S(GetCallbackName, "cuptiGetCallbackName");
  S(ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
  S(ActivityRegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback");
  S(ActivityEnable, "cuptiActivityEnable");
  S(ActivityDisable, "cuptiActivityDisable");
  S(ActivityEnableRuntimeApi, "cuptiActivityEnableRuntimeApi");
  S(ActivityEnableDriverApi, "cuptiActivityEnableDriverApi");
  S(ActivityGetNextRecord, "cuptiActivityGetNextRecord");
  S(ActivityGetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
  S(ActivityFlushAll, "cuptiActivityFlushAll");
  S(ActivitySetAttribute, "cuptiActivitySetAttribute");
  S(SetThreadIdType, "cuptiSetThreadIdType");
  S(GetContextId, "cuptiGetContextId");
  S(GetStreamIdEx, "cuptiGetStreamIdEx");
  S(Finalize, "cuptiFinalize");
#undef S
  void *v2 = dlsym(h, "cuptiSubscribe_v2"); /* optional */
  memcpy(&cupti.Subscribe_v2, &v2, sizeof v2);
  if (!ok) {
    char miss[256];
    snprintf(miss, sizeof miss, "%s", cupti_why);
    snprintf(cupti_why, sizeof cupti_why, "%s is too old for attnprof (%s; CUPTI 13 is needed)",
             cupti.path, miss);
    return;
  }
  cupti.GetVersion(&cupti.version);
  cupti_ok = 1;
}

static void load_drv(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(drv_why, sizeof drv_why, "no NVIDIA driver: libcuda.so.1 cannot be loaded (%s)",
             dlerror());
    return;
  }
  int ok = 1;
#define S(field, name) ok &= sym(h, name, &drv.field, drv_why, sizeof drv_why)
  S(Init, "cuInit");
  S(DeviceGetCount, "cuDeviceGetCount");
  S(DeviceGet, "cuDeviceGet");
  S(DeviceGetAttribute, "cuDeviceGetAttribute");
  S(DeviceGetName, "cuDeviceGetName");
  S(DeviceTotalMem, "cuDeviceTotalMem_v2");
  S(DriverGetVersion, "cuDriverGetVersion");
#undef S
  drv_ok = ok;
}

const cupti_fns *cupti_lib_load(char *why, size_t why_len) {
  pthread_once(&cupti_once, load_cupti);
  if (!cupti_ok && why) snprintf(why, why_len, "%s", cupti_why);
  return cupti_ok ? &cupti : NULL;
}

const cuda_drv_fns *cuda_drv_load(char *why, size_t why_len) {
  pthread_once(&drv_once, load_drv);
  if (!drv_ok && why) snprintf(why, why_len, "%s", drv_why);
  return drv_ok ? &drv : NULL;
}

const char *cupti_error(CUptiResult r) {
  static _Thread_local char buf[48];
  const char *s = NULL;
  if (cupti_ok && cupti.GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  snprintf(buf, sizeof buf, "CUPTI error %d", (int)r);
  return buf;
}
