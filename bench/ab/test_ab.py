#!/usr/bin/env python3
"""The A/B harness's own checks, on any machine (no GPU, no torch):

  python3 bench/ab/test_ab.py [--lib build/lib/libattnprof.so] [--cli build/bin/attnprof]

the flag rule and the tables, the log parsers on real outputs (a passing and
a failing sanitizer run, ctest with a failure and with a skip), the argument
checks, grid.py and serving.py end to end with made-up times, run.sh with
AB_DRY=1, and, given a library of this tree built here (CUDA or not), two
builds' packages imported side by side in one process the way grid_worker.py
does, and both workers' measuring code run with torch replaced by the numpy
stand-in in testdata/ (its CPU backends compute; cudnn refuses); given a
CLI, serving_cli.py and check.py through it on the CPU.
Prints 'N passed, M failed'.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import abtable  # noqa: E402
import check  # noqa: E402
import grid_worker  # noqa: E402
import logs  # noqa: E402

passed, failed = 0, 0

SAN_OK = """========= COMPUTE-SANITIZER
device: NVIDIA H200 (quick)
flash (opts.flash_kernel ws): 92 shapes, 0 failed
10 passed, 0 failed: all passed
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""
SAN_BAD = """========= COMPUTE-SANITIZER
========= Invalid __shared__ write of size 4 bytes
=========     at ws_st_async(unsigned int, int, unsigned int)+0x10c40 in ws_sync.cuh:139
FAIL setup: bf16 B=2 Hq=24 Hkv=6 Sq=320 Sk=320 D=64 causal=top-left
0 passed, 9 failed: FAILED
========= Target application returned an error
========= ERROR SUMMARY: 15 errors
"""
SEQS_OK = """12 passed, 0 failed; 3 cases ran several splits and a combine, 4 the cluster kernel
========= ERROR SUMMARY: 0 errors
"""
CTEST_FAIL = """3/3 Test #26: test_seqs_gpu ....................   Passed   48.75 sec

67% tests passed, 1 tests failed out of 3

Total Test time (real) =  48.76 sec

The following tests FAILED:
\t 49 - test_cupti_sync (Failed)                          gpu
Errors while running CTest
"""
CTEST_SKIP = """100% tests passed out of 18

Label Time Summary:
gpu    = 282.61 sec*proc (18 tests)

The following tests did not run:
\t 52 - trace_ranks (Skipped)
"""


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {what}")


def test_flags():
    ok(abtable.flag(0.97, 1.005) == "SLOWER", "3% slower past a 0.5% control is flagged")
    ok(abtable.flag(1.03, 0.999) == "faster", "3% faster is flagged faster")
    ok(abtable.flag(0.985, 1.0) == "", "1.5% is within 2%")
    ok(abtable.flag(0.97, 0.96) == "", "3% inside a 4% control is not flagged")
    ok(abtable.flag(float("nan"), 1.0) == "?", "a missing figure is '?'")
    ok(math.isnan(abtable.ratio(1.0, 0.0)) and math.isnan(abtable.ratio(None, 1.0)),
       "ratio of missing or zero is nan")
    rows = [("a", {"flash": (1.10, 1.00, 1.001)}), ("b", {"flash": (1.0, 1.0, 1.0)})]
    lines, flagged = abtable.side_by_side(rows, ["flash"], "t")
    ok(len(flagged) == 1 and flagged[0][0] == "a" and flagged[0][4] == "SLOWER",
       "side_by_side flags the speed drop")
    _, flagged = abtable.side_by_side([("c", {"x": (100.0, 110.0, 110.0)})], ["x"], "t", times=True)
    ok(flagged and flagged[0][4] == "SLOWER", "with times, a longer new time is slower")
    ok(any("geomean" in x for x in lines), "a summary line per group")
    notes = [("cudnn new", "c1", "refused: x"), ("cudnn new", "c2", "refused: x")]
    ok(len(abtable.grouped_notes("t", notes)) == 1, "repeated notes are grouped")


