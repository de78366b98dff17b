"""Host time per launch of a tiny-kernel PyTorch loop, plain or under
torch.profiler, for bench/trace_overhead.sh (which also runs it under
`attnprof trace`: the same program, traced from outside).

usage: trace_overhead.py MODE N    MODE: plain | torch-cuda | torch-cpu-cuda

The loop issues x.add_(1) on one element (one elementwise kernel through
cudaLaunchKernel) in bursts of 256, synchronizing between bursts outside the
timer, so the figure is the host's cost to issue a launch, not the GPU's
pace. Five repetitions (each its own profiler session in the torch modes);
prints the median and the spread.
"""
import statistics
import sys
import time

import torch

BURST = 256


def loop(x, n):
    issued = 0.0
    for _ in range(n // BURST):
        t0 = time.perf_counter()
        for _ in range(BURST):
            x.add_(1.0)
        issued += time.perf_counter() - t0
        torch.cuda.synchronize()
    return issued / (n // BURST * BURST) * 1e6


def measure(mode, x, n):
    if mode == "plain":
        return loop(x, n)
    acts = [torch.profiler.ProfilerActivity.CUDA]
    if mode == "torch-cpu-cuda":
        acts.append(torch.profiler.ProfilerActivity.CPU)
    with torch.profiler.profile(activities=acts, acc_events=True) as prof:
        us = loop(x, n)
    gpu = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    if gpu < n:
        print(f"# torch.profiler saw only {gpu} of {n} GPU events", file=sys.stderr)
    return us


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    x = torch.zeros(1, device="cuda")
    loop(x, 4 * BURST)  # warm-up
    runs = [measure(mode, x, n) for _ in range(5)]
    print(f"{mode} launches {n} host_us_per_launch {statistics.median(runs):.3f} "
          f"min {min(runs):.3f} max {max(runs):.3f}")


if __name__ == "__main__":
    main()
