#!/usr/bin/env python3
"""The A/B grid: the 31 cells and the blog shape, flash and cudnn of the old
build and of the new one, each against PyTorch's cuDNN SDPA on the same
tensors in the same process, side by side with a control (the new build run
again: the noise). --suite serving does the same for the serving table
(serving_worker.py: decode, B 1/16 x KV 1k/8k/32k, paged and contiguous,
graph-timed against torch's cuDNN SDPA on the contiguous cache).

--mode separate (default): one process per run of --runs (default
new,old,new2), each importing its own tree's Python package (their ctypes
mirrors differ); the figure is the backend's speed against torch measured in
that process, so what differs between processes (clocks, heat) divides out.
--mode together: one process imports both packages (each under its own module
name) and times every runner in each round: old and new then share their
rounds too.

Columns, per backend: old and new (torch cuDNN time / backend time: above 1
is faster than PyTorch's cuDNN), new/old (new's speed over old's), ctl
(new2 over new: the same build twice), and a flag where |new/old - 1| > 2%
and > |ctl - 1|. Results: grid_<label>.json under --work; tables on stdout
and in $OUT/ab-summary.txt (abtable.summary_path).

  python3 bench/ab/grid.py                       # on the device, repo root
  python3 bench/ab/grid.py --dry-run             # anywhere: made-up times
  python3 bench/ab/grid.py --from /tmp/ab        # the tables again from the JSON
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import abtable  # noqa: E402
import grid_worker  # noqa: E402
import serving_worker  # noqa: E402

# Per suite: the worker, its cells in table order, reps, rounds, seconds per process.
SUITES = {
    "grid": dict(worker="grid_worker.py", module=grid_worker, reps=20, rounds=6, timeout=170,
                 title="flash and cudnn vs PyTorch cuDNN SDPA (torch time / backend time, "
                       "same process), bf16 BHSD"),
    "serving": dict(worker="serving_worker.py", module=serving_worker, reps=30, rounds=4,
                    timeout=120,
                    title="decode heads 32/8 D128 bf16, 1 new token; flash and cudnn vs PyTorch "
                          "cuDNN SDPA on the contiguous cache (torch time / backend time, same "
                          "process, CUDA-graph replays)"),
}


def suite_cells(suite):
    m = SUITES[suite]["module"]
    cells = m.grid_cells() if suite == "grid" else m.serving_cells()
    return [m.cell_name(*c) for c in cells]

ROOT = os.path.dirname(os.path.dirname(HERE))


def parse_runs(text):
    runs = [r for r in text.split(",") if r]
    bad = [r for r in runs if r not in ("old", "new", "old2", "new2")]
    if bad or not runs:
        raise argparse.ArgumentTypeError(f"--runs {text!r}: a comma list of old, new, new2, old2")
    if len(set(runs)) != len(runs):
        raise argparse.ArgumentTypeError(f"--runs {text!r}: a run repeats")
    return runs


def options(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old-lib", default=os.path.join(ROOT, "build-old/lib/libattnprof.so"))
    ap.add_argument("--old-py", default=os.path.join(ROOT, ".old/python"))
    ap.add_argument("--new-lib", default=os.path.join(ROOT, "build-new/lib/libattnprof.so"))
    ap.add_argument("--new-py", default=os.path.join(ROOT, "python"))
    ap.add_argument("--runs", type=parse_runs, default=["new", "old", "new2"],
                    help="processes in order (default new,old,new2: the control brackets old)")
    ap.add_argument("--suite", choices=sorted(SUITES), default="grid")
    ap.add_argument("--mode", choices=("separate", "together"), default="separate")
    ap.add_argument("--reps", type=int, help="calls (grid, default 20) or graph replays "
                                            "(serving, default 30) per median")
    ap.add_argument("--rounds", type=int, help="alternating rounds (grid 6, serving 4)")
    ap.add_argument("--cells", default="", help="comma list of cells (default: all)")
    ap.add_argument("--timeout", type=float, help="seconds per process (grid 170, serving 120)")
    ap.add_argument("--work", default=os.environ.get("AB_WORK", "/tmp/ab"))
    ap.add_argument("--cudnn", choices=("torch", "system"), default="torch",
                    help="the cuDNN attnprof's cudnn backend opens: PyTorch's own (default, "
                         "the library of the yardstick) or the one its loader finds")
    ap.add_argument("--dry-run", action="store_true", help="made-up times: no torch, no GPU")
    ap.add_argument("--from", dest="from_dir", help="only print the tables of the JSON there")
    opt = ap.parse_args(argv)
    suite = SUITES[opt.suite]
    for k in ("reps", "rounds", "timeout"):
        if getattr(opt, k) is None:
            setattr(opt, k, suite[k])
    try:
        suite["module"].parse_cells(opt.cells)
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if opt.reps < 1 or opt.rounds < 1 or opt.timeout <= 0:
        ap.error("--reps, --rounds and --timeout take positive numbers")
    return opt


def build_spec(opt, run):
    base = run.rstrip("2")
    lib = opt.old_lib if base == "old" else opt.new_lib
    py = opt.old_py if base == "old" else opt.new_py
    return run, lib, py


def worker_cmd(opt, specs, out):
    cmd = [sys.executable, os.path.join(HERE, SUITES[opt.suite]["worker"]), "--json", out,
           "--reps", str(opt.reps), "--rounds", str(opt.rounds)]
    if opt.cells:
        cmd += ["--cells", opt.cells]
    if opt.dry_run:
        cmd.append("--dry-run")
    for label, lib, py in specs:
        cmd += ["--build", f"{label}={lib}:{py}"]
    return cmd


def torch_cudnn(env):
    """Points attnprof's cuDNN loader at PyTorch's own cuDNN (ATTNPROF_CUDNN_LIB,
    and the wheel's library folders first on the loader path, as
    scripts/device.d/cudnn.sh did), so that both sides of each ratio run one
    cuDNN. Returns the library, or None (then the loader's own choice)."""
    if env.get("ATTNPROF_CUDNN_LIB"):
        return env["ATTNPROF_CUDNN_LIB"]
    try:
        import nvidia
        root = list(nvidia.__path__)[0]
    except (ImportError, IndexError, AttributeError):
        return None
    lib = os.path.join(root, "cudnn", "lib", "libcudnn_graph.so.9")
    if not os.path.exists(lib):
        return None
    dirs = [os.path.join(root, d, "lib") for d in sorted(os.listdir(root))
            if os.path.isdir(os.path.join(root, d, "lib"))]
    env["LD_LIBRARY_PATH"] = ":".join(dirs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    env["ATTNPROF_CUDNN_LIB"] = lib
    return lib


def run_worker(opt, specs, out):
    """Starts one worker; its per-cell lines go to a log beside the JSON.
    Returns a one-line status."""
    missing = [f"{lab}: no {lib}" for lab, lib, _ in specs if not os.path.exists(lib)]
    if missing and not opt.dry_run:
        return "not run: " + "; ".join(missing)
    log = out[:-5] + ".log"
    t0 = time.time()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("ATTNPROF_LIB", None)
    if opt.cudnn == "torch":
        torch_cudnn(env)
    try:
        with open(log, "w") as f:
            rc = subprocess.run(worker_cmd(opt, specs, out), stdout=f, stderr=subprocess.STDOUT,
                                timeout=opt.timeout, env=env).returncode
    except subprocess.TimeoutExpired:
        return f"TIMEOUT after {opt.timeout:.0f} s (cells done: see {log})"
    if rc != 0:
        with open(log) as f:
            tail = [line.rstrip() for line in f][-3:]
        return f"FAILED rc {rc}: " + " | ".join(tail)
    return f"ok in {time.time() - t0:.0f} s"


def collect(results, suite="grid"):
    """Worker JSONs -> rows for abtable.side_by_side, and the runs that were
    not timed (refused, FAIL) as (who, where, why)."""
    cells = suite_cells(suite)
    by = {}
    problems = []
    for res in results:
        for row in res.get("rows", []):
            for key, r in row["runs"].items():
                be, label = key.split(":", 1)
                by.setdefault(row["cell"], {})[(be, label)] = r.get("ratio", float("nan"))
                if r.get("status") != "ok":
                    problems.append((key, row["cell"], r.get("status")))
                elif r.get("timing") == "events":
                    problems.append((key, row["cell"], "timed per call (no CUDA graph), torch "
                                                       "the same way: host time included"))
    rows = []
    for cell in cells + sorted(set(by) - set(cells)):
        if cell not in by:
            continue
        got = by[cell]
        nan = float("nan")
        vals = {be: (got.get((be, "old"), nan), got.get((be, "new"), nan), got.get((be, "new2"), nan))
                for be in grid_worker.BACKENDS}
        rows.append((cell, vals))
    return rows, problems


def report(results, statuses, opt):
    rows, problems = collect(results, opt.suite)
    dev = sorted({r.get("device", "?") for r in results})
    head = (f"== {opt.suite}: {SUITES[opt.suite]['title']}; median over {opt.rounds} "
            f"alternating rounds of medians of {opt.reps}; mode {opt.mode}; "
            f"device {', '.join(dev) or '?'}")
    lines, flagged = abtable.side_by_side(rows, list(grid_worker.BACKENDS), head)
    cud = sorted({c for r in results for c in r.get("cudnn_libs", [])})
    lines = [f"run {s}" for s in statuses] + lines
    if cud:
        lines.append(f"{opt.suite}: cuDNN mapped: {', '.join(cud)}" +
                     (" (SEVERAL: the backends may not share torch's)" if len(cud) > 1 else ""))
    lines += abtable.grouped_notes(f"{opt.suite} note", problems)
    lines.append(f"{opt.suite} flagged (|new/old-1| > 2% and > control): " +
                 (", ".join(f"{c} {g} {no:.3f} ({f})" for c, g, no, _, f in flagged) or "none"))
    abtable.emit(lines)
    return flagged


def main(argv=None):
    opt = options(argv)
    os.makedirs(opt.work, exist_ok=True)
    results, statuses = [], []
    jobs = ([[build_spec(opt, r)] for r in opt.runs] if opt.mode == "separate"
            else [[build_spec(opt, r) for r in opt.runs]])
    if opt.from_dir:
        for specs in jobs:
            path = os.path.join(opt.from_dir, f"{opt.suite}_{'_'.join(s[0] for s in specs)}.json")
            if os.path.exists(path):
                with open(path) as f:
                    results.append(json.load(f))
                statuses.append(f"{os.path.basename(path)}: read"
                                + ("" if results[-1].get("complete") else " (incomplete)"))
        if not results:
            print(f"grid.py: no JSON of runs {','.join(opt.runs)} (mode {opt.mode}) in {opt.from_dir}")
            return 2
        opt.rounds, opt.reps = results[0].get("rounds", opt.rounds), results[0].get("reps", opt.reps)
        report(results, statuses, opt)
        return 0
    for specs in jobs:
        name = "_".join(s[0] for s in specs)
        out = os.path.join(opt.work, f"{opt.suite}_{name}.json")
        if os.path.exists(out):
            os.remove(out)
        st = run_worker(opt, specs, out)
        statuses.append(f"{name}: {st}")
        print(f"{opt.suite}: {name}: {st}", flush=True)
        if os.path.exists(out):
            with open(out) as f:
                results.append(json.load(f))
    flagged = report(results, statuses, opt)
    ok = all(": ok" in s for s in statuses)
    return 0 if ok and not any(f == "SLOWER" for *_, f in flagged) else 1


if __name__ == "__main__":
    sys.exit(main())
