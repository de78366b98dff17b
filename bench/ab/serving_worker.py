#!/usr/bin/env python3
"""One process of the A/B serving table (bench/ab/grid.py --suite serving
starts it): decode through attnprof's flash and cudnn backends of one or more
builds beside PyTorch's cuDNN SDPA on the same cache, in this process.

Cells: B 1 and 16 x KV 1k, 8k, 32k; one new token per sequence, heads 32/8,
D128, bf16, no mask; K/V either contiguous (attn_seqs with kv_lens and no
block table: [B, KV, Hkv, D]) or paged (pages of 16 in a pool, a seeded
shuffled block table), both holding the same keys; the tables are passed
trusted (no host copy per call), as serving_vs_torch.py did. The yardstick is
torch's SDPA (CUDNN_ATTENTION, enable_gqa) on the contiguous cache, the same
for both layouts of a cell: the figure is torch_us / backend_us per round,
median over --rounds alternating rounds.
Timing (device time, both sides alike): GRAPH_N calls captured into one CUDA
graph on a side stream, CUDA events around each replay, median of --reps
replays / GRAPH_N (serving_vs_torch.py's graph_us: no host time enters; the
decode calls are 5-500 us). A runner whose capture fails is timed per call
with events and marked "events" in the JSON.
Before timing, each output is compared with torch's (relative error above
2e-2: not timed).

attn_seqs is mirrored here (the packages do not bind it): the mirror's field
names are checked against the struct in each build's own headers, and a
build whose struct differs is refused these rows rather than timed wrong.

  python3 bench/ab/serving_worker.py --build new=build-new/lib/libattnprof.so:python \\
      --json /tmp/ab/serving_new.json
"""
import argparse
import ctypes
import glob
import hashlib
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import grid_worker  # noqa: E402

BACKENDS = ("flash", "cudnn")
GRAPH_N = 20
HQ, HKV, D, PAGE = 32, 8, 128, 16


class Seqs(ctypes.Structure):
    """attn_seqs (include/attnprof/attn.h), field for field."""
    _fields_ = [("batch", ctypes.c_int64), ("q_offsets", ctypes.c_void_p),
                ("kv_offsets", ctypes.c_void_p), ("kv_lens", ctypes.c_void_p),
                ("block_table", ctypes.c_void_p), ("max_pages", ctypes.c_int64),
                ("table_stride", ctypes.c_int64), ("trusted", ctypes.c_int),
                ("max_q", ctypes.c_int64), ("max_kv", ctypes.c_int64)]


def serving_cells():
    """(b, kv, page) of the table's rows: page 0 is the contiguous cache."""
    return [(b, kv, page) for page in (PAGE, 0) for b in (1, 16) for kv in (1024, 8192, 32768)]


def cell_name(b, kv, page):
    k = f"{kv // 1024}k" if kv % 1024 == 0 else str(kv)
    return f"B{b} KV{k} {'paged' + str(page) if page else 'contig'}"


def header_fields(tree):
    """The field names of attn_seqs in the headers under tree/include, or
    None when no header there defines it."""
    for path in sorted(glob.glob(os.path.join(tree, "include", "**", "*.h"), recursive=True)):
        with open(path, errors="replace") as f:
            text = f.read()
        m = re.search(r"typedef struct \{([^{}]*)\}\s*attn_seqs;", text)
        if m:
            body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1), flags=re.S)
            return re.findall(r"(\w+)\s*(?=[,;])", body)
    return None


def seqs_check(pydir):
    """None when the mirror matches the tree's attn_seqs, else why not."""
    tree = os.path.dirname(os.path.abspath(pydir.rstrip("/")))
    got = header_fields(tree)
    want = [f for f, _ in Seqs._fields_]
    if got is None:
        return f"no attn_seqs in {tree}/include"
    if got != want:
        return f"attn_seqs in {tree}/include has fields {got}, this mirror {want}"
    return None


def parse_cells(text):
    """A comma list of rows ('B16 KV32k paged16', 'B1 KV1k contig'; KV in keys
    or k), or '' for the table's 12. Rows off the table are taken too."""
    if not text:
        return serving_cells()
    out = []
    for name in text.split(","):
        m = re.fullmatch(r"B(\d+) KV(\d+)(k?) (?:paged(\d+)|contig)", name.strip())
        b, kv, page = (int(m.group(1)), int(m.group(2)) * (1024 if m.group(3) else 1),
                       int(m.group(4) or 0)) if m else (0, 0, 0)
        if not m or not b or not kv or (page and kv % page) or (m.group(4) and not page):
            raise argparse.ArgumentTypeError(f"--cells: {name!r} is not a row (e.g. "
                                             "'B16 KV32k paged16' or 'B1 KV1k contig'; KV a "
                                             "multiple of the page)")
        out.append((b, kv, page))
    return out


