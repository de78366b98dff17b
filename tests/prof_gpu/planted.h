/* Known GPU work for the CUPTI tests (planted_kernels.cu): kernels of known
 * grid, block and shared memory (registers as the compiler reports them),
 * one launched with cuLaunchKernelEx in clusters, a memset and two copies.
 * The expected values come from the CUDA runtime (cudaFuncGetAttributes,
 * cudaOccupancy*), never from the code under test. */
#ifndef ATTNPROF_TESTS_PROF_GPU_PLANTED_H
#define ATTNPROF_TESTS_PROF_GPU_PLANTED_H

#include <stdint.h>

#include "attnprof/prof.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PLANTED_KERNELS = 4, PLANTED_COPY_BYTES = 1 << 20, PLANTED_SET_BYTES = 4096 };

typedef struct {
  const char *name_part;  /* a substring of the kernel's name */
  const char *launch_api; /* the API CUPTI should name */
  int grid[3], block[3], cluster[3];
  int registers, static_smem, dynamic_smem, optin;
  int occupancy_blocks; /* cudaOccupancyMaxActiveBlocksPerMultiprocessor */
  int active_clusters;  /* cudaOccupancyMaxActiveClusters, 0 without clusters */
} planted_kernel;

typedef struct {
  planted_kernel k[PLANTED_KERNELS];
  int64_t t_begin, t_end; /* attn_clock_ns around the work (synchronized) */
} planted_result;

/* Devices the runtime sees (0 on any error). */
int planted_device_count(void);
/* The device's limits from cudaGetDeviceProperties; 0 or -1. */
int planted_device(int ordinal, prof_device *out);
/* Runs the planted work on device 0 inside `range` (prof_range_push/pop),
 * with the first kernel also inside the NVTX range `nvtx_range`. Returns 0,
 * or -1 with a message printed. */
int planted_run(const char *range, const char *nvtx_range, planted_result *out);
/* Launches n tiny kernels back to back (for the dropped-records test). */
int planted_flood(int n);

/* Every kind of sync call (runtime: event, stream wait, stream on a created,
 * the legacy and the per-thread stream, device; driver: event, stream wait,
 * created stream, context: 10 calls)
 * on streams and an event made once by planted_syncs_setup, so that two
 * sessions see the same stream ids. Each returns 0 or -1 with a message. */
enum { PLANTED_SYNC_CALLS = 10 };
int planted_syncs_setup(void);
int planted_syncs(int64_t *t_begin, int64_t *t_end);

/* Occupancy of kernels of several footprints, through the runtime's own
 * calculator: for kernel i (0 <= i < planted_footprints()), its footprint on
 * device 0 and the runtime's max active blocks per SM. 0 or -1. */
int planted_footprints(void);
int planted_footprint(int i, prof_footprint *fp, int *runtime_blocks, const char **name);

#ifdef __cplusplus
}
#endif
#endif
