#!/usr/bin/env python3
"""Device time per call of flash's ws kernel beside PyTorch's cuDNN and FA2
SDPA backends, in one process on the same tensors: the kernels' own
durations from CUPTI (torch.profiler's Kineto trace, the "kernel" events),
not the CUDA-event span around a call, which also holds the launch's
latency and the first CTA's start.

Per cell and backend, three figures of --reps calls each, medians:
  kernel sync  each call followed by a synchronize (the GPU idle between
               calls); the trace's kernels split per call (the count must
               divide evenly), each call's kernel durations summed
  kernel b2b   the same from calls issued back to back (no synchronize:
               the GPU busy throughout, as in the event timing)
  event        CUDA events around each call, back to back
               (torch_setup.median_us, as ws_vs_torch.py times them)
The two kernel figures show whether what the card does between calls
changes a kernel's time; all three come from one run. --rounds N repeats
all backends, in reverse order every other round, and keeps the median of
the medians. --pauses MS,...: then, per cell, the synchronized kernel figure
again with the host idle that many milliseconds before each call
(time.sleep after the synchronize), and beside each median the profiling
session's first call (as attnprof run's first profiled forward is).

  python3 bench/fused/ws_device_time.py --lib build/lib/libattnprof.so
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_setup import load_attnprof, median_us, parse_cell, raw_runner  # noqa: E402

CELLS = "8x16x1024x64c,16x32x1024x64c"


def kernel_us_per_call(fn, reps, sync, pause_ms=0.0):
    """Median over reps calls of the summed durations (us) of the kernels
    each call ran, from the profiler's trace (sync: a synchronize after
    each call, then pause_ms of host sleep); the kernels' count and names
    per call; and the session's first call (us)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
        for _ in range(reps):
            fn()
            if sync:
                torch.cuda.synchronize()
                if pause_ms > 0:
                    time.sleep(pause_ms / 1e3)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        events = json.load(open(path))["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    if not kernels or len(kernels) % reps:
        raise RuntimeError(f"{len(kernels)} kernels in the trace for {reps} calls")
    per = len(kernels) // reps
    calls = [sum(e["dur"] for e in kernels[i:i + per]) for i in range(0, len(kernels), per)]
    names = sorted({e["name"][:60] for e in kernels[:per]})
    return statistics.median(calls), per, names, calls[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cells", default=CELLS, help="BxHxSxD, c for causal, comma-separated")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pauses", default="", help="MS,...: host idle before each synchronized call")
    opt = ap.parse_args()
    attnprof = load_attnprof(opt.lib)
    engine = attnprof.Engine(flash_kernel="ws")
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; bf16 BHSD; "
          f"{opt.reps} calls x {opt.rounds} rounds; kernel = CUPTI kernel durations summed per call "
          f"(sync: a synchronize after each call; b2b: back to back), event = CUDA events around "
          f"each call; medians; TF and /cudnn from kernel sync")
    print(f"{'cell':<16}{'run':<7}{'sync us':>9}{'b2b us':>9}{'event us':>10}{'TF':>8}"
          f"{'/cudnn':>8}  kernels")
    torch.manual_seed(0)
    for text in opt.cells.split(","):
        b, h, s, d, causal = parse_cell(text)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)

        def torch_fn(backend):
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return call
        call = attnprof.Call(q, k, v, o, causal="top-left" if causal else None, engine=engine)
        runs = [("cudnn", torch_fn(SDPBackend.CUDNN_ATTENTION)),
                ("FA2", torch_fn(SDPBackend.FLASH_ATTENTION)),
                ("ws", raw_runner(attnprof, call, "flash"))]
        ref = runs[0][1]().float()
        o.fill_(float("nan"))
        runs[2][1]()
        torch.cuda.synchronize()
        err = ((o.float() - ref).norm() / ref.norm()).item()
        if not err <= 1e-2:
            print(f"{text:<16}ws     FAIL rel_err {err:.3e} against cudnn: not timed")
            continue
        kern = {n: [] for n, _ in runs}
        b2b = {n: [] for n, _ in runs}
        evt = {n: [] for n, _ in runs}
        info = {}
        for rnd in range(opt.rounds):
            for name, fn in (runs if rnd % 2 == 0 else runs[::-1]):
                us, per, names, _ = kernel_us_per_call(fn, opt.reps, True)
                kern[name].append(us)
                b2b[name].append(kernel_us_per_call(fn, opt.reps, False)[0])
                evt[name].append(median_us(fn, opt.reps))
                info[name] = (per, names)
        base = statistics.median(kern["cudnn"])
        for name, _ in runs:
            ku, bu, eu = (statistics.median(x[name]) for x in (kern, b2b, evt))
            per, names = info[name]
            print(f"{text:<16}{name:<7}{ku:>9.1f}{bu:>9.1f}{eu:>10.1f}{flops / ku / 1e6:>8.1f}"
                  f"{base / ku:>8.2f}  {per}: {', '.join(names)}")
        for ms in (float(x) for x in opt.pauses.split(",") if x):
            row = []
            for name, fn in runs:
                if name != "FA2":
                    us, _, _, first = kernel_us_per_call(fn, opt.reps, True, ms)
                    row.append(f"{name} {us:.1f} (first {first:.1f})")
            print(f"{text:<16}idle {ms:g} ms before each call: kernel us (median) {'  '.join(row)}")


if __name__ == "__main__":
    main()
