"""The tiny-kernel PyTorch loop that trace_overhead.py times (one process,
plain, under torch.profiler or traced from outside).

x.add_(1) on one element is one elementwise kernel through cudaLaunchKernel;
launches go in bursts of BURST with a synchronize between bursts outside the
timer, so the figure is the host's cost to issue a launch, not the GPU's pace.
"""
import time

import torch

BURST = 256


def burst_loop(x, n):
    """n launches (rounded down to whole bursts): host us per launch."""
    issued = 0.0
    for _ in range(n // BURST):
        t0 = time.perf_counter()
        for _ in range(BURST):
            x.add_(1.0)
        issued += time.perf_counter() - t0
        torch.cuda.synchronize()
    return issued / (n // BURST * BURST) * 1e6


def warm_tensor():
    """The one-element tensor, after a few untimed bursts (CUDA's start)."""
    x = torch.zeros(1, device="cuda")
    burst_loop(x, 4 * BURST)
    return x
