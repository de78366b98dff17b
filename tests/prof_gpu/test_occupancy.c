/* Occupancy arithmetic on hand-worked cases (CPU, runs in CI). Each expected
 * figure is worked out in the comment above it from the allocation rules
 * (registers per warp rounded to 256, warps rounded to 4 sub-partitions,
 * shared memory + 1 KiB reserved rounded to 128 B) and the H200's limits
 * (notes/profiler.md section 2), not taken from the code under test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attnprof/prof.h"
#include "prof/analysis/occupancy.h"

static prof_footprint fp_of(int threads, int regs, int static_smem, int dyn_smem, int grid) {
  prof_footprint f;
  memset(&f, 0, sizeof f);
  f.block[0] = threads, f.block[1] = f.block[2] = 1;
  f.grid[0] = grid, f.grid[1] = f.grid[2] = 1;
  f.registers_per_thread = regs;
  f.static_shared_memory = static_smem;
  f.dynamic_shared_memory = dyn_smem;
  f.occupancy_pct_in_file = -1;
  return f;
}

static prof_occupancy occ(const prof_footprint *f, const prof_device *d, attn_status expect_rc) {
  prof_occupancy o;
  assert_int_equal(prof_occupancy_compute(f, d, &o), expect_rc);
  return o;
}

/* cuBLAS nvjet on the H200: 384 threads (12 warps), 213,188 B dynamic smem,
 * opt-in, carveout 233,472, cluster 2x1x1 with 66 active clusters; 168 regs.
 * regs: 168*32 = 5376 per warp, 16384/5376 = 3 per partition, 3*4/12 = 1.
 * smem: 213188+1024 = 214212 -> 214272; 233472/214272 = 1.
 * cluster: 66*2/132 = 1. One block of 12 warps of 64: 18.75%. PyTorch: 0%. */
static void nvjet_is_18_75(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(384, 168, 0, 213188, 264);
  f.shared_memory_limit_optin = 1;
  f.shared_memory_executed = 233472;
  f.cluster[0] = 2, f.cluster[1] = f.cluster[2] = 1;
  f.max_active_clusters = 66;
  prof_occupancy o = occ(&f, &d, 0);
  assert_int_equal(o.limit_regs, 1);
  assert_int_equal(o.limit_smem, 1);
  assert_int_equal(o.smem_per_block, 214272);
  assert_float_equal(o.limit_cluster, 1.0, 1e-12);
  assert_float_equal(o.active_blocks, 1.0, 1e-12);
  assert_float_equal(o.theoretical_pct, 18.75, 1e-9);
  assert_int_equal(o.limiting, PROF_OCC_LIMIT_REGS | PROF_OCC_LIMIT_SMEM | PROF_OCC_LIMIT_CLUSTER);
  char buf[64];
  assert_string_equal(prof_occupancy_limit_names(o.limiting, buf, sizeof buf), "REGS|SMEM|CLUSTER");
}

/* PyTorch's flash forward: 128 threads (4 warps), 255 regs, 65,536 B smem.
 * regs: 255*32 = 8160 -> 8192; 16384/8192 = 2; 2*4/4 = 2 blocks.
 * smem: 66560 -> 233472/66560 = 3. 2 blocks * 4 warps / 64 = 12.5%. */
static void flash_is_register_limited(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(128, 255, 0, 65536, 1024);
  prof_occupancy o = occ(&f, &d, 0);
  assert_int_equal(o.limit_regs, 2);
  assert_int_equal(o.limit_smem, 3);
  assert_float_equal(o.theoretical_pct, 12.5, 1e-9);
  assert_float_equal(o.achieved_est_pct, 12.5, 1e-9); /* 1024 blocks > 132*2 */
  assert_int_equal(o.limiting, PROF_OCC_LIMIT_REGS);
}

/* The fixture's cutlass fmha (trace_efficient.json): 128 threads, 128 regs,
 * 18,944 B. regs: 4096 per warp, 16384/4096*4/4 = 4 blocks; smem 19968 ->
 * 11 blocks. 4*4/64 = 25%, the 25 PyTorch wrote (it is right below 48 KiB). */
static void cutlass_agrees_with_pytorch(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(128, 128, 18944, 0, 2048);
  prof_occupancy o = occ(&f, &d, 0);
  assert_int_equal(o.limit_smem, 11);
  assert_float_equal(o.theoretical_pct, 25.0, 1e-9);
}

/* cuDNN conv: 384 threads, 231,424 B, cluster 1x8x1, 15 active clusters.
 * smem allows 1 block; the clusters 15*8/132 = 0.909 blocks/SM:
 * 0.909*12/64 = 17.05%. */
static void cluster_caps_residency(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(384, 90, 0, 231424, 120);
  f.cluster[0] = 1, f.cluster[1] = 8, f.cluster[2] = 1;
  f.max_active_clusters = 15;
  prof_occupancy o = occ(&f, &d, 0);
  assert_float_equal(o.active_blocks, 120.0 / 132.0, 1e-12);
  assert_float_equal(o.theoretical_pct, 100.0 * (120.0 / 132.0) * 12 / 64, 1e-9);
  assert_int_equal(o.limiting, PROF_OCC_LIMIT_CLUSTER);
  /* The grid (120 blocks) is exactly what the clusters hold: no further cut. */
  assert_float_equal(o.achieved_est_pct, o.theoretical_pct, 1e-9);
}