def test_logs():
    r = logs.parse_sanitizer(SAN_OK)
    ok(r["hazards"] == 0 and r["errors"] == 0 and r["passed"] == 10, "racecheck pass parsed")
    ok(logs.san_line("x", SAN_OK, 0)[1], "a clean sanitizer run is ok")
    ok(not logs.san_line("x", SAN_OK, 3)[1], "a non-zero exit is a problem")
    r = logs.parse_sanitizer(SAN_BAD)
    ok(r["errors"] == 15 and r["failed"] == 9 and r["app_error"], "memcheck failure parsed")
    ok(not logs.san_line("x", SAN_BAD)[1], "a failing sanitizer run is a problem")
    ok(logs.san_line("x", SEQS_OK)[1], "test_seqs_gpu's count line parsed")
    ok(not logs.san_line("x", "killed\n")[1], "a log with no summary is a problem")
    ok(not logs.san_line("x", "SKIP: no GPU\n========= ERROR SUMMARY: 0 errors\n")[1],
       "a skipped test is a problem")
    r = logs.parse_ctest(CTEST_FAIL)
    ok(r["failed"] == 1 and r["total"] == 3 and r["failed_tests"] == ["test_cupti_sync (Failed)"],
       "ctest failure parsed")
    r = logs.parse_ctest(CTEST_SKIP)
    ok(r["ok"] and r["total"] == 18 and r["not_run"] == ["trace_ranks (Skipped)"],
       "ctest 100% with a skip parsed")
    ok(not logs.parse_ctest("Start 1: x\n")["ok"], "ctest without its closing line is not ok")
    # The saved device outputs of the old tree, when this machine has them.
    base = "/work/old/bench/results"
    for rel, good in (("h200-2026-12-01-fa3e/call1/san_ws_racecheck_base_ab65536.txt", True),
                      ("h200-2026-12-01q-fa3s/run2/san_ws_memcheck_ab512.txt", False),
                      ("h200-2026-12-02c-lead/ctest.txt", True)):
        p = os.path.join(base, rel)
        if os.path.exists(p):
            text = open(p, errors="replace").read()
            got = logs.parse_ctest(text)["ok"] if "ctest" in rel else logs.san_line("x", text)[1]
            ok(got == good, f"saved output {rel}")


def test_args():
    for bad in ("new", "new=lib", "=a:b", "n-w=a:b"):
        try:
            grid_worker.parse_build(bad)
            ok(False, f"--build {bad!r} refused")
        except argparse.ArgumentTypeError:
            ok(True, "")
    ok(grid_worker.parse_build("new=/x/lib.so:/y") == ("new", "/x/lib.so", "/y"), "--build parsed")
    ok(len(grid_worker.grid_cells()) == 31, "the grid has 31 cells")
    ok(grid_worker.grid_cells()[-1] == (8, 16, 1024, 64, True), "the blog shape is last")
    ok(grid_worker.parse_cells("8x16x1024x64c") == [(8, 16, 1024, 64, True)], "a cell parsed")
    for argv in (["--runs", "new,bad"], ["--cells", "1x2x3"], ["--reps", "0"]):
        r = subprocess.run([sys.executable, os.path.join(HERE, "grid.py")] + argv,
                           capture_output=True, text=True)
        ok(r.returncode == 2 and "error" in r.stderr, f"grid.py {' '.join(argv)} exits 2")
    r = subprocess.run([sys.executable, os.path.join(HERE, "serving_cli.py"), "--kv", "x"],
                       capture_output=True, text=True)
    ok(r.returncode == 2, "serving_cli.py --kv x exits 2")
    r = subprocess.run([sys.executable, os.path.join(HERE, "grid.py"), "--suite", "serving",
                        "--cells", "B1 KV100 paged16"], capture_output=True, text=True)
    ok(r.returncode == 2 and "not a row" in r.stderr, "grid.py --suite serving checks its cells")
    r = subprocess.run(["bash", os.path.join(HERE, "run.sh"), "nope"], capture_output=True,
                       text=True)
    ok(r.returncode == 2 and "not a step" in r.stdout, "run.sh with an unknown step exits 2")


