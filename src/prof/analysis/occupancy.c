/* The occupancy calculator: how many blocks of a kernel fit on one SM, and
 * what share of the SM's warps that keeps busy.
 *
 * Each per-SM resource gives its own limit, computed as the hardware
 * allocates it (the rules of CUDA's cuda_occupancy.h): warps; registers,
 * allocated per warp in units of 256 and checked per block with the warp
 * count rounded up to the 4 sub-partitions; shared memory, allocated per
 * block as static + dynamic + the driver's 1 KiB reservation rounded up to
 * 128 bytes, out of the carveout the kernel ran with; the block slots. The
 * point of doing it ourselves: PyTorch's profiler checks shared memory against
 * the default 48 KiB limit, so every kernel that opted in to more (cuBLAS
 * nvjet, cuDNN, flash) gets 0%. Here the opt-in limit applies, and clusters
 * are capped by the residency CUPTI measured (max_active_clusters). */
#include "prof/analysis/occupancy.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

/* One row per compute capability (CUDA programming guide, "Technical
 * Specifications per Compute Capability"; cuda_occupancy.h granularities). */
static const prof_arch arch_table[] = {
    /* maj min blk  thr    regs   smem/SM  optin   rsv  gran unit sub maxreg */
    {7, 0, 32, 2048, 65536, 98304, 98304, 0, 128, 256, 4, 255},
    {7, 5, 16, 1024, 65536, 65536, 65536, 0, 128, 256, 4, 255},
    {8, 0, 32, 2048, 65536, 167936, 166912, 1024, 128, 256, 4, 255},
    {8, 6, 16, 1536, 65536, 102400, 101376, 1024, 128, 256, 4, 255},
    {8, 7, 16, 1536, 65536, 167936, 166912, 1024, 128, 256, 4, 255},
    {8, 9, 24, 1536, 65536, 102400, 101376, 1024, 128, 256, 4, 255},
    {9, 0, 32, 2048, 65536, 233472, 232448, 1024, 128, 256, 4, 255},
};
enum { N_ARCH = sizeof arch_table / sizeof arch_table[0] };

const prof_arch *prof_arch_find(int major, int minor) {
  const prof_arch *best = NULL;
  for (int i = 0; i < N_ARCH; i++) {
    const prof_arch *a = &arch_table[i];
    if (a->major < major || (a->major == major && a->minor <= minor)) best = a;
  }
  return best;
}

#define FILL(field, value)                     \
  do {                                         \
    if (out->field <= 0) out->field = (value); \
  } while (0)

int prof_device_complete(const prof_device *d, prof_device *out) {
  *out = *d;
  const prof_arch *a = prof_arch_find(d->compute_major, d->compute_minor);
  if (!a) return -1;
  FILL(warp_size, 32);
  FILL(max_threads_per_block, 1024);
  FILL(max_threads_per_sm, a->max_threads_per_sm);
  FILL(max_blocks_per_sm, a->max_blocks_per_sm);
  FILL(regs_per_sm, a->regs_per_sm);
  FILL(regs_per_block, 65536);
  FILL(shared_memory_per_block, 49152);
  FILL(shared_memory_per_block_optin, a->smem_optin);
  FILL(shared_memory_per_sm, a->smem_per_sm);
  /* 0 is a real value before sm_80, so only a newer architecture fills it. */
  if (out->reserved_shared_memory_per_block <= 0)
    out->reserved_shared_memory_per_block = a->reserved_smem;
  return 0;
}

prof_device prof_device_h200(void) {
  prof_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "NVIDIA H200");
  d.compute_major = 9;
  d.num_sms = 132;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.warp_size = 32;
  d.shared_memory_per_block = 49152;
  d.shared_memory_per_block_optin = 232448;
  d.shared_memory_per_sm = 233472;
  d.reserved_shared_memory_per_block = 1024;
  d.total_global_mem = 150109880320;
  return d;
}

static int round_up(int x, int unit) { return unit > 0 ? (x + unit - 1) / unit * unit : x; }

/* Blocks the register file allows (INT_MAX when the kernel uses none). */
static int regs_limit(const prof_arch *a, const prof_device *d, int regs, int warps) {
  if (regs <= 0) return INT_MAX;
  if (regs > a->max_regs_per_thread) return 0;
  int per_warp = round_up(regs * d->warp_size, a->reg_unit);
  /* The per-block check assumes every sub-partition is allocated at once. */
  if ((long long)per_warp * round_up(warps, a->sub_partitions) > d->regs_per_block) return 0;
  int warps_per_partition = d->regs_per_sm / a->sub_partitions / per_warp;
  return warps_per_partition * a->sub_partitions / warps;
}

