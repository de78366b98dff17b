"""Where attnprof trace's cost per launch goes, on the PyTorch loop of
bench/trace_overhead.py, measured inside one traced process so that the
5-9 us this host moves between processes does not drown it.

usage: ATTNPROF_BENCH=1 attnprof trace --stream-only --out T.json -- \
           python3 trace_cost.py [ROUNDS] [N] [all|split|sync|nested]

The injection library exports attnprof_bench_set(mask) (with ATTNPROF_BENCH=1
only): it flushes, switches every CUPTI kind and call record off, then on the
parts in mask. Each round runs every variant once, in an order rotated by
round, N launches each; the table gives per variant the median host us per
launch, the median over rounds of (variant - none) measured in the same
round, and the records CUPTI delivered per launch (the check that the
variant records what it says). Every round's figures are printed too.
"""
import ctypes
import os
import statistics
import sys

import torch

from launch_loop import burst_loop, warm_tensor

# attnprof_bench_set's bits (src/prof/collect/collector_cupti.h)
K, G, R, D, S, C, W = 1, 2, 4, 8, 16, 32, 64
MEMCPY, MEMSET, SYNC, MARKER, SYNC_CB, C_RT = 128, 256, 512, 1024, 2048, 4096
VARIANTS = [
    ("none (subscribed only)", 0),
    ("kernel", K),
    ("gpu kinds", K | G),
    ("gpu + RUNTIME kind", K | G | R),
    ("gpu + RUNTIME+DRIVER kinds", K | G | R | D),
    ("gpu + select ids", K | G | S),
    ("gpu + callback ids", K | G | C),
    ("kinds, no convert/write", K | G | R | D | W),
    ("callback, no convert/write", K | G | C | W),
]
SPLIT = [
    ("none (subscribed only)", 0),
    ("kernel, no convert/write", K | W),
    ("kernel+MEMCPY, no c/w", K | MEMCPY | W),
    ("kernel+MEMSET, no c/w", K | MEMSET | W),
    ("kernel+SYNC, no c/w", K | SYNC | W),
    ("kernel+MARKER, no c/w", K | MARKER | W),
    ("gpu kinds, no c/w", K | G | W),
]
# The sync records by CUPTI's kind or from the sync calls' callbacks
# (ATTNPROF_CUPTI_SYNC=callback), both beside the launch callbacks.
SYNCS = [
    ("none (subscribed only)", 0),
    ("kernel+callback ids, no c/w", K | C | W),
    ("k+callback+SYNC kind, no c/w", K | C | SYNC | W),
    ("k+callback+sync cb, no c/w", K | C | SYNC_CB | W),
]
# The driver callbacks CUPTI makes inside every runtime launch (2 of the 4
# per launch, dropped by us): the callback ids of both domains, of the runtime
# alone, and the runtime's with the DRIVER kind (filtered to the same ids)
# for the driver's calls, which records no driver call inside a runtime one.
NESTED = [
    ("none (subscribed only)", 0),
    ("kernel+callback ids, no c/w", K | C | W),
    ("k+callback rt ids, no c/w", K | C_RT | W),
    ("k+cb rt+DRIVER kind, no c/w", K | C_RT | D | W),
]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5120
    which = sys.argv[3] if len(sys.argv) > 3 else "all"
    sets = {"all": VARIANTS, "split": SPLIT, "sync": SYNCS, "nested": NESTED}
    if which not in sets:
        sys.exit("usage: trace_cost.py [ROUNDS] [N] [all|split|sync|nested]")
    variants = sets[which]
    x = warm_tensor()
    lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
    bench_set = lib.attnprof_bench_set
    bench_set.restype, bench_set.argtypes = ctypes.c_longlong, [ctypes.c_uint]
    if bench_set(0) < 0:
        sys.exit("trace_cost.py: run under attnprof trace with ATTNPROF_BENCH=1")
    us = {name: [] for name, _ in variants}
    recs = {name: [] for name, _ in variants}
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        row = {}
        for name, mask in order:
            torch.cuda.synchronize()
            c0 = bench_set(mask)
            row[name] = burst_loop(x, n)
            torch.cuda.synchronize()
            recs[name].append((bench_set(0) - c0) / n)
            us[name].append(row[name])
        print(f"round {r + 1:2d} " + " ".join(f"{row[nm]:.3f}" for nm, _ in variants), flush=True)
    print(f"# PyTorch loop, {rounds} rounds x {n} launches per variant (columns above in this order)")
    print(f"{'variant':30s} {'us/launch':>9s} {'added':>7s} {'[min':>7s} {'max]':>7s} {'records/launch':>15s}")
    base = us[variants[0][0]]
    for name, _ in variants:
        diffs = [a - b for a, b in zip(us[name], base)]
        print(f"{name:30s} {statistics.median(us[name]):9.3f} {statistics.median(diffs):+7.3f} "
              f"{min(diffs):+7.3f} {max(diffs):+7.3f} {statistics.median(recs[name]):15.2f}")


if __name__ == "__main__":
    main()
