/* Writes, with attnprof's own trace writer, a GPU trace of synthetic events
 * shaped as torch.profiler's schedule makes them: ProfilerStep#1..3, each
 * holding one attn_fwd whose launch calls (runtime and driver API) start a
 * GEMM, an nvjet kernel, a device-to-device copy and a memset on stream 7.
 * For test_hta.py: Holistic Trace Analysis reads it and its kernel breakdown
 * is compared with attnprof's summary of the same file. No GPU needed. */
#include <stdio.h>

#include "prof/prof_test.h"

static void launch(prof_trace *t, prof_cat api_cat, const char *api, prof_cat cat, const char *name,
                   int64_t at, int64_t gpu_at, int64_t dur, int64_t corr) {
  synth_launch(t, api_cat, api, 11, at, 4321, corr);
  int64_t i = synth_gpu(t, cat, name, 0, 7, gpu_at, dur, corr);
  prof_event *e = (prof_event *)prof_trace_at(t, (size_t)i);
  if (cat == PROF_CAT_KERNEL) {
    e->fp = (prof_footprint){.grid = {2, 66, 1},
                             .block = {384, 1, 1},
                             .registers_per_thread = 168,
                             .dynamic_shared_memory = 213188,
                             .occupancy_pct_in_file = -1};
  } else {
    e->bytes = 1 << 20;
  }
}

static void step(prof_trace *t, int k, int64_t t0, int64_t *corr) {
  char name[32];
  snprintf(name, sizeof name, "ProfilerStep#%d", k);
  synth_range(t, name, 11, t0, 900000);
  synth_range(t, "attn_fwd", 11, t0 + 1000, 800000);
  int64_t g = t0 + 100000;
  launch(t, PROF_CAT_CUDA_DRIVER, "cuLaunchKernelEx", PROF_CAT_KERNEL, "nvjet_sm90_tst_64x512",
         t0 + 2000, g, 83517 + k, ++*corr);
  launch(t, PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel", PROF_CAT_KERNEL,
         "void gemm<float, 128>(float*)", t0 + 9000, g + 90000, 120250, ++*corr);
  launch(t, PROF_CAT_CUDA_RUNTIME, "cudaMemcpyAsync", PROF_CAT_GPU_MEMCPY,
         "Memcpy DtoD (Device -> Device)", t0 + 15000, g + 220000, 126816, ++*corr);
  launch(t, PROF_CAT_CUDA_RUNTIME, "cudaMemsetAsync", PROF_CAT_GPU_MEMSET, "Memset (Device)",
         t0 + 21000, g + 350000, 1500, ++*corr);
  launch(t, PROF_CAT_CUDA_DRIVER, "cuLaunchKernelEx", PROF_CAT_KERNEL, "nvjet_sm90_tst_64x512",
         t0 + 26000, g + 360000, 84002, ++*corr);
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: write_gpu_steps OUT.json\n"), 2;
  prof_trace *t = synth_gpu_sample();
  prof_trace *s = NULL;
  prof_trace_create(&s);
  prof_trace_set_process(s, TEST_PID, "python3");
  prof_trace_add_device(s, prof_trace_device(t, 0));
  int64_t corr = 1000;
  for (int k = 1; k <= 3; k++) step(s, k, T0 + (int64_t)k * 1000000, &corr);
  attn_status st = prof_write_trace(s, argv[1], NULL); /* .json or .json.gz */
  if (st) fprintf(stderr, "write_gpu_steps: %s\n", attn_last_error());
  prof_trace_destroy(t);
  prof_trace_destroy(s);
  return st ? 1 : 0;
}