/* Blocks the shared memory carveout allows; sets *alloc to the per-block size. */
static int smem_limit(const prof_arch *a, const prof_device *d, const prof_footprint *fp,
                      int carveout, int *alloc) {
  long long used = (long long)fp->static_shared_memory + fp->dynamic_shared_memory;
  int reserved = d->reserved_shared_memory_per_block;
  *alloc = round_up((int)(used + reserved), a->smem_granularity);
  /* A kernel that ran with more than the default limit had opted in. */
  int optin = fp->shared_memory_limit_optin || used > d->shared_memory_per_block;
  long long max_per_block =
      (long long)(optin ? d->shared_memory_per_block_optin : d->shared_memory_per_block) + reserved;
  if (*alloc > max_per_block) return 0;
  return *alloc > 0 ? carveout / *alloc : INT_MAX;
}

/* Blocks per SM that the clusters' measured residency allows, or -1. */
static double cluster_limit(const prof_footprint *fp, const prof_device *d) {
  long long size = (long long)(fp->cluster[0] > 0 ? fp->cluster[0] : 1) *
                   (fp->cluster[1] > 0 ? fp->cluster[1] : 1) *
                   (fp->cluster[2] > 0 ? fp->cluster[2] : 1);
  if (size <= 1 || fp->max_active_clusters <= 0 || d->num_sms <= 0) return -1;
  return (double)fp->max_active_clusters * (double)size / d->num_sms;
}

static void mark_limits(prof_occupancy *o) {
  double m = o->active_blocks;
  o->limiting = (o->limit_warps == m ? PROF_OCC_LIMIT_WARPS : 0u) |
                (o->limit_regs == m ? PROF_OCC_LIMIT_REGS : 0u) |
                (o->limit_smem == m ? PROF_OCC_LIMIT_SMEM : 0u) |
                (o->limit_blocks == m ? PROF_OCC_LIMIT_BLOCKS : 0u) |
                (o->limit_cluster >= 0 && o->limit_cluster == m ? PROF_OCC_LIMIT_CLUSTER : 0u);
}

static int min_int(int a, int b) { return a < b ? a : b; }

attn_status prof_occupancy_compute(const prof_footprint *fp, const prof_device *dev,
                                   prof_occupancy *out) {
  memset(out, 0, sizeof *out);
  out->limit_cluster = -1;
  prof_device d;
  const prof_arch *a = prof_arch_find(dev->compute_major, dev->compute_minor);
  if (!a || prof_device_complete(dev, &d))
    return attn_fail(ATTN_STATUS_UNSUPPORTED,
                     "occupancy: compute capability %d.%d is not in the "
                     "table (sm_70 and newer are)",
                     dev->compute_major, dev->compute_minor);
  long long threads = (long long)fp->block[0] * fp->block[1] * fp->block[2];
  if (threads <= 0 || threads > d.max_threads_per_block)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "occupancy: block of %lld threads (1 to %d are "
                     "accepted)",
                     threads, d.max_threads_per_block);
  int warps = (int)((threads + d.warp_size - 1) / d.warp_size);
  int max_warps = d.max_threads_per_sm / d.warp_size;
  out->smem_per_sm =
      fp->shared_memory_executed > 0 ? fp->shared_memory_executed : d.shared_memory_per_sm;
  out->limit_warps = max_warps / warps;
  out->limit_regs = regs_limit(a, &d, fp->registers_per_thread, warps);
  out->limit_smem = smem_limit(a, &d, fp, out->smem_per_sm, &out->smem_per_block);
  out->limit_blocks = d.max_blocks_per_sm;
  out->limit_cluster = cluster_limit(fp, &d);
  int blocks = min_int(min_int(out->limit_warps, out->limit_regs),
                       min_int(out->limit_smem, out->limit_blocks));
  out->active_blocks =
      out->limit_cluster >= 0 && out->limit_cluster < blocks ? out->limit_cluster : blocks;
  mark_limits(out);
  if (out->active_blocks <= 0)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "occupancy: no block of this kernel fits on an "
                     "SM (%d registers/thread, %d B shared memory per block)",
                     fp->registers_per_thread, out->smem_per_block);
  out->theoretical_pct = 100.0 * out->active_blocks * warps / max_warps;
  long long grid = (long long)fp->grid[0] * fp->grid[1] * fp->grid[2];
  double wave = out->active_blocks * d.num_sms; /* blocks the whole GPU holds at once */
  double fill = grid > 0 && wave > 0 && (double)grid < wave ? (double)grid / wave : 1.0;
  out->achieved_est_pct = out->theoretical_pct * fill;
  return ATTN_STATUS_OK;
}

const char *prof_occupancy_limit_names(unsigned limiting, char *buf, size_t len) {
  static const char *const names[] = {"WARPS", "REGS", "SMEM", "BLOCKS", "CLUSTER"};
  size_t used = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < 5; i++) {
    if (!(limiting & (1u << i)) || used >= len) continue;
    int w = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", names[i]);
    if (w > 0) used += (size_t)w;
  }
  return buf;
}
