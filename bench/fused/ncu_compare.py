#!/usr/bin/env python3
"""Kernels of one Nsight Compute report side by side: flash's ws kernel and
PyTorch's cuDNN SDPA kernel on the same cells (ws_ncu.py --cudnn, fused.sh
step ncu with NCU_KERNELS naming both).

From the raw page (`ncu -i REP --page raw --csv`): launch shape, time and
clocks, issue and pipe utilization, warp-state stalls per issue, shared
memory, L2 and DRAM traffic. From the source page by SASS (`--page source
--csv --print-source sass`, which ncu gives for cuDNN's kernel too): warp
instructions executed per opcode (MUFU, HGMMA, BAR and SYNCS by their first
modifier), the exps (MUFU.EX2 thread instructions, predicated on) per score
the cell needs, and the warp-stall samples per reason.

  python3 bench/fused/ncu_compare.py ncu_raw.csv ncu_source.csv [--order ncu_order.txt]
--order (ws_ncu.py --order's file: label and cell per call, in launch order)
names the columns and gives the scores each cell needs.
"""
import argparse
import collections
import csv
import io
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_stalls import kernels  # noqa: E402

RAW = [
    r"launch__(grid_size|block_size|registers_per_thread|shared_mem_per_block_dynamic)$",
    r"gpu__time_duration\.sum$",
    r"sm__cycles_(elapsed|active)\.avg$",
    r"sm__cycles_elapsed\.avg\.per_second$",
    r"smsp__inst_executed\.sum$",
    r"smsp__issue_active\.avg\.per_cycle_active$",
    r"sm__warps_active\.avg\.per_cycle_active$",
    r"sm__pipe_tensor_op_hmma_cycles_active\.avg\.pct_of_peak_sustained_(active|elapsed)$",
    r"sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active$",
    r"smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$",
    r"l1tex__data_pipe_lsu_wavefronts_mem_shared(_op_(ld|st))?\.sum$",
    r"l1tex__data_bank_conflicts_pipe_lsu_mem_shared(_op_(ld|st))?\.sum$",
    r"smsp__sass_inst_executed_op_(shared_gmma|shared_ld|shared_st|tma_ld|tma_st|global_ld|global_st)\.sum$",
    r"lts__t_sectors_srcunit_tex_op_(read|write)\.sum$",
    r"lts__t_sectors_srcunit_tex_lookup_(hit|miss)\.sum$",
    r"dram__bytes_(read|write)\.sum$",
]
KEEP_MOD = ("MUFU", "HGMMA", "BAR", "SYNCS", "F2FP", "SHFL", "WARPGROUP")


