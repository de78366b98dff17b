#!/usr/bin/env python3
"""flash and cudnn rows of several `attnprof compare --serving` outputs side by side:
us and %copy per cell (B, heads, KV, page), one column group per file, in the order given.

  python3 bench/serving/grid_cmp.py before/grid.txt after/grid.txt"""
import sys, re
def load(p):
    d = {}
    for line in open(p):
        m = re.match(r"\s*(\d+)\s+(\d+/\d+)\s+(\d+)\s+(\d+)\s+(flash|cudnn)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m:
            d[(int(m[1]), m[2], int(m[3]), int(m[4]), m[5])] = (float(m[6]), float(m[8]))
    return d
files = sys.argv[1:]
ds = [load(f) for f in files]
keys = sorted({k[:4] for k in ds[0]})
print("   B heads     KV page | " + " | ".join(f"flash us %copy  cudnn us %copy ({i})" for i in range(len(files))))
for k in keys:
    row = []
    for d in ds:
        f = d.get(k + ("flash",)); c = d.get(k + ("cudnn",))
        row.append(f"{f[0]:8.1f} {f[1]:5.1f}  {c[0]:8.1f} {c[1]:5.1f}" if f and c else "   -")
    print(f"{k[0]:4d} {k[1]:>5s} {k[2]:6d} {k[3]:4d} | " + " | ".join(row))
