/* The floor of any CUPTI tracer, for the process ladder of
 * docs/design/profiler-cost.md: a minimal injection library
 * (CUDA_INJECTION64_PATH=libbench_cupti_floor.so) that is none of attnprof's
 * collector. ATTNPROF_FLOOR says what it does:
 *   load    nothing: the driver loads an injection, CUPTI is never touched
 *   kernel  the CONCURRENT_KERNEL activity kind alone, through 2 MB buffers
 *           whose records are counted and dropped (no subscriber, no
 *           callbacks, no conversion, no writing)
 * At exit it flushes and says on stderr how many kernel records it got, so a
 * run shows that the floor recorded what it claims. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof/collect/cupti_lib.h"

#define EXPORT __attribute__((visibility("default")))

enum { BUF_BYTES = 2 << 20 };

static const cupti_fns *F;
static atomic_llong kernels;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *max_records = 0;
  *buffer = aligned_alloc(8, BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *rec = NULL;
  while (valid && F->ActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) atomic_fetch_add(&kernels, 1);
  free(buffer);
}

static void at_exit(void) {
  F->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  fprintf(stderr, "cupti_floor: kernel records %lld\n", (long long)atomic_load(&kernels));
  F->Finalize(); /* CUDA 13.0's CUPTI can crash at exit without it */
}

EXPORT int InitializeInjection(void) {
  const char *mode = getenv("ATTNPROF_FLOOR");
  if (!mode || strcmp(mode, "kernel")) return 1; /* "load": loaded, nothing more */
  char why[512];
  if (!(F = cupti_lib_load(why, sizeof why))) return fprintf(stderr, "cupti_floor: %s\n", why), 1;
  if (F->ActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
      F->ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return fprintf(stderr, "cupti_floor: CUPTI refused the kernel kind\n"), 1;
  atexit(at_exit);
  return 1;
}
