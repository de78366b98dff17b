/* The tiny-kernel loop for bench/trace_overhead.sh: N launches of an empty
 * one-block kernel. Knows nothing of attnprof: it is traced from outside
 * (attnprof trace) or not at all. Two figures:
 *   host_us_per_launch  the cost to issue one launch: bursts of 256 timed,
 *                       with a synchronize between bursts outside the timer,
 *                       so a full launch queue never holds the host back
 *   sustained_us        the whole loop of N back to back until the GPU is
 *                       done (the GPU's pace once the queue is full)
 *   usage: trace_overhead_prog N */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BURST = 256 };

__global__ void empty_kernel(float *out, float s) {
  if (s == -1.f) out[threadIdx.x] = s;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  if (n < BURST) return fprintf(stderr, "usage: trace_overhead_prog N (N >= %d)\n", BURST), 2;
  for (int i = 0; i < 1000; i++) empty_kernel<<<1, 32>>>(NULL, 1.f); /* warm-up, module load */
  if (cudaDeviceSynchronize() != cudaSuccess) return fprintf(stderr, "no usable GPU\n"), 1;
  double issued = 0;
  long bursts = n / 2 / BURST; /* half the launches in bursts, half back to back */
  for (long b = 0; b < bursts; b++) {
    double t0 = now_s();
    for (int i = 0; i < BURST; i++) empty_kernel<<<1, 32>>>(NULL, 1.f);
    issued += now_s() - t0;
    cudaDeviceSynchronize();
  }
  long rest = n - bursts * BURST;
  double t0 = now_s();
  for (long i = 0; i < rest; i++) empty_kernel<<<1, 32>>>(NULL, 1.f);
  cudaError_t e = cudaDeviceSynchronize();
  double t1 = now_s();
  if (e != cudaSuccess) return fprintf(stderr, "%s\n", cudaGetErrorString(e)), 1;
  printf("launches %ld host_us_per_launch %.3f sustained_us %.3f\n", n,
         issued / (bursts * BURST) * 1e6, (t1 - t0) / rest * 1e6);
  return 0;
}
