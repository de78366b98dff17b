/* GPU test (label "gpu"): the occupancy calculator against the CUDA runtime's
 * own (cudaOccupancyMaxActiveBlocksPerMultiprocessor) on real kernels of
 * several footprints: few and many threads, 3-warp blocks, heavy registers,
 * static shared memory, dynamic shared memory below and above the 48 KiB
 * default up to the 227 KiB opt-in limit. Device limits come from the
 * runtime too. Exits 77 when there is no GPU. */
#include <stdio.h>

#include "attnprof/prof.h"
#include "planted.h"

int main(void) {
  if (planted_device_count() < 1) {
    printf("SKIP: no CUDA device visible to the runtime\n");
    return 77;
  }
  prof_device d;
  if (planted_device(0, &d)) return 1;
  printf("device 0: %s, sm_%d%d, %d SMs\n", d.name, d.compute_major, d.compute_minor, d.num_sms);
  int failed = 0, n = planted_footprints();
  for (int i = 0; i < n; i++) {
    prof_footprint fp;
    int runtime = -1;
    const char *name = "";
    if (planted_footprint(i, &fp, &runtime, &name)) return 1;
    prof_occupancy o;
    int rc = prof_occupancy_compute(&fp, &d, &o);
    int ours = rc ? 0 : (int)o.active_blocks;
    char lim[64];
    printf("%-40s regs %3d smem %6d+%-6d  runtime %2d  ours %2d  %6.2f%%  %s%s\n", name,
           fp.registers_per_thread, fp.static_shared_memory, fp.dynamic_shared_memory, runtime,
           ours, o.theoretical_pct, prof_occupancy_limit_names(o.limiting, lim, sizeof lim),
           ours == runtime ? "" : "  MISMATCH");
    failed += ours != runtime;
  }
  printf("%d of %d footprints agree with the runtime\n", n - failed, n);
  return failed ? 1 : 0;
}
