#!/usr/bin/env python3
"""The A/B correctness sweep through each build's CLI: `attnprof compare
--json` (every backend, each checked against the fp64 reference) on small
problems that reach the kernels' special paths (tails, causal alignments,
Sq != Sk, D96, GQA, BSHD, LSE, f16, forced flash kernels, decode paged and
contiguous, several new tokens), for the old and the new build.

A (case, backend) is flagged when the new build refuses where the old ran,
when its rel_err is NaN or above 1e-2 (16-bit inputs), or when it moved from
the old one's by more than 10% (+1e-5): the same kernels should give the
same error. One line per case: each backend's new rel_err, '=' where it kept
the old one's, '!' where flagged, 'R' where both refused. Flagged cells are
listed below the table with both values. Tables on stdout and in
$OUT/ab-summary.txt; the JSON of every run in --work/check.jsonl.

  python3 bench/ab/check.py                        # on the device, repo root
  python3 bench/ab/check.py --device cpu --quick --old-cli X --new-cli X   # smoke test
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import abtable  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
BACKENDS = ("flash", "cudnn", "efficient", "math", "naive", "naive_inplace")
DECODE = ["--shape", "1x32x1x128", "--batch", "4", "--heads", "32/8"]
CASES = [
    ("2x4x1000x64 tl", ["--shape", "2x4x1000x64", "--causal=top-left"]),
    ("2x4x1000x128 none", ["--shape", "2x4x1000x128", "--causal=none"]),
    ("1x4x777x256 sk1025 br", ["--shape", "1x4x777x256", "--sk", "1025", "--causal=bottom-right"]),
    ("2x8x512x96 tl", ["--shape", "2x8x512x96", "--causal=top-left"]),
    ("2x8x600x128 kv2 tl", ["--shape", "2x8x600x128", "--kv-heads", "2", "--causal=top-left"]),
    ("2x4x640x64 bshd tl", ["--shape", "2x4x640x64", "--layout", "bshd", "--causal=top-left"]),
    ("2x4x513x128 lse none", ["--shape", "2x4x513x128", "--lse", "--causal=none"]),
    ("2x4x1000x128 f16 tl", ["--shape", "2x4x1000x128", "--dtype", "f16", "--causal=top-left"]),
    ("2x4x1000x64 tl mma", ["--shape", "2x4x1000x64", "--causal=top-left",
                            "--flash-kernel", "mma_sync"]),
    ("2x4x1000x128 none wgmma", ["--shape", "2x4x1000x128", "--causal=none",
                                 "--flash-kernel", "wgmma"]),
    ("decode KV2000 paged16", DECODE + ["--new-tokens", "1", "--kv-len", "2000",
                                        "--page-size", "16", "--causal=none"]),
    ("decode KV2000 contig", DECODE + ["--new-tokens", "1", "--kv-len", "2000", "--causal=none"]),
    ("decode q8 KV3000 paged64 br", DECODE + ["--new-tokens", "8", "--kv-len", "3000",
                                              "--page-size", "64", "--causal=bottom-right"]),
]
QUICK = [("1x2x100x64 tl", ["--shape", "1x2x100x64", "--causal=top-left"]),
         ("decode KV300 paged16", ["--shape", "1x8x1x64", "--batch", "2", "--heads", "8/2",
                                   "--new-tokens", "1", "--kv-len", "300", "--page-size", "16",
                                   "--causal=none"])]
TOL = 1e-2


def options(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old-cli", default=os.path.join(ROOT, "build-old/bin/attnprof"))
    ap.add_argument("--new-cli", default=os.path.join(ROOT, "build-new/bin/attnprof"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="two tiny cases (a CPU smoke test)")
    ap.add_argument("--jobs", type=int, default=4, help="processes at once (nothing is timed)")
    ap.add_argument("--timeout", type=float, default=150, help="seconds per process")
    ap.add_argument("--extra", default="--iters 3 --warmup 1 --copy-bw 4000 --peak-tflops 800",
                    help="more CLI options")
    ap.add_argument("--work", default=os.environ.get("AB_WORK", "/tmp/ab"))
    opt = ap.parse_args(argv)
    if opt.jobs < 1 or opt.timeout <= 0:
        ap.error("--jobs and --timeout take positive numbers")
    opt.extra = opt.extra.split()
    return opt


def run_case(opt, build, args):
    cli = opt.old_cli if build == "old" else opt.new_cli
    if not os.path.exists(cli):
        return 127, None, f"no {cli}"
    return abtable.run_cli([cli, "compare", "--device", opt.device, "--json"] + args + opt.extra,
                           opt.timeout)


def errs_of(doc):
    """{backend: rel_err (float, nan) or 'refused: why'} of a compare JSON."""
    out = {}
    for b in (doc or {}).get("backends", []):
        if b.get("status") == "ok":
            e = b.get("rel_err")
            out[b["name"]] = float("nan") if e is None else float(e)
        else:
            out[b["name"]] = f"{b.get('status')}: {b.get('why', '')}"
    return out


def judge(old, new):
    """(mark, reason): '=' kept, '!' flagged, 'R' both refused, '+' better,
    '-' missing from both."""
    if old is None and new is None:
        return "-", ""
    if isinstance(new, str) or new is None:
        if isinstance(old, float):
            return "!", "new refuses where old ran: " + str(new)[:100]
        return "R", ""
    if math.isnan(new):
        return "!", "new not checked (nan)"
    if new > TOL:
        return "!", f"new rel_err {new:.2e} over {TOL:g}"
    if not isinstance(old, float) or math.isnan(old):
        return "=", ""
    if new > old * 1.1 + 1e-5:
        return "!", f"moved: old {old:.3e} new {new:.3e}"
    return ("+" if new < old / 1.1 - 1e-5 else "="), ""


def main(argv=None):
    opt = options(argv)
    os.makedirs(opt.work, exist_ok=True)
    cases = QUICK if opt.quick else CASES
    t0 = time.time()
    jobs = [(name, build, args) for name, args in cases for build in ("old", "new")]
    res = {}
    with cf.ThreadPoolExecutor(opt.jobs) as pool:
        futs = {pool.submit(run_case, opt, b, a): (n, b) for n, b, a in jobs}
        for fut in cf.as_completed(futs):
            res[futs[fut]] = fut.result()
    with open(os.path.join(opt.work, "check.jsonl"), "w") as log:
        for (name, build), (rc, doc, err) in sorted(res.items()):
            log.write(json.dumps({"case": name, "build": build, "rc": rc, "stderr": err,
                                  "doc": doc}) + "\n")
    head = f"{'case':<28}" + "".join(f"{b[:13]:>14}" for b in BACKENDS)
    lines = [f"== check: compare --json rel_err vs fp64, new build (mark: = as old, ! flagged, "
             f"R both refuse, + better), device {opt.device}; {time.time() - t0:.0f} s", head]
    flagged, broken = [], []
    for name, _ in cases:
        row = f"{name:<28}"
        got = {}
        for build in ("old", "new"):
            rc, doc, err = res[(name, build)]
            if doc is None:
                broken.append(f"{name} {build}: no JSON (rc {rc}): {err[:120]}")
            got[build] = errs_of(doc)
        for be in BACKENDS:
            o, n = got["old"].get(be), got["new"].get(be)
            mark, why = judge(o, n)
            val = f"{n:.1e}" if isinstance(n, float) and not math.isnan(n) else \
                ("ref" if isinstance(n, str) else "-")
            row += f"{val + mark:>14}"
            if mark == "!":
                flagged.append(f"{name} {be}: {why}")
        lines.append(row)
    lines += [f"check: no result: {b}" for b in broken]
    lines.append("check flagged: " + ("; ".join(flagged) if flagged else "none"))
    abtable.emit(lines)
    return 1 if flagged or broken else 0


if __name__ == "__main__":
    sys.exit(main())
