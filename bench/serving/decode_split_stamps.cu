// Where the split decode kernel's time goes at one split (issue 13, NOTES.md
// run 20): the cell B=16 KV=1k (default; argv: kv, reps, B), one new token,
// GQA 32/8, D128, bf16, contiguous cache, as the library plans it there: one
// CTA per (sequence, KV head), 16 query rows (4 real), 3-stage ring of
// 64-key blocks, the LINEAR copies, one split (no combine). It includes
// decode_kernel.cuh with DECODE_STAMPS defined, so each CTA records
// %globaltimer and %clock64 at its phases (the library's build has none of
// this), and prints per variant of ATTNPROF_DECODE_FIX the graph-timed us
// per call, the error against the host reference (fp64 sums) and the phase
// table (decode_bench.h); then the floor of an empty kernel with the same
// grid and shared memory.
//   bench_decode_split_stamps [kv] [reps] [B]
#define DECODE_STAMPS 1
#include "attn/cuda/fused/decode_kernel.cuh"
#include "decode_bench.h"

__global__ void empty_kernel(void) {}

static const char *kPhase[DECODE_PHASES] = {
    "start", "first blocks issued", "block 0 landed", "block 0 done", "block 1 landed",
    "last block issued", "last block landed", "last block done", "ring drained (barrier)",
    "end (merged, written)"};

static void run(Cell &c, int reps, cudaStream_t s, unsigned *) {
  constexpr int kStages = decode_cfg<128>::kStages;
  constexpr int smem = decode_smem_bytes<128, 1, kStages>();
  const dim3 grid(1, c.hkv, c.b);
  struct Variant {
    const char *name;
    int fix;
  } vars[] = {{"fix=11 (default: merge by 4 columns)", 11},
              {"fix=3 (run 18's merge)", 3},
              {"fix=15 (the early start: Q and the first blocks before kv_len)", 15},
              {"fix=11 (again: the control)", 11}};
  for (const Variant &v : vars) {
    attn_decode_params p = params(c, 1);
    p.fix = v.fix;
    auto launch = [&](cudaStream_t st) {
      auto fn = v.fix & 1 ? decode_fwd_kernel<bf16, 128, 1, kStages, DECODE_PATH_LINEAR, 1>
                          : decode_fwd_kernel<bf16, 128, 1, kStages, DECODE_PATH_LINEAR, 0>;
      CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      fn<<<grid, DECODE_THREADS, smem, st>>>(p);
    };
    double err;
    const double us = stamped_run(c, launch, reps, s, &err);
    printf("%s: %d CTAs, %d B shared: %.2f us per call (graph), err %.1e\n", v.name,
           c.b * c.hkv, smem, us, err);
    phase_table(c.b * c.hkv, kPhase);
  }
  CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  printf("floor: empty kernel, grid (1, %d, %d), %d threads, %d B shared: %.2f us\n", c.hkv, c.b,
         DECODE_THREADS, smem,
         graph_us([&](cudaStream_t st) { empty_kernel<<<grid, DECODE_THREADS, smem, st>>>(); },
                  reps, s));
}

int main(int argc, char **argv) { return bench_main(argc, argv, "split", run, 1024, 16); }