def fake_us(label, name, cell, rnd):
    b, kv, page = cell
    key = f"{label}/{name}/{cell_name(*cell)}/{rnd}".encode()
    jitter = int(hashlib.md5(key).hexdigest()[:6], 16) / 0xFFFFFF - 0.5
    us = 4 + b * kv * HKV * D * 2 * 2 / 4.0e6
    return us * {"torch": 1.0, "flash": 1.0, "cudnn": 1.01}[name] * (1 + 0.01 * jitter)


def measure_dry(builds, cells, opt, save):
    rows = []
    for cell in cells:
        row = {"cell": cell_name(*cell), "runs": {}}
        for label, *_ in builds:
            for be in BACKENDS:
                t = [fake_us(label, "torch", cell, r) for r in range(opt.rounds)]
                u = [fake_us(label, be, cell, r) for r in range(opt.rounds)]
                row["runs"][f"{be}:{label}"] = {
                    "status": "ok", "err": 3e-3, "us": u, "torch_us": t, "timing": "graph",
                    "ratio": statistics.median(a / x for a, x in zip(t, u))}
        rows.append(row)
        save({"device": "dry-run", "torch": "none", "rows": rows})
    return {"device": "dry-run", "torch": "none", "rows": rows}


class Timer:
    """serving_vs_torch.py's timing: a CUDA graph of GRAPH_N calls on a side
    stream, CUDA events around each of reps replays (graph_us); per call with
    events (events_us) for what could not be captured."""

    def __init__(self, torch, reps):
        self.torch, self.reps = torch, reps

    def _median(self, step, per):
        cuda = self.torch.cuda
        ev = [(cuda.Event(enable_timing=True), cuda.Event(enable_timing=True))
              for _ in range(self.reps)]
        for a, b in ev:
            a.record()
            step()
            b.record()
        cuda.synchronize()
        return statistics.median(a.elapsed_time(b) * 1e3 / per for a, b in ev)

    def events_us(self, fn):
        for _ in range(3):
            fn()
        return self._median(fn, 1)

    def graph_us(self, g):
        return self._median(g.replay, GRAPH_N)

    def capture(self, fn, call=None):
        """A CUDA graph of GRAPH_N calls of fn (an attnprof call pointed at
        the capture stream while captured), or None when capture fails."""
        cuda = self.torch.cuda
        s = cuda.Stream()
        s.wait_stream(cuda.current_stream())
        if call is not None:
            call.args.stream = s.cuda_stream
        try:
            with cuda.stream(s):
                for _ in range(3):
                    fn()
            s.synchronize()
            g = cuda.CUDAGraph()
            with cuda.graph(g, stream=s):
                for _ in range(GRAPH_N):
                    fn()
            g.replay()
            cuda.synchronize()
            return g
        except Exception:  # noqa: BLE001 (any failure: timed per call instead)
            cuda.synchronize()
            return None
        finally:
            if call is not None:
                call.args.stream = None


def paged_cache(torch, kc, vc, lens, g, page):
    """The contiguous cache's keys copied into a pool of pages on a seeded
    shuffled table: (k, v as {pages, Hkv, page, D} views, Seqs, what to keep)."""
    b, kv = kc.shape[0], kc.shape[1]
    per = kv // page
    table = torch.randperm(b * per, device="cuda", generator=g).to(torch.int32)
    table = table.view(b, per).contiguous()
    kp = torch.empty(b * per, page, HKV, D, device="cuda", dtype=torch.bfloat16)
    vp = torch.empty_like(kp)
    kp[table.view(-1).long()] = kc.view(b * per, page, HKV, D)
    vp[table.view(-1).long()] = vc.view(b * per, page, HKV, D)
    seqs = Seqs(b, None, None, lens.data_ptr(), table.data_ptr(), per, 0, 1, 1, kv)
    return kp.transpose(1, 2), vp.transpose(1, 2), seqs, (kp, vp, table)


def time_row(row, runs, tgraph, torch_run, timer, rounds):
    """Times runs [(name, fn, graph)] (the first torch's) over alternating
    rounds; a runner goes by graph replays where it and torch were both
    captured, else per call with events, torch then timed the same way.
    Fills row['runs'][name] with us, torch_us, timing and ratio."""
    graphed = {name: gr is not None and tgraph is not None for name, _, gr in runs[1:]}
    plan = [(name, fn, gr if (name == "torch" or graphed[name]) and tgraph is not None else None)
            for name, fn, gr in runs]
    if not all(graphed.values()) and tgraph is not None:
        plan.append(("torch_ev", torch_run, None))
    times = {name: [] for name, _, _ in plan}
    for rnd in range(rounds):
        for name, fn, gr in (plan if rnd % 2 == 0 else plan[::-1]):
            times[name].append(timer.graph_us(gr) if gr is not None else timer.events_us(fn))
    for name, _, _ in runs[1:]:
        tt = times["torch" if graphed[name] or tgraph is None else "torch_ev"]
        row["runs"][name].update(
            us=times[name], torch_us=tt, timing="graph" if graphed[name] else "events",
            ratio=statistics.median(a / x for a, x in zip(tt, times[name])))
    row["torch_us"] = times["torch"]


