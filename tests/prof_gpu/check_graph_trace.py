#!/usr/bin/env python3
"""GPU test (label gpu): CUDA graphs and child processes under `attnprof trace`.

usage: check_graph_trace.py ATTNPROF GRAPH_PROG OUT_DIR [graph|child|torch ...]

- graph: graph_prog replays a captured graph of 3 kernels inside graph_fwd
  and launches them eagerly inside eager_fwd. Each graph kernel must be in
  the trace with its footprint and CUPTI's graph id, carry the correlation id
  of a cudaGraphLaunch, and count per call of graph_fwd as the eager ones do
  per call of eager_fwd; the summary says which came from the graph.
- child: a Python parent (no CUDA of its own) runs graph_prog twice; each
  child process gets its own trace holding its work.
- torch: torch_sdpa_graph.py replays SDPA through torch.cuda.CUDAGraph: the
  kernels per call of sdpa_graph are those of sdpa_eager, all from the graph.
Expected counts come from the program's own output. Exit 77 without a GPU.
"""
import json
import os
import re
import subprocess
import sys

from gpu_check import check, gpu_count, run_modes

ATTNPROF = PROG = OUT = None
HERE = os.path.dirname(os.path.abspath(__file__))


def trace(out, *cmd):
    p = subprocess.run([ATTNPROF, "trace", "--out", out, "--", *cmd], capture_output=True, text=True,
                       timeout=300)
    print(p.stdout[-3000:], p.stderr[-2000:], sep="\n")
    if "SKIP" in p.stdout or p.returncode == 77:
        sys.exit(77)
    check(p.returncode == 0, f"attnprof trace -- {' '.join(cmd)}: exit {p.returncode}")
    return p.stdout


def summary(path, *args):
    p = subprocess.run([ATTNPROF, "summary", path, "--json", *args], capture_output=True, text=True,
                       timeout=300)
    check(p.returncode == 0, f"summary {path} {' '.join(args)}: exit {p.returncode} {p.stderr[-300:]}")
    return json.loads(p.stdout)


def row(doc, name):
    rows = [r for r in doc["ranges"] if r["name"] == name]
    check(len(rows) == 1, f"one row {name}")
    return rows[0]


def check_graph_prog(path, stdout):
    m = re.search(r"graph_prog: calls (\d+); kernels per call (\d+)", stdout)
    check(m is not None, "graph_prog printed its figures")
    calls, per = int(m.group(1)), int(m.group(2))
    doc = summary(path)
    g, e = row(doc, "graph_fwd"), row(doc, "eager_fwd")
    print("graph_fwd", json.dumps(g), "\neager_fwd", json.dumps(e))
    check(g["calls"] == calls and e["calls"] == calls, f"{calls} calls of each range")
    check(g["per_call"]["kernel"] == per, f"graph_fwd: {per} kernels per call")
    check(g["per_call"]["graph"] == per, "graph_fwd: all from the graph")
    check(g["per_call"]["launch_api"] == {"cudaGraphLaunch": per}, "graph_fwd: launched by cudaGraphLaunch")
    check(e["per_call"]["kernel"] == per and e["per_call"]["graph"] == 0, "eager_fwd: same count, none from a graph")
    # CUPTI names kernels by their mangled symbol (_Z11graph_scalePffi)
    kern = {n: k for k in summary(path, "--range", "graph_fwd")["kernels"]
            for n in ("graph_scale", "graph_add") if n in k["name"]}
    check(len(kern) == 2, "both kernels in graph_fwd's kernel table")
    check(kern["graph_scale"]["calls"] == 2 * calls and kern["graph_scale"]["graph_calls"] == 2 * calls,
          "graph_scale: 2 per replay, all in the graph")
    check(kern["graph_scale"]["grid"] == [8, 1, 1] and kern["graph_scale"]["block"] == [128, 1, 1],
          "graph_scale footprint: grid 8, block 128")
    check(kern["graph_add"]["grid"] == [4, 1, 1] and kern["graph_add"]["block"] == [256, 1, 1]
          and kern["graph_add"]["dynamic_shared_memory"] == 1024, "graph_add footprint: grid 4, block 256, 1024 B")
    ev = json.load(open(path))["traceEvents"]
    launches = {e["args"]["correlation"] for e in ev
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "GraphLaunch" in e["name"]}
    in_graph = [e for e in ev if e.get("cat") == "kernel" and "graph id" in e.get("args", {})]
    check(len(in_graph) == calls * per, f"{calls * per} kernels carry a graph id")
    check(all(e["args"]["correlation"] in launches for e in in_graph),
          "each graph kernel carries a cudaGraphLaunch's correlation id")


def mode_graph():
    path = os.path.join(OUT, "graph.json")
    check_graph_prog(path, trace(path, PROG))


def mode_child():
    path = os.path.join(OUT, "child.json")
    parent = "import subprocess, sys\nfor _ in range(2): print(subprocess.run([sys.argv[1]], " \
             "capture_output=True, text=True, check=True).stdout, end='')"
    out = trace(path, sys.executable, "-c", parent, PROG)
    kids = sorted(f for f in os.listdir(OUT) if re.fullmatch(r"child\.\d+\.json", f))
    check(len(kids) == 2, f"two child traces: {kids}")
    for k in kids:
        check_graph_prog(os.path.join(OUT, k), out)


def mode_torch():
    path = os.path.join(OUT, "torch_graph.json")
    trace(path, sys.executable, os.path.join(HERE, "torch_sdpa_graph.py"))
    doc = summary(path)
    g, e = row(doc, "sdpa_graph"), row(doc, "sdpa_eager")
    print("sdpa_graph", json.dumps(g), "\nsdpa_eager", json.dumps(e))
    check(g["calls"] == 5 and e["calls"] == 5, "5 calls of each")
    check(g["per_call"]["kernel"] >= 1 and g["per_call"]["kernel"] == e["per_call"]["kernel"],
          "sdpa_graph: the kernels per call of sdpa_eager")
    check(g["per_call"]["graph"] == g["per_call"]["kernel"], "sdpa_graph: all from the graph")
    check(g["per_call"]["launch_api"].get("cudaGraphLaunch", 0) == g["per_call"]["kernel"],
          "sdpa_graph: launched by cudaGraphLaunch")
    names = lambda r: sorted(k["name"] for k in summary(path, "--range", r)["kernels"])
    check(names("sdpa_graph") == names("sdpa_eager"), "the same kernels in both ranges")


def main():
    global ATTNPROF, PROG, OUT
    ATTNPROF, PROG, OUT = sys.argv[1:4]
    os.makedirs(OUT, exist_ok=True)
    modes = sys.argv[4:] or ["graph", "child"]
    if not gpu_count():
        print("SKIP: no NVIDIA GPU (nvidia-smi -L failed or is missing)")
        return 77
    return run_modes("graph/child", modes, lambda m: globals()["mode_" + m]())


if __name__ == "__main__":
    sys.exit(main())
