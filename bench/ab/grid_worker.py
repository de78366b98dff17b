#!/usr/bin/env python3
"""One process of the A/B grid (bench/ab/grid.py starts it): attnprof's flash
and cudnn backends of one or more builds beside PyTorch's cuDNN SDPA, on the
same tensors, in this process.

Each build is given as LABEL=LIB:PYDIR (its libattnprof.so and the folder
holding its own Python package, python/ of that tree); each package is
imported under its own module name (attnprof_LABEL) with ATTNPROF_LIB set to
its library, so two builds whose ctypes mirrors differ can share a process.
The library each label really loaded is checked in /proc/self/maps.

Cells: D 64/128/256 x S 1k..16k x causal off/on, B*S = 16384, H*D = 2048,
bf16 BHSD (ws_vs_torch.py's grid), then the blog shape 8x16x1024x64 causal.
Per cell: every backend's output is compared with torch's (relative error of
the whole tensor; above 1e-2 it is not timed); then --rounds rounds, each
timing every runner (median of --reps calls, CUDA events around each call,
3 warm-up calls: torch_setup.median_us), in reverse order every other round.
The figure of merit is per round torch_us / backend_us (PyTorch cuDNN's time
over the backend's: above 1 the backend is faster), and its median over the
rounds; the raw times are kept.

  python3 bench/ab/grid_worker.py --build new=build-new/lib/libattnprof.so:python \\
      --json /tmp/ab/grid_new.json
--dry-run makes up times (no torch, no GPU): for the harness's own tests.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ("flash", "cudnn")


def grid_cells():
    """(b, h, s, d, causal) of the 31 cells, in ws_vs_torch.py's order."""
    cells = []
    for d in (64, 128, 256):
        for s in (1024, 2048, 4096, 8192, 16384):
            for causal in (False, True):
                cells.append((16384 // s, 2048 // d, s, d, causal))
    cells.append((8, 16, 1024, 64, True))
    return cells


def cell_name(b, h, s, d, causal):
    return f"{b}x{h}x{s}x{d}{'c' if causal else ''}"


def parse_build(text):
    """LABEL=LIB:PYDIR -> (label, lib, pydir)."""
    label, sep, rest = text.partition("=")
    lib, sep2, pydir = rest.rpartition(":")
    if not sep or not sep2 or not label or not lib or not pydir:
        raise argparse.ArgumentTypeError(f"--build {text!r}: give LABEL=LIB:PYDIR, e.g. "
                                         "new=build-new/lib/libattnprof.so:python")
    if not label.replace("_", "").isalnum():
        raise argparse.ArgumentTypeError(f"--build {text!r}: a label is letters, digits and _")
    return label, lib, pydir


def parse_cells(text):
    """A comma list of cells BxHxSxD (c when causal: 8x16x1024x64c), or ''
    for the grid's 31. Cells off the grid are taken too (the harness's tests
    use small ones)."""
    if not text:
        return grid_cells()
    out = []
    for name in text.split(","):
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)(c?)", name)
        if not m or 0 in [int(x) for x in m.groups()[:4]]:
            raise argparse.ArgumentTypeError(f"--cells: {name!r} is not a cell BxHxSxD with a "
                                             "trailing c when causal (e.g. 8x16x1024x64c)")
        out.append((*(int(x) for x in m.groups()[:4]), m.group(5) == "c"))
    return out


def load_package(label, lib, pydir):
    """The attnprof package under pydir, bound to lib, as module attnprof_LABEL."""
    lib = os.path.realpath(lib)
    init = os.path.join(pydir, "attnprof", "__init__.py")
    if not os.path.exists(lib):
        raise SystemExit(f"grid_worker: {label}: no library at {lib}")
    if not os.path.exists(init):
        raise SystemExit(f"grid_worker: {label}: no attnprof package under {pydir}")
    os.environ["ATTNPROF_LIB"] = lib
    name = f"attnprof_{label}"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[os.path.dirname(init)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    maps = loaded_libs()
    if lib not in maps:
        raise SystemExit(f"grid_worker: {label}: {lib} is not mapped after the import "
                         f"(mapped: {', '.join(sorted(maps)) or 'none'})")
    return mod


def loaded_libs(name="libattnprof"):
    """Real paths of every mapped file whose name holds `name`."""
    try:
        with open("/proc/self/maps") as f:
            return {os.path.realpath(line.split()[-1]) for line in f
                    if name in line and line.split()[-1].startswith("/")}
    except OSError:
        return set()


def runner(ap, call, backend):
    """A no-argument call of one backend on a prepared attnprof Call: the raw
    ctypes entry (lowest overhead, as the earlier benches) where the package
    has it, else the Call itself."""
    if hasattr(call, "raw"):
        fn, handle, code, ref = call.raw(backend)

        def run():
            if fn(handle, code, ref):
                raise RuntimeError(ap.lib.attn_last_error().decode())
    else:
        def run():
            call(backend)
    run.call = call
    return run


def fake_us(label, name, cell, rnd):
    """--dry-run: a made-up, deterministic time per runner, cell and round."""
    b, h, s, d, causal = cell
    flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
    base = flops / 500e12 * 1e6
    key = f"{label}/{name}/{cell_name(*cell)}/{rnd}".encode()
    jitter = int(hashlib.md5(key).hexdigest()[:6], 16) / 0xFFFFFF - 0.5
    speed = {"torch": 1.0, "flash": 1.12, "cudnn": 1.0}[name]
    return base / speed * (1 + 0.01 * jitter)


def measure_dry(builds, cells, opt, save):
    rows = []
    for cell in cells:
        row = {"cell": cell_name(*cell), "runs": {}}
        for label, *_ in builds:
            for be in BACKENDS:
                key = f"{be}:{label}"
                t = [fake_us(label, "torch", cell, r) for r in range(opt.rounds)]
                u = [fake_us(label, be, cell, r) for r in range(opt.rounds)]
                row["runs"][key] = {"status": "ok", "err": 2e-3, "us": u, "torch_us": t,
                                    "ratio": statistics.median(a / b for a, b in zip(t, u))}
        rows.append(row)
        save({"device": "dry-run", "torch": "none", "rows": rows})
    return {"device": "dry-run", "torch": "none", "rows": rows}


def measure(builds, cells, opt, save):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def median_us(fn, reps):
        """bench/torch_setup.py's timing, kept here so that the harness does
        not depend on a file the refactor may move: CUDA events around each
        of reps calls after 3 warm-up calls, all read after one synchronize."""
        for _ in range(3):
            fn()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
        for a, b in ev:
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)

    pkgs = {label: load_package(label, lib, py) for label, lib, py in builds}
    engines = {label: ap.Engine() if hasattr(ap, "Engine") else None for label, ap in pkgs.items()}
    rows = []
    torch.manual_seed(0)
    for cell in cells:
        b, h, s, d, causal = cell
        t0 = time.time()
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        outs = {}

        def torch_run():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        ref = torch_run().float()
        row = {"cell": cell_name(*cell), "runs": {}}
        runs = [("torch", torch_run)]
        for label, ap in pkgs.items():
            for be in BACKENDS:
                key = f"{be}:{label}"
                o = outs[key] = torch.empty_like(q)
                o.fill_(float("nan"))
                try:
                    call = ap.Call(q, k, v, o, causal="top-left" if causal else None,
                                   engine=engines[label])
                    fn = runner(ap, call, be)
                    fn()
                    torch.cuda.synchronize()
                    err = ((o.float() - ref).norm() / ref.norm()).item()
                except (RuntimeError, ValueError, TypeError) as e:
                    row["runs"][key] = {"status": f"refused: {e}"}
                    continue
                if not err <= 1e-2:
                    row["runs"][key] = {"status": f"FAIL rel_err {err:.3e}", "err": err}
                    continue
                row["runs"][key] = {"status": "ok", "err": err, "us": []}
                runs.append((key, fn))
        times = {name: [] for name, _ in runs}
        for rnd in range(opt.rounds):
            for name, fn in (runs if rnd % 2 == 0 else runs[::-1]):
                times[name].append(median_us(fn, opt.reps))
        for name, _ in runs[1:]:
            r = row["runs"][name]
            r["us"], r["torch_us"] = times[name], times["torch"]
            r["ratio"] = statistics.median(a / x for a, x in zip(times["torch"], times[name]))
        row["torch_us"] = times["torch"]
        row["wall_s"] = round(time.time() - t0, 2)
        rows.append(row)
        save({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows})
        brief = " ".join(f"{n}={x['ratio']:.3f}" if "ratio" in x else f"{n}={x['status'][:40]}"
                         for n, x in row["runs"].items())
        print(f"{row['cell']:<18} torch {statistics.median(times['torch']):9.1f} us  {brief}",
              flush=True)
        del q, k, v, outs, ref
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows,
            "libs": sorted(loaded_libs()), "cudnn_libs": sorted(loaded_libs("libcudnn_graph"))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", type=parse_build, required=True,
                    help="LABEL=LIB:PYDIR (repeatable: several builds in this process)")
    ap.add_argument("--json", required=True, help="where the results go")
    ap.add_argument("--reps", type=int, default=20, help="calls per median (default 20)")
    ap.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    ap.add_argument("--cells", type=parse_cells, default=grid_cells(),
                    help="comma list of cells (default: the 31)")
    ap.add_argument("--dry-run", action="store_true", help="made-up times, no torch or GPU")
    opt = ap.parse_args(argv)
    if opt.reps < 1 or opt.rounds < 1:
        ap.error("--reps and --rounds take a positive count")
    return finish(opt, measure_dry if opt.dry_run else measure)


def finish(opt, fn):
    """Runs fn(builds, cells, opt, save) and writes its JSON to opt.json:
    after each cell (a killed run keeps its finished cells) and at the end."""
    labels = [b[0] for b in opt.build]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"--build labels repeat: {', '.join(labels)}")
    t0 = time.time()

    def save(res, done=False):
        res = dict(res, builds=[{"label": l, "lib": os.path.realpath(b), "py": p}
                                for l, b, p in opt.build],
                   reps=opt.reps, rounds=opt.rounds, wall_s=round(time.time() - t0, 1),
                   complete=done)
        with open(opt.json + ".tmp", "w") as f:
            json.dump(res, f, indent=1)
        os.replace(opt.json + ".tmp", opt.json)
    save(fn(opt.build, opt.cells, opt, save), done=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