def measure(builds, cells, opt, save):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    timer = Timer(torch, opt.reps)
    pkgs = {label: grid_worker.load_package(label, lib, py) for label, lib, py in builds}
    bad_seqs = {label: seqs_check(py) for label, _, py in builds}
    engines = {label: ap.Engine() if hasattr(ap, "Engine") else None for label, ap in pkgs.items()}
    head = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    rows, by_bkv = [], {}
    for cell in cells:
        by_bkv.setdefault(cell[:2], []).append(cell)
    for (b, kv), group in by_bkv.items():
        g = torch.Generator(device="cuda").manual_seed(b * 7 + kv)
        q = torch.randn(b, 1, HQ, D, device="cuda", dtype=torch.bfloat16, generator=g)
        kc = torch.randn(b, kv, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
        vc = torch.randn(b, kv, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
        lens = torch.full((b,), kv, dtype=torch.int32, device="cuda")
        qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)

        def torch_run():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
        ref = torch_run().float()
        tgraph = timer.capture(torch_run)
        for cell in group:
            t0 = time.time()
            row = {"cell": cell_name(*cell), "runs": {}}
            if cell[2]:
                k_in, v_in, seqs, keep = paged_cache(torch, kc, vc, lens, g, cell[2])
            else:
                k_in, v_in, keep = kt, vt, ()
                seqs = Seqs(b, None, None, lens.data_ptr(), None, 0, 0, 1, 1, kv)
            runs = [("torch", torch_run, tgraph)]
            calls = []
            for label, ap in pkgs.items():
                for be in BACKENDS:
                    key = f"{be}:{label}"
                    if bad_seqs[label]:
                        row["runs"][key] = {"status": f"refused here: {bad_seqs[label]}"}
                        continue
                    o = torch.full_like(q, float("nan"))
                    try:
                        call = ap.Call(qt, k_in, v_in, o.transpose(1, 2), engine=engines[label])
                        call.args.seqs = ctypes.addressof(seqs)
                        fn = grid_worker.runner(ap, call, be)
                        calls.append((call, o))
                        fn()
                        torch.cuda.synchronize()
                        err = ((o.transpose(1, 2).float() - ref).norm() / ref.norm()).item()
                    except (RuntimeError, ValueError, TypeError) as e:
                        row["runs"][key] = {"status": f"refused: {e}"}
                        continue
                    if not err < 2e-2:
                        row["runs"][key] = {"status": f"FAIL rel_err {err:.3e}", "err": err}
                        continue
                    row["runs"][key] = {"status": "ok", "err": err}
                    runs.append((key, fn, timer.capture(fn, call)))
            time_row(row, runs, tgraph, torch_run, timer, opt.rounds)
            row["wall_s"] = round(time.time() - t0, 2)
            rows.append(row)
            save(dict(head, rows=rows))
            brief = " ".join(f"{n}={x['ratio']:.3f}" if "ratio" in x else f"{n}={x['status'][:40]}"
                             for n, x in row["runs"].items())
            print(f"{row['cell']:<18} torch {statistics.median(row['torch_us']):8.1f} us  {brief}",
                  flush=True)
            del runs, calls, keep
        del q, kc, vc, qt, kt, vt, ref, tgraph
        torch.cuda.empty_cache()
    return dict(head, rows=rows, libs=sorted(grid_worker.loaded_libs()),
                cudnn_libs=sorted(grid_worker.loaded_libs("libcudnn_graph")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", action="append", type=grid_worker.parse_build, required=True,
                    help="LABEL=LIB:PYDIR (repeatable)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--reps", type=int, default=30, help="graph replays per median (default 30)")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds (default 4)")
    ap.add_argument("--cells", type=parse_cells, default=serving_cells())
    ap.add_argument("--dry-run", action="store_true")
    opt = ap.parse_args(argv)
    if opt.reps < 1 or opt.rounds < 1:
        ap.error("--reps and --rounds take a positive count")
    return grid_worker.finish(opt, measure_dry if opt.dry_run else measure)


if __name__ == "__main__":
    sys.exit(main())
