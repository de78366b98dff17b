/* NVTX through CUPTI, with one guard. NVTX hands its calls to the library
 * named by NVTX_INJECTION64_PATH (InitializeInjectionNvtx2); for NVTX ranges
 * to become CUPTI marker records that library must be libcupti. attnprof
 * trace points the variable here instead: we forward to libcupti's entry,
 * then turn NVTX's thread-naming calls into no-ops, because CUPTI 13.0
 * crashed in nvtxNameOsThreadA (NVIDIA/NVTX#125). Thread names are not used
 * by the trace; ATTNPROF_NVTX_KEEP_THREAD_NAMES=1 leaves CUPTI's in place.
 * NVTX's entry may come before the driver's: collection starts at the first.
 *
 * The NVTX injection interface (nvtxDetail/nvtxTypes.h) is declared here by
 * its few facts, to stay clear of the header-only implementation. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "inject.h"
#include "prof/collect/cupti_lib.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*nvtx_fn)(void);
typedef const void *(*nvtx_get_export_table)(uint32_t id);
typedef struct {
  size_t struct_size;
  int (*GetModuleFunctionTable)(int module, nvtx_fn ***table, unsigned *size);
} nvtx_callbacks;
enum {
  NVTX_ETID_CALLBACKS = 1,
  NVTX_MODULE_CORE = 1,
  NVTX_NAME_OS_THREAD_A = 14,
  NVTX_NAME_OS_THREAD_W = 15
};

static void name_thread_noop(void) {}

static void guard_thread_names(nvtx_get_export_table get) {
  const char *keep = getenv("ATTNPROF_NVTX_KEEP_THREAD_NAMES");
  if (keep && *keep == '1') return;
  const nvtx_callbacks *cb = get(NVTX_ETID_CALLBACKS);
  nvtx_fn **table = NULL;
  unsigned size = 0;
  if (!cb || !cb->GetModuleFunctionTable ||
      !cb->GetModuleFunctionTable(NVTX_MODULE_CORE, &table, &size))
    return;
  /* Slots are the program's function pointers; a no-op taking any arguments
   * is safe to call in the C ABI. */
  if (table && size >= NVTX_NAME_OS_THREAD_W) { /* size: the last valid index */
    if (table[NVTX_NAME_OS_THREAD_A]) *table[NVTX_NAME_OS_THREAD_A] = name_thread_noop;
    if (table[NVTX_NAME_OS_THREAD_W]) *table[NVTX_NAME_OS_THREAD_W] = name_thread_noop;
  }
}

/* Returns 1 when NVTX calls now reach CUPTI, 0 to leave NVTX off. */
EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table get) {
  /* CUPTI's marker records flow only once the MARKER kind is on: start now,
   * before CUDA is initialized if the program pushes a range first. */
  attnprof_inject_start();
  char why[512];
  const cupti_fns *f = cupti_lib_load(why, sizeof why);
  if (!f) {
    fprintf(stderr, "attnprof: NVTX ranges not traced: %s\n", why);
    return 0;
  }
  void *h = dlopen(f->path, RTLD_NOW | RTLD_NOLOAD);
  int (*init)(nvtx_get_export_table) = NULL;
  void *sym = h ? dlsym(h, "InitializeInjectionNvtx2") : NULL;
  *(void **)&init = sym;
  if (!init) {
    fprintf(stderr, "attnprof: NVTX ranges not traced: %s has no InitializeInjectionNvtx2\n",
            f->path);
    return 0;
  }
  int ok = init(get);
  if (ok) guard_thread_names(get);
  return ok;
}
