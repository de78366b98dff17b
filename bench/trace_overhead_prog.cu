/* The tiny-kernel loop for bench/trace_overhead.sh: N launches of an empty
 * one-block kernel. Knows nothing of attnprof: it is traced from outside
 * (attnprof trace) or not at all. Two figures:
 *   host_us_per_launch  the cost to issue one launch (launch_loop.cuh's
 *                       bursts, half the launches)
 *   sustained_us        the whole loop of N back to back until the GPU is
 *                       done (the GPU's pace once the queue is full)
 *   usage: trace_overhead_prog N */
#include <stdio.h>
#include <stdlib.h>

#include "launch_loop.cuh"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 100000;
  if (n < BURST) return fprintf(stderr, "usage: trace_overhead_prog N (N >= %d)\n", BURST), 2;
  for (int i = 0; i < 1000; i++) empty_kernel<<<1, 32>>>(NULL, 1.f); /* warm-up, module load */
  if (cudaDeviceSynchronize() != cudaSuccess) return fprintf(stderr, "no usable GPU\n"), 1;
  long bursts = n / 2 / BURST; /* half the launches in bursts, half back to back */
  double host_us = burst_loop(bursts * BURST);
  long rest = n - bursts * BURST;
  double t0 = now_s();
  for (long i = 0; i < rest; i++) empty_kernel<<<1, 32>>>(NULL, 1.f);
  cudaError_t e = cudaDeviceSynchronize();
  double t1 = now_s();
  if (e != cudaSuccess) return fprintf(stderr, "%s\n", cudaGetErrorString(e)), 1;
  printf("launches %ld host_us_per_launch %.3f sustained_us %.3f\n", n, host_us,
         (t1 - t0) / rest * 1e6);
  return 0;
}