def num(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def short(name):
    return "cudnn" if "cudnn" in name or "sdpa" in name else "ws" if "flash_fwd_ws" in name else name[:12]


def scores(cell):
    """Scores (query-key products) the cell needs: causal counts the triangle."""
    causal = cell.endswith("c")
    b, h, s, _ = (int(x) for x in cell.rstrip("c").split("x"))
    return b * h * (s * (s + 1) // 2 if causal else s * s)


def raw_table(path, names):
    rows = list(csv.reader(open(path)))
    hdr, units, data = rows[0], rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}
    print("raw page (one column per profiled kernel)")
    print(f"  {'metric':<78}" + "".join(f"{n:>22}" for n in names))
    for pat in RAW:
        for h in hdr:
            if re.search(pat, h):
                vals = [r[ix[h]] if ix[h] < len(r) else "" for r in data]
                unit = units[ix[h]]
                print(f"  {h + (' [' + unit + ']' if unit else ''):<78}" + "".join(f"{v:>22}" for v in vals))


def opkey(sass):
    body = sass.split(None, 1)[1] if sass.startswith("@") else sass
    op = body.split()[0] if body.split() else ""
    parts = op.split(".")
    return ".".join(parts[:2]) if parts[0] in KEEP_MOD else parts[0]


def source_tables(path, names, cells):
    """cells: each kernel's cell (BxHxSxD[c]), in the report's order."""
    per = []
    for block in kernels(path):
        rows = list(csv.reader(io.StringIO("\n".join(block[1:]))))
        hdr, rows = rows[0], rows[1:]
        ix = {h: i for i, h in enumerate(hdr)}
        ops, thr, stalls = collections.Counter(), collections.Counter(), collections.Counter()
        samples = 0
        for r in rows:
            k = opkey(r[ix["Source"]].strip())
            ops[k] += int(num(r[ix["Instructions Executed"]]) or 0)
            thr[k] += int(num(r[ix["Predicated-On Thread Instructions Executed"]]) or 0)
            samples += int(num(r[ix["Warp Stall Sampling (All Samples)"]]) or 0)
            for h in hdr:
                if h.startswith("stall_") and "Not Issued" not in h:
                    stalls[h[6:]] += int(num(r[ix[h]]) or 0)
        per.append((ops, thr, stalls, samples, len(rows)))
    n = len(per)
    print("\nsource page: warp instructions executed per opcode (millions)")
    print(f"  {'opcode':<24}" + "".join(f"{x:>22}" for x in names))
    tot = [sum(p[0].values()) for p in per]
    print(f"  {'all':<24}" + "".join(f"{t / 1e6:22.3f}" for t in tot))
    print(f"  {'SASS lines':<24}" + "".join(f"{p[4]:22d}" for p in per))
    keys = sorted({k for p in per for k in p[0]}, key=lambda k: -max(p[0][k] for p in per))
    for k in keys[:40]:
        print(f"  {k:<24}" + "".join(f"{p[0][k] / 1e6:22.3f}" for p in per))
    if cells:
        print("\nper score the cell needs (scores: B H S(S+1)/2 causal, B H S^2 else)")
        sc = [scores(cells[i]) if i < len(cells) else 0 for i in range(n)]
        print(f"  {'scores (millions)':<24}" + "".join(f"{s / 1e6:22.2f}" for s in sc))
        print(f"  {'exps (MUFU.EX2 threads)':<24}" + "".join(
            f"{p[1]['MUFU.EX2'] / max(s, 1):22.3f}" for p, s in zip(per, sc)))
        print(f"  {'thread insts (all)':<24}" + "".join(
            f"{32 * t / max(s, 1):22.3f}" for t, s in zip(tot, sc)))
        for k in ("FFMA", "FADD", "FMNMX", "FMUL", "F2FP.BF16", "FSEL", "FSETP", "SHFL.BFLY"):
            print(f"  {k + ' (x32 / score)':<24}" + "".join(
                f"{32 * p[0][k] / max(s, 1):22.3f}" for p, s in zip(per, sc)))
    print("\nsource page: warp-stall samples per reason (% of the kernel's samples)")
    print(f"  {'reason':<24}" + "".join(f"{x:>22}" for x in names))
    print(f"  {'samples':<24}" + "".join(f"{p[3]:22d}" for p in per))
    reasons = sorted({k for p in per for k in p[2]}, key=lambda k: -max(p[2][k] / max(p[3], 1) for p in per))
    for k in reasons:
        if any(p[2][k] for p in per):
            print(f"  {k:<24}" + "".join(f"{100 * p[2][k] / max(p[3], 1):22.1f}" for p in per))


def hot_runs(path, names, top):
    """Per kernel, its `top` largest runs of consecutive SASS instructions
    executed the same number of times (straight-line code: a loop body's
    blocks), by instructions executed: the count, the length, the share of
    the kernel's instructions, the stall samples and the opcode mix."""
    for name, block in zip(names, kernels(path)):
        rows = list(csv.reader(io.StringIO("\n".join(block[1:]))))
        hdr, rows = rows[0], rows[1:]
        ix = {h: i for i, h in enumerate(hdr)}
        runs, cur = [], None
        for r in rows:
            n = int(num(r[ix["Instructions Executed"]]) or 0)
            smp = int(num(r[ix["Warp Stall Sampling (All Samples)"]]) or 0)
            if cur and cur[0] == n:
                cur[1].append(opkey(r[ix["Source"]].strip()))
                cur[2] += smp
            else:
                cur = [n, [opkey(r[ix["Source"]].strip())], smp]
                runs.append(cur)
        tot = max(sum(n * len(o) for n, o, _ in runs), 1)
        print(f"\n{name}: hottest straight-line runs (executions x length)")
        for n, o, smp in sorted(runs, key=lambda x: -x[0] * len(x[1]))[:top]:
            mix = " ".join(f"{k} {v}" for k, v in collections.Counter(o).most_common(9))
            print(f"  {n:8d} x {len(o):4d} {100 * n * len(o) / tot:5.1f} %  samples {smp:6d}  {mix}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("source")
    ap.add_argument("--order", default="", help="ws_ncu.py --order's file")
    ap.add_argument("--runs", type=int, default=14, help="hottest straight-line runs per kernel")
    opt = ap.parse_args()
    calls = [ln.split() for ln in open(opt.order)] if opt.order else []
    cells = [c for _, c in calls]
    rows = list(csv.reader(open(opt.raw)))
    kix = rows[0].index("Kernel Name")
    names = [f"{calls[i][0]}:{calls[i][1]}" if i < len(calls) else f"{short(r[kix])}:{i}"
             for i, r in enumerate(rows[2:])]
    raw_table(opt.raw, names)
    source_tables(opt.source, names, cells)
    hot_runs(opt.source, names, opt.runs)


if __name__ == "__main__":
    main()
