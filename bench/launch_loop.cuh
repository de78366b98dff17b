/* The tiny-kernel loop that trace_overhead_prog.cu times (one process, traced
 * from outside or not at all): an empty one-block kernel, launched in bursts
 * of BURST with a synchronize between bursts outside the timer, so the figure
 * is the host's cost to issue a launch, not the GPU's pace (a full launch
 * queue never holds the host back). */
#ifndef ATTNPROF_BENCH_LAUNCH_LOOP_CUH
#define ATTNPROF_BENCH_LAUNCH_LOOP_CUH

#include <cuda_runtime.h>
#include <time.h>

enum { BURST = 256 };

/* <<<1,32>>>, each thread returns at once (s is never -1). */
__global__ void empty_kernel(float *out, float s) {
  if (s == -1.f) out[threadIdx.x] = s;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* n launches in bursts (n rounded down to whole bursts): host us per launch. */
static double burst_loop(long n) {
  double issued = 0;
  for (long b = 0; b < n / BURST; b++) {
    double t0 = now_s();
    for (int i = 0; i < BURST; i++) empty_kernel<<<1, 32>>>(NULL, 1.f);
    issued += now_s() - t0;
    cudaDeviceSynchronize();
  }
  return issued / (n / BURST * BURST) * 1e6;
}

#endif
