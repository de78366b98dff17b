// Hopper (sm_90a) synchronisation and copy primitives of the warp-specialized
// flash kernel (flash_fwd_ws_kernel.cuh) and the decode kernels, written
// from the PTX ISA:
//  - mbarrier: arrive counts plus a transaction byte count, waited on by
//    phase parity (a barrier that never completed a phase passes a wait on
//    parity 1, which is how a ring's "empty" slots start free);
//  - TMA (cp.async.bulk.tensor): 4-D tile loads that complete on an mbarrier,
//    tile stores that complete in bulk groups;
//  - named barriers (bar.sync / bar.arrive on ids 1..15);
//  - setmaxnreg: moves registers between the producer and consumer warpgroups.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_SYNC_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_SYNC_CUH

#include <stdint.h>

#include "attn/cuda/fused/fused_mma.cuh"

FUSED_DEV void ws_bar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA) too.
FUSED_DEV void ws_bar_init_fence(void) {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

FUSED_DEV void ws_bar_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

FUSED_DEV void ws_bar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// count arrivals at once (one thread standing for a whole warpgroup's warps).
FUSED_DEV void ws_bar_arrive_n(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

// Waits for the phase of parity to complete; kCluster: with acquire at
// cluster scope (the producer's waits for free ring slots, the form the
// kernel's code was tuned with).
template <bool kCluster = false>
FUSED_DEV void ws_bar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    if constexpr (kCluster)
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, "
                   "[%1], %2;\n"
                   "selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done)
                   : "r"(bar), "r"(parity)
                   : "memory");
    else
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                   "selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done)
                   : "r"(bar), "r"(parity)
                   : "memory");
  } while (!done);
}

// One box of a 4-D tensor map (coordinates innermost first) into shared
// memory at dst; its bytes count against bar's transaction count.
FUSED_DEV void ws_tma_load(uint32_t dst, const void *map, uint32_t bar, int c0, int c1, int c2,
                           int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
               "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
               : "memory");
}

// Thread block clusters (the decode kernels): this CTA's rank, and the
// barrier of every thread of the cluster (barrier.cluster: all threads,
// converged).
FUSED_DEV uint32_t ws_cluster_rank(void) {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
FUSED_DEV void ws_cluster_sync(void) {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}

// One box from shared memory at src out to the tensor; rows outside the
// tensor's extent are not written.
FUSED_DEV void ws_tma_store(const void *map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], "
               "[%1];\n" ::"l"(map),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

FUSED_DEV void ws_tma_store_commit(void) {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Waits until the committed stores have read their shared memory.
FUSED_DEV void ws_tma_store_wait_read(void) {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

FUSED_DEV void ws_tma_prefetch_map(const void *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

FUSED_DEV void ws_named_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

FUSED_DEV void ws_named_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The SM's cycle counter and the GPU's nanosecond timer (the decode kernels).
FUSED_DEV unsigned long long ws_clock(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(t)::"memory");
  return t;
}
FUSED_DEV unsigned long long ws_globaltimer(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)::"memory");
  return t;
}

template <int kRegs>
FUSED_DEV void ws_regs_inc(void) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

template <int kRegs>
FUSED_DEV void ws_regs_dec(void) {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

#endif
