#!/usr/bin/env python3
"""Holistic Trace Analysis (PyPI HolisticTraceAnalysis) reads our traces.

Three traces: one written by attnprof's own writer from synthetic GPU events
(write_gpu_steps), the same written gzip-compressed (.json.gz, as
torch.profiler writes it), and one torch.profiler fixture. HTA parses each and its
kernel breakdown (calls and summed time per kernel name) must agree with
`attnprof summary --json` of the same file.

What HTA keeps: with two or more ProfilerStep ranges it keeps the GPU work
launched (by correlation id) from CPU events up to the end of the last step
(include_last_profiler_step=True), and it puts times on whole µs. So ours is
the kernel table of each ProfilerStep#N range summed, and times agree to
within 2 µs per call. Exit 77 (skipped) only when HTA is not installed.

usage: test_hta.py ATTNPROF WRITE_GPU_STEPS FIXTURE_DIR WORK_DIR
"""
import json
import logging
import os
import shutil
import subprocess
import sys

try:
    from hta.trace_analysis import TraceAnalysis
except ImportError as e:  # the one reason to skip
    print(f"SKIP: Holistic Trace Analysis is not importable ({e}); "
          "scripts/install-deps.sh installs HolisticTraceAnalysis")
    sys.exit(77)


def ours(attnprof, path):
    """{kernel name: [calls, device us]} over the ProfilerStep ranges of path."""
    doc = json.loads(subprocess.run([attnprof, "summary", path, "--json", "--per-step"], check=True,
                                    capture_output=True, text=True).stdout)
    steps = [r["name"] for r in doc["ranges"] if r["name"].startswith("ProfilerStep")]
    assert len(steps) >= 2, f"{path}: {len(steps)} ProfilerStep ranges"
    out = {}
    for s in steps:
        d = json.loads(subprocess.run([attnprof, "summary", path, "--json", "--range", s],
                                      check=True, capture_output=True, text=True).stdout)
        for k in d["kernels"]:
            c = out.setdefault(k["name"], [0, 0.0])
            c[0] += k["calls"]
            c[1] += k["device_us_total"]
    return out


def theirs(trace_dir):
    """{kernel name: [calls, summed us]} from HTA's parsed trace and kernel breakdown."""
    a = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    df = a.t.get_trace(0)
    names = a.t.symbol_table.sym_table
    gpu = df[df["stream"].ne(-1)]
    calls = {}
    for idx in gpu["name"]:
        calls[names[idx]] = calls.get(names[idx], 0) + 1
    _, per_kernel = a.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**6,
                                               include_memory_kernels=False)
    out = {}
    for _, row in per_kernel.iterrows():
        out[row["name"]] = [calls[row["name"]], float(row["sum (us)"])]
    return out


def compare(label, mine, hta):
    print(f"{label}: {len(mine)} kernels by attnprof, {len(hta)} by HTA")
    for name in sorted(set(mine) | set(hta)):
        m, h = mine.get(name), hta.get(name)
        print(f"  {name[:70]:70} attnprof {m}  HTA {h}")
        assert m and h, f"{label}: {name[:80]} only on one side (attnprof {m}, HTA {h})"
        assert m[0] == h[0], f"{label}: {name[:80]}: calls attnprof {m[0]} vs HTA {h[0]}"
        # HTA puts each event on whole µs (start rounded up, end down): each
        # duration shrinks by less than 2 µs, never grows.
        assert m[1] - 2.0 * m[0] < h[1] <= m[1] + 1e-6, \
            f"{label}: {name[:80]}: us attnprof {m[1]:.3f} vs HTA {h[1]:.3f} over {m[0]} calls"
    assert mine, f"{label}: no kernels compared"


def main():
    attnprof, writer, fixtures, work = sys.argv[1:5]
    logging.disable(logging.WARNING)  # HTA warns that the traces carry no rank: rank 0 it is
    shutil.rmtree(work, ignore_errors=True)
    ours_dir, fixture_dir = os.path.join(work, "attnprof"), os.path.join(work, "fixture")
    os.makedirs(ours_dir)
    os.makedirs(fixture_dir)
    mine = os.path.join(ours_dir, "trace.json")
    subprocess.run([writer, mine], check=True)
    compare("attnprof-written trace", ours(attnprof, mine), theirs(ours_dir))
    gz_dir = os.path.join(work, "gzip")
    os.makedirs(gz_dir)
    gz = os.path.join(gz_dir, "trace.json.gz")
    subprocess.run([writer, gz], check=True)
    compare("attnprof-written .json.gz", ours(attnprof, gz), theirs(gz_dir))
    fx = os.path.join(fixture_dir, "trace_naive.json")
    shutil.copy(os.path.join(fixtures, "trace_naive.json"), fx)
    compare("torch.profiler fixture", ours(attnprof, fx), theirs(fixture_dir))
    print("HTA agrees with attnprof on all three traces")


if __name__ == "__main__":
    main()
