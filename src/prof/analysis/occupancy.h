/* Per-architecture facts the occupancy calculator needs beyond what a device
 * reports (allocation granularities, sub-partitions, reserved shared memory),
 * and the filling-in of device limits a trace file did not carry. The values
 * are those of CUDA's occupancy header (cuda_occupancy.h) and the CUDA
 * programming guide's table of compute capabilities. */
#ifndef ATTNPROF_SRC_PROF_OCCUPANCY_H
#define ATTNPROF_SRC_PROF_OCCUPANCY_H

#include "attnprof/prof.h"

typedef struct {
  int major, minor;
  int max_blocks_per_sm;
  int max_threads_per_sm;
  int regs_per_sm;
  int smem_per_sm;      /* largest carveout, bytes */
  int smem_optin;       /* largest opt-in shared memory per block, bytes */
  int reserved_smem;    /* the driver's per-block reservation, bytes */
  int smem_granularity; /* shared memory is allocated per block in these units */
  int reg_unit;         /* registers are allocated per warp in these units */
  int sub_partitions;   /* warps are rounded up to this many for the register check */
  int max_regs_per_thread;
} prof_arch;

/* The facts of compute capability major.minor; the nearest older one when the
 * exact one is not in the table (NULL before sm_70). */
const prof_arch *prof_arch_find(int major, int minor);

/* A copy of d with every limit it leaves at 0 filled in from its
 * architecture's table (a trace read from disk lacks some; Kineto writes no
 * max blocks per SM nor reserved shared memory). Returns 0, or -1 when the
 * compute capability is unknown. */
int prof_device_complete(const prof_device *d, prof_device *out);

/* The device facts of an H200 (sm_90, 132 SMs) as CUDA 13 reports them: the
 * device the occupancy tests and the documentation examples use. */
prof_device prof_device_h200(void);

#endif