def test_seqs_mirror():
    import serving_worker
    ok(serving_worker.seqs_check(os.path.join(ROOT, "python")) is None,
       "the attn_seqs mirror matches this tree's header")
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "include", "attnprof"))
        with open(os.path.join(d, "include", "attnprof", "attn.h"), "w") as f:
            f.write("typedef struct {\n  size_t size; /* new */\n  int64_t batch;\n"
                    "  const int32_t *q_offsets, *kv_offsets;\n} attn_seqs;\n")
        why = serving_worker.seqs_check(os.path.join(d, "python"))
        ok(why and "size" in why, "a changed attn_seqs is refused, not timed")
    ok(len(serving_worker.serving_cells()) == 12, "the serving table has 12 rows")


def test_judge():
    ok(check.judge(2e-3, 2e-3)[0] == "=", "same error kept")
    ok(check.judge(2e-3, 3e-3)[0] == "!", "an error that grew is flagged")
    ok(check.judge(2e-3, "refused: no")[0] == "!", "a new refusal is flagged")
    ok(check.judge("refused: a", "refused: b")[0] == "R", "both refusing is not flagged")
    ok(check.judge(None, 2e-2)[0] == "!", "over 1e-2 is flagged")
    ok(check.judge(2e-3, float("nan"))[0] == "!", "an unchecked new result is flagged")
    doc = {"backends": [{"name": "flash", "status": "ok", "rel_err": 1e-3},
                        {"name": "cudnn", "status": "refused", "why": "no"}]}
    e = check.errs_of(doc)
    ok(e["flash"] == 1e-3 and e["cudnn"].startswith("refused"), "compare JSON read")


def test_end_to_end(tmp):
    env = dict(os.environ, AB_WORK=tmp, OUT=os.path.join(tmp, "out"))
    env.pop("AB_SUMMARY", None)
    r = subprocess.run([sys.executable, os.path.join(HERE, "grid.py"), "--dry-run", "--rounds", "2"],
                       capture_output=True, text=True, env=env)
    ok(r.returncode == 0 and "8x16x1024x64c" in r.stdout and "grid flagged" in r.stdout,
       f"grid.py --dry-run: {r.stdout[-300:]} {r.stderr[-300:]}")
    js = json.load(open(os.path.join(tmp, "grid_new2.json")))
    ok(js["complete"] and len(js["rows"]) == 31 and "flash:new2" in js["rows"][0]["runs"],
       "the worker's JSON holds 31 rows for its label")
    r = subprocess.run([sys.executable, os.path.join(HERE, "grid.py"), "--from", tmp],
                       capture_output=True, text=True, env=env)
    ok(r.returncode == 0 and "grid_old.json: read" in r.stdout, "grid.py --from")
    r = subprocess.run([sys.executable, os.path.join(HERE, "grid.py"), "--dry-run", "--mode",
                        "together", "--cells", "16x32x1024x64"], capture_output=True, text=True,
                       env=env)
    ok(r.returncode == 0 and "16x32x1024x64 " in r.stdout, "grid.py --mode together")
    r = subprocess.run([sys.executable, os.path.join(HERE, "serving_cli.py"), "--dry-run"],
                       capture_output=True, text=True, env=env)
    ok(r.returncode == 0 and "B16 KV32k dense" in r.stdout, "serving_cli.py --dry-run")
    r = subprocess.run([sys.executable, os.path.join(HERE, "grid.py"), "--suite", "serving",
                        "--dry-run"], capture_output=True, text=True, env=env)
    ok(r.returncode == 0 and "B16 KV32k contig" in r.stdout and "B1 KV1k paged16" in r.stdout,
       "grid.py --suite serving --dry-run")
    js = json.load(open(os.path.join(tmp, "serving_old.json")))
    ok(len(js["rows"]) == 12 and js["complete"], "the serving worker's JSON holds 12 rows")
    summary = open(os.path.join(tmp, "out", "ab-summary.txt")).read()
    ok("== grid" in summary and "== serving" in summary and "== serving-cli" in summary,
       "tables kept in $OUT/ab-summary.txt")
    env2 = dict(env, AB_DRY="1", AB_WORK=os.path.join(tmp, "dry"), OUT=os.path.join(tmp, "dryout"))
    r = subprocess.run(["bash", os.path.join(HERE, "run.sh"), "build", "grid", "serving",
                        "serving-cli", "check"],
                       capture_output=True, text=True, env=env2)
    ok("recap" in r.stdout and "== done" in r.stdout and "== serving-cli" in r.stdout and
       os.path.exists(os.path.join(tmp, "dryout", "ab-logs.tgz")), "run.sh with AB_DRY=1")
    ok(len(os.listdir(os.path.join(tmp, "dryout"))) <= 8, "at most 8 files in $OUT")
    env3 = dict(env2, AB_BUDGET="100")
    r = subprocess.run(["bash", os.path.join(HERE, "run.sh"), "grid"], capture_output=True,
                       text=True, env=env3)
    ok("grid: NOT RUN (time" in r.stdout and "again: bash bench/ab/run.sh build grid" in r.stdout,
       "run.sh skips a step past its budget and says how to run it")