/* A one-block grid: 256 threads, 32 regs, no smem. warps 64/8 = 8; regs
 * 1024/warp -> 16*4/8 = 8; smem 1024 -> 228. 8 blocks: 100% theoretical;
 * achieved 100 * 1/(132*8) = 0.0947%. */
static void tiny_grid_estimate(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(256, 32, 0, 0, 1);
  prof_occupancy o = occ(&f, &d, 0);
  assert_int_equal(o.limit_smem, 228);
  assert_float_equal(o.theoretical_pct, 100.0, 1e-9);
  assert_float_equal(o.achieved_est_pct, 100.0 / (132 * 8), 1e-9);
  assert_int_equal(o.limiting, PROF_OCC_LIMIT_WARPS | PROF_OCC_LIMIT_REGS);
}

/* Register granularity: 33 regs * 32 = 1056 -> 1280 per warp. 256 threads:
 * 16384/1280 = 12 -> 12*4/8 = 6 blocks = 48 warps = 75%. */
static void register_granularity(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(256, 33, 0, 0, 10000);
  assert_float_equal(occ(&f, &d, 0).theoretical_pct, 75.0, 1e-9);
  /* 255 regs, 1024 threads: 8192 * 32 warps > 65,536 regs per block: none fits. */
  prof_footprint big = fp_of(1024, 255, 0, 0, 1);
  prof_occupancy o = occ(&big, &d, ATTN_STATUS_INVALID_ARGUMENT);
  assert_int_equal(o.limit_regs, 0);
  assert_float_equal(o.active_blocks, 0.0, 0);
}

/* Shared memory granularity and carveout: 1 B static -> 1025 -> 1152 per
 * block; 4,096 B in a 32 KiB carveout: 5120 -> 32768/5120 = 6. */
static void smem_granularity_and_carveout(void **state) {
  (void)state;
  prof_device d = prof_device_h200();
  prof_footprint f = fp_of(32, 16, 1, 0, 1);
  assert_int_equal(occ(&f, &d, 0).smem_per_block, 1152);
  prof_footprint g = fp_of(32, 16, 4096, 0, 100000);
  g.shared_memory_executed = 32768;
  prof_occupancy o = occ(&g, &d, 0);
  assert_int_equal(o.limit_smem, 6);
  assert_int_equal(o.smem_per_sm, 32768);
  assert_float_equal(o.theoretical_pct, 100.0 * 6 / 64, 1e-9);
  /* More than the opt-in limit (227 KiB + 1 KiB): nothing fits. */
  prof_footprint h = fp_of(128, 32, 0, 232449, 1);
  assert_int_equal(occ(&h, &d, ATTN_STATUS_INVALID_ARGUMENT).limit_smem, 0);
}

/* sm_86 (48 warps, 16 blocks/SM): 512 threads, 64 regs -> 2048 per warp,
 * 16384/2048*4/16 = 2 blocks = 32 of 48 warps. sm_89 (24 blocks/SM): 32
 * threads, 16 regs: the block slots bind, 24 of 48 warps. */
static void ampere_and_ada(void **state) {
  (void)state;
  prof_device d86 = {.compute_major = 8, .compute_minor = 6, .num_sms = 84};
  prof_footprint f = fp_of(512, 64, 0, 0, 10000);
  prof_occupancy o = occ(&f, &d86, 0);
  assert_int_equal(o.limit_warps, 3);
  assert_int_equal(o.limit_regs, 2);
  assert_float_equal(o.theoretical_pct, 100.0 * 32 / 48, 1e-9);
  prof_device d89 = {.compute_major = 8, .compute_minor = 9, .num_sms = 128};
  prof_footprint g = fp_of(32, 16, 0, 0, 100000);
  o = occ(&g, &d89, 0);
  assert_int_equal(o.limiting, PROF_OCC_LIMIT_BLOCKS);
  assert_float_equal(o.theoretical_pct, 50.0, 1e-9);
  /* sm_86's opt-in limit is 99 KiB: 100 KiB dynamic does not fit. */
  prof_footprint h = fp_of(128, 32, 0, 102400, 1);
  assert_int_equal(occ(&h, &d86, ATTN_STATUS_INVALID_ARGUMENT).limit_smem, 0);
}

/* A device as a torch trace describes it lacks block slots and the reserved
 * smem: the architecture fills them; an unknown architecture is refused. */
static void device_completion(void **state) {
  (void)state;
  prof_device from_file = prof_device_h200();
  from_file.max_blocks_per_sm = 0;
  from_file.reserved_shared_memory_per_block = 0;
  prof_device full;
  assert_int_equal(prof_device_complete(&from_file, &full), 0);
  assert_int_equal(full.max_blocks_per_sm, 32);
  assert_int_equal(full.reserved_shared_memory_per_block, 1024);
  prof_device old = {.compute_major = 6, .compute_minor = 1};
  prof_footprint f = fp_of(128, 32, 0, 0, 1);
  prof_occupancy o;
  assert_int_equal(prof_occupancy_compute(&f, &old, &o), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(attn_last_error(), "6.1"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nvjet_is_18_75),
      cmocka_unit_test(flash_is_register_limited),
      cmocka_unit_test(cutlass_agrees_with_pytorch),
      cmocka_unit_test(cluster_caps_residency),
      cmocka_unit_test(tiny_grid_estimate),
      cmocka_unit_test(register_granularity),
      cmocka_unit_test(smem_granularity_and_carveout),
      cmocka_unit_test(ampere_and_ada),
      cmocka_unit_test(device_completion),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
