"""Host time per launch of launch_loop.py's tiny-kernel PyTorch loop, plain or
under torch.profiler, for bench/trace_overhead.sh and trace_cost_rounds.sh
(which also run it under `attnprof trace`: the same program, traced from
outside).

usage: trace_overhead.py MODE N    MODE: plain | torch-cuda | torch-cpu-cuda

Five repetitions of N launches, in the torch modes all inside one profiler
session (as attnprof traces the whole process); prints the median and the
spread. The torch modes check that torch.profiler saw every kernel.
"""
import statistics
import sys

import torch

from launch_loop import burst_loop, warm_tensor

REPS = 5


def gpu_events(prof):
    """Kernels and other GPU activities torch.profiler recorded."""
    try:  # the raw Kineto events: no FunctionEvent tree to build
        events = prof.profiler.kineto_results.events()
        return sum(1 for e in events if e.device_type() == torch.autograd.DeviceType.CUDA)
    except Exception:  # another torch's layout: the slower public way
        return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def measure(mode, x, n):
    if mode == "plain":
        return [burst_loop(x, n) for _ in range(REPS)]
    acts = [torch.profiler.ProfilerActivity.CUDA]
    if mode == "torch-cpu-cuda":
        acts.append(torch.profiler.ProfilerActivity.CPU)
    with torch.profiler.profile(activities=acts) as prof:
        runs = [burst_loop(x, n) for _ in range(REPS)]
    gpu = gpu_events(prof)
    if gpu < REPS * n:
        print(f"# torch.profiler saw only {gpu} of {REPS * n} GPU events", file=sys.stderr)
    return runs


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("plain", "torch-cuda", "torch-cpu-cuda"):
        sys.exit("usage: trace_overhead.py plain|torch-cuda|torch-cpu-cuda N")
    mode, n = sys.argv[1], int(sys.argv[2])
    runs = measure(mode, warm_tensor(), n)
    print(f"{mode} launches {n} host_us_per_launch {statistics.median(runs):.3f} "
          f"min {min(runs):.3f} max {max(runs):.3f}")


if __name__ == "__main__":
    main()