def test_packages(lib):
    """Two builds' packages in one process (here: this tree's and, where
    present, the old tree's, over the same library or a copy)."""
    import numpy as np
    old_py = os.path.join(ROOT, ".old", "python")
    if not os.path.exists(os.path.join(old_py, "attnprof")):
        old_py = os.path.join(ROOT, "python")
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "libattnprof.so")
        with open(os.path.realpath(lib), "rb") as f, open(copy, "wb") as g:
            g.write(f.read())
        a = grid_worker.load_package("t_new", lib, os.path.join(ROOT, "python"))
        b = grid_worker.load_package("t_old", copy, old_py)
        libs = grid_worker.loaded_libs()
        ok(os.path.realpath(lib) in libs and os.path.realpath(copy) in libs,
           f"both libraries mapped: {libs}")
        ok(a is not b and a.__name__ == "attnprof_t_new", "two package modules")
        for ap in (a, b):
            B, H, S, D = 1, 2, 33, 16
            rng = np.random.default_rng(1)
            xs = [rng.standard_normal((B, H, S, D)).astype(np.float32) for _ in range(3)]
            xs.append(np.full((B, H, S, D), np.nan, np.float32))
            ts = [ap.tensor(x.ctypes.data, x.shape, [s // 4 for s in x.strides], "f32", -1)
                  for x in xs]
            call = ap.Call(*ts, causal="top-left", engine=ap.Engine())
            grid_worker.runner(ap, call, "naive")()
            q, k, v, o = xs
            s = np.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
            s[..., np.triu_indices(S, 1)[0], np.triu_indices(S, 1)[1]] = -np.inf
            p = np.exp(s - s.max(-1, keepdims=True))
            ref = np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v)
            ok(np.abs(o - ref).max() < 1e-4, f"{ap.__name__}: the runner computed attention")
            try:
                grid_worker.runner(ap, call, "no_such_backend")()
                ok(False, "an unknown backend raises")
            except Exception:
                ok(True, "")


def test_workers(lib, tmp):
    """Both workers' measuring code, on the CPU: torch replaced by the numpy
    stand-in under testdata/ (no graphs: per-call timing), the library a CPU
    build, old and new two copies of it under each tree's package."""
    copy = os.path.join(tmp, "old", "libattnprof.so")
    os.makedirs(os.path.dirname(copy))
    with open(os.path.realpath(lib), "rb") as f, open(copy, "wb") as g:
        g.write(f.read())
    old_py = os.path.join(ROOT, ".old", "python")
    if not os.path.exists(os.path.join(old_py, "attnprof")):
        old_py = os.path.join(ROOT, "python")
    env = dict(os.environ, AB_WORK=tmp, OUT=os.path.join(tmp, "out"),
               PYTHONPATH=os.path.join(HERE, "testdata"))
    base = [sys.executable, os.path.join(HERE, "grid.py"), "--new-lib", lib, "--old-lib", copy,
            "--old-py", old_py, "--reps", "2", "--rounds", "2"]
    for extra, want in ((["--cells", "1x2x64x32c,1x2x40x64"], "1x2x40x64 "),
                        (["--cells", "1x2x64x32c", "--mode", "together"], "1x2x64x32c "),
                        (["--suite", "serving", "--cells", "B1 KV256 paged16,B2 KV64 contig"],
                         "B2 KV64 contig")):
        r = subprocess.run(base + extra, capture_output=True, text=True, env=env, timeout=600)
        row = [x for x in r.stdout.splitlines() if x.startswith(want)]
        ok(row and "-" not in row[0].split("|")[1].split()[:4] and "ok in" in r.stdout,
           f"grid.py {' '.join(extra)} on the stand-in: {r.stdout[-600:]} {r.stderr[-600:]}")
        ok("cudnn new in" in r.stdout or "cudnn:new" in r.stdout or "not timed" in r.stdout,
           "the CPU build's cudnn refusal is reported")
    js = json.load(open(os.path.join(tmp, "serving_old.json")))
    runs = js["rows"][0]["runs"]
    ok(runs["flash:old"]["status"] == "ok" and runs["flash:old"]["err"] < 1e-3 and
       runs["flash:old"]["timing"] == "events", "paged decode through the attn_seqs mirror")
    ok(js["libs"] == [os.path.realpath(copy)], "the old run mapped only the old library")
    r = subprocess.run(base + ["--suite", "serving", "--cells", "B1 KV256 contig", "--runs", "new"],
                       capture_output=True, text=True, timeout=600,
                       env=dict(env, TORCH_STANDIN_GRAPHS="1"))
    js = json.load(open(os.path.join(tmp, "serving_new.json")))
    run = js["rows"][0]["runs"]["flash:new"]
    ok(run.get("timing") == "graph" and 0.2 < run.get("ratio", 0) < 5,
       f"the graph-timed path (stand-in replays): {run} {r.stderr[-300:]}")


def test_cli(cli, tmp):
    env = dict(os.environ, AB_WORK=tmp, OUT=os.path.join(tmp, "out"))
    r = subprocess.run([sys.executable, os.path.join(HERE, "serving_cli.py"), "--device", "cpu",
                        "--old-cli", cli, "--new-cli", cli, "--batch", "1", "--kv", "256",
                        "--iters", "2", "--extra", "--copy-bw 4"],
                       capture_output=True, text=True, env=env)
    ok("B1 KV256 paged16" in r.stdout and "serving-cli not timed: cudnn" in r.stdout,
       f"serving_cli.py through the CLI on the CPU: {r.stdout[-400:]}")
    rows = [json.loads(x) for x in open(os.path.join(tmp, "serving_cli.jsonl"))]
    ok(any(x["result"].get("time_us") for x in rows), "serving_cli.jsonl holds the CLI's times")
    r = subprocess.run([sys.executable, os.path.join(HERE, "check.py"), "--device", "cpu",
                        "--quick", "--old-cli", cli, "--new-cli", cli,
                        "--extra", "--iters 2 --warmup 1 --copy-bw 4"],
                       capture_output=True, text=True, env=env)
    ok(r.returncode == 0 and "check flagged: none" in r.stdout,
       f"check.py through the CLI on the CPU: {r.stdout[-400:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", help="a libattnprof.so of this tree (CPU build is enough)")
    ap.add_argument("--cli", help="its attnprof CLI")
    opt = ap.parse_args()
    test_flags()
    test_logs()
    test_args()
    test_judge()
    test_seqs_mirror()
    with tempfile.TemporaryDirectory() as tmp:
        test_end_to_end(tmp)
    if opt.lib:
        test_packages(opt.lib)
        with tempfile.TemporaryDirectory() as tmp:
            test_workers(opt.lib, tmp)
    if opt.cli:
        with tempfile.TemporaryDirectory() as tmp:
            test_cli(opt.cli, tmp)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
