#!/usr/bin/env python3
"""The A/B serving rows through each build's own CLI (run.sh's serving-cli
step; the serving step proper is grid.py --suite serving): decode (one new
token per sequence, heads 32/8, D128, bf16, no mask) at B 1 and 16 x KV 1k,
8k, 32k, with K/V in a paged cache (pages of 16, shuffled table: the CLI's
--page-size, the decode kernel) and dense (no --page-size: attn_args with
Sq = 1, flash's dense kernel; the CLI has no contiguous attn_seqs), for flash
and cudnn:

  attnprof run --device cuda --backend BE --shape 1x32x1x128 --batch B
      --heads 32/8 --new-tokens 1 --kv-len KV [--page-size 16] --causal=none
      --no-check --json

time_us is the CLI's CUDA-event median over its timed forwards. Each
(cell, backend) runs the builds one after the other in --runs order (default
new, old, new2: the control brackets old), each its own process; --rounds 2
runs them again in reverse order and keeps the mean per build.
Columns per backend: old and new time (us), new/old (old time / new time:
above 1 new is faster), ctl (new time / new2 time: the noise), flag where
|new/old - 1| > 2% and > |ctl - 1|. Tables on stdout and in
$OUT/ab-summary.txt; every run's JSON line in --work/serving_cli.jsonl.

  python3 bench/ab/serving_cli.py                  # on the device, repo root
  python3 bench/ab/serving_cli.py --device cpu --old-cli X --new-cli X   # a smoke test
  python3 bench/ab/serving_cli.py --dry-run        # made-up times, no CLI
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import abtable  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
BACKENDS = ("flash", "cudnn")


def cells(batches, kvs, pages):
    return [(b, kv, page) for page in pages for b in batches for kv in kvs]


def cell_name(b, kv, page):
    k = f"{kv // 1024}k" if kv % 1024 == 0 else str(kv)
    return f"B{b} KV{k} {'paged' + str(page) if page else 'dense'}"


def cli_args(opt, backend, b, kv, page):
    a = ["run", "--device", opt.device, "--backend", backend, "--shape", f"1x32x1x{opt.d}",
         "--batch", str(b), "--heads", "32/8", "--new-tokens", "1", "--kv-len", str(kv),
         "--causal=none", "--no-check", "--json"]
    if page:
        a += ["--page-size", str(page)]
    if opt.iters:
        a += ["--iters", str(opt.iters)]
    return a + opt.extra


def ints(text):
    try:
        out = [int(x) for x in text.split(",") if x != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a comma list of integers") from None
    if not out or any(x < 0 for x in out):
        raise argparse.ArgumentTypeError(f"{text!r}: give a comma list of integers >= 0")
    return out


def options(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old-cli", default=os.path.join(ROOT, "build-old/bin/attnprof"))
    ap.add_argument("--new-cli", default=os.path.join(ROOT, "build-new/bin/attnprof"))
    ap.add_argument("--runs", default="new,old,new2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N (cpu: a smoke test)")
    ap.add_argument("--batch", type=ints, default=[1, 16])
    ap.add_argument("--kv", type=ints, default=[1024, 8192, 32768])
    ap.add_argument("--pages", type=ints, default=[16, 0], help="page sizes, 0 = dense")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--iters", type=int, default=0, help="the CLI's --iters (default its own)")
    ap.add_argument("--extra", default="--copy-bw 4000 --peak-tflops 800",
                    help="more CLI options (default: fixed roofs, so no run measures them)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per CLI process")
    ap.add_argument("--budget", type=float, default=300,
                    help="seconds: no process starts after this (the table says what is left)")
    ap.add_argument("--work", default=os.environ.get("AB_WORK", "/tmp/ab"))
    ap.add_argument("--dry-run", action="store_true")
    opt = ap.parse_args(argv)
    opt.runs = [r for r in opt.runs.split(",") if r]
    if not opt.runs or any(r not in ("old", "new", "new2", "old2") for r in opt.runs) or \
            len(set(opt.runs)) != len(opt.runs):
        ap.error(f"--runs {','.join(opt.runs)}: a comma list of old, new, new2, old2, each once")
    if opt.rounds < 1 or opt.timeout <= 0 or opt.budget <= 0 or opt.iters < 0:
        ap.error("--rounds, --timeout and --budget take positive numbers, --iters >= 0")
    opt.extra = opt.extra.split()
    return opt


def fake_run(run, backend, b, kv, page, rnd):
    """--dry-run: a made-up time (us) and the JSON the CLI would print."""
    key = f"{run}/{backend}/{b}/{kv}/{page}/{rnd}".encode()
    jitter = int(hashlib.md5(key).hexdigest()[:6], 16) / 0xFFFFFF - 0.5
    us = (4 + b * kv * 8 * 128 * 2 * 2 / 4.0e6) * (1.02 if backend == "cudnn" else 1.0)
    return {"device": "dry-run", "backend": {"name": backend, "status": "ok",
                                             "time_us": us * (1 + 0.01 * jitter)}}


def one(opt, run, backend, cell, rnd, log):
    """One CLI process: (time_us or None, status)."""
    b, kv, page = cell
    if opt.dry_run:
        doc, rc, err = fake_run(run, backend, b, kv, page, rnd), 0, ""
    else:
        cli = opt.old_cli if run.startswith("old") else opt.new_cli
        if not os.path.exists(cli):
            return None, f"no {cli}"
        rc, doc, err = abtable.run_cli([cli] + cli_args(opt, backend, b, kv, page), opt.timeout)
    be = (doc or {}).get("backend") or {}
    log.write(json.dumps({"run": run, "backend": backend, "cell": cell_name(*cell), "round": rnd,
                          "rc": rc, "stderr": err, "result": be}) + "\n")
    if rc == 0 and be.get("status") == "ok" and isinstance(be.get("time_us"), (int, float)):
        return float(be["time_us"]), "ok"
    why = be.get("why") or err or f"rc {rc}"
    return None, f"{be.get('status', 'failed')}: {why}"[:160]


def main(argv=None):
    opt = options(argv)
    os.makedirs(opt.work, exist_ok=True)
    t0 = time.time()
    grid = cells(opt.batch, opt.kv, opt.pages)
    times = {}
    notes, left = [], 0
    with open(os.path.join(opt.work, "serving_cli.jsonl"), "w") as log:
        for cell in grid:
            for be in BACKENDS:
                for rnd in range(opt.rounds):
                    order = opt.runs if rnd % 2 == 0 else opt.runs[::-1]
                    for run in order:
                        if time.time() - t0 > opt.budget:
                            left += 1
                            continue
                        us, st = one(opt, run, be, cell, rnd, log)
                        if us is not None:
                            times.setdefault((cell, be, run), []).append(us)
                        elif rnd == 0:
                            notes.append((f"{be} {run}", cell_name(*cell), st))
            line = " ".join(f"{be}:{r}={statistics.mean(times[(cell, be, r)]):.1f}"
                            for be in BACKENDS for r in opt.runs if (cell, be, r) in times)
            print(f"serving-cli: {cell_name(*cell):<18} {line}", flush=True)
    nan = float("nan")

    def get(cell, be, run):
        v = times.get((cell, be, run))
        return statistics.mean(v) if v else nan
    rows = [(cell_name(*c), {be: (get(c, be, "old"), get(c, be, "new"), get(c, be, "new2"))
                             for be in BACKENDS}) for c in grid]
    title = (f"== serving-cli: decode, heads 32/8, D{opt.d}, bf16, 1 new token, causal none; "
             f"time_us = the CLI's CUDA-event median per process (us); runs {','.join(opt.runs)}"
             f" x {opt.rounds} round(s); device {opt.device}; {time.time() - t0:.0f} s")
    lines, flagged = abtable.side_by_side(rows, list(BACKENDS), title, key_width=20, times=True)
    lines += abtable.grouped_notes("serving-cli not timed", notes)
    if left:
        lines.append(f"serving-cli: {left} processes not started (--budget {opt.budget:.0f} s)")
    lines.append("serving-cli flagged (|new/old-1| > 2% and > control): " +
                 (", ".join(f"{c} {g} {no:.3f} ({f})" for c, g, no, _, f in flagged) or "none"))
    abtable.emit(lines)
    return 1 if left or any(f == "SLOWER" for *_, f in flagged) else 0


if __name__ == "__main__":
    sys.exit(main())
