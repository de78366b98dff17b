#!/usr/bin/env python3
"""attnprof trace over a launcher and its workers, without a GPU (issue 16):
how each child process ended is said in one line, and its trace is written.

A stand-in for torchrun starts two workers that leave, under the names the
injected collector uses (ATTNPROF_TRACE_OUT.<pid>, ATTNPROF_TRACE_REPORT.<pid>,
see src/prof/inject/inject_report.h), a finished trace and a report, as a
rank does that exits 0, exits with status 3 mid-run, or is killed by
SIGTERM. No CUDA is loaded, so any readable file stands in for the
injection library.

usage: test_trace_children.py PATH_TO_ATTNPROF
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = None

WORKERS = r'''
import json, os, subprocess, sys
if sys.argv[1] == "launcher":
    kids = [subprocess.Popen([sys.executable, __file__, "worker", str(r), sys.argv[2]]) for r in (0, 1)]
    sys.exit(1 if any(k.wait() for k in kids) else 0)
rank, end = int(sys.argv[2]), sys.argv[3]
pid = os.getpid()
ev = []
for c in range(3):
    t = 1000.0 * c
    ev += [{"ph": "X", "cat": "user_annotation", "name": "step", "pid": pid, "tid": pid, "ts": t, "dur": 500.0},
           {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid,
            "ts": t + 10, "dur": 5.0, "args": {"correlation": c + 1}},
           {"ph": "X", "cat": "kernel", "name": "k", "pid": rank, "tid": 7, "ts": t + 30, "dur": 50.0,
            "args": {"correlation": c + 1, "device": rank, "stream": 7}}]
json.dump({"traceEvents": ev}, open(os.environ["ATTNPROF_TRACE_OUT"] + f".{pid}", "w"))
status = 0 if rank == 0 else {"exit3": 3, "sigterm": -1}[end]
signal = 15 if rank == 1 and end == "sigterm" else 0
with open(os.environ["ATTNPROF_TRACE_REPORT"] + f".{pid}", "w") as f:
    f.write(f"pid={pid}\nsafe_offset=0\nevents={len(ev)}\ndropped=0\nclosed=1\nsignal={signal}\n"
            f"exit_status={status}\nrank={rank}\n")
print(f"worker rank {rank} pid {pid}", flush=True)
sys.exit(max(status, 0))
'''


class TraceChildren(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.TemporaryDirectory()
        self.addCleanup(self.d.cleanup)
        self.prog = os.path.join(self.d.name, "launcher.py")
        with open(self.prog, "w") as f:
            f.write(WORKERS)

    def trace(self, end):
        out = os.path.join(self.d.name, "t.json")
        e = dict(os.environ, ATTNPROF_INJECT_LIB=self.prog)
        p = subprocess.run([ATTNPROF, "trace", "--out", out, "--", sys.executable, self.prog, "launcher", end],
                           capture_output=True, text=True, timeout=120, env=e)
        pids = {int(r): int(pid) for r, pid in re.findall(r"worker rank (\d) pid (\d+)", p.stdout)}
        self.assertEqual(sorted(pids), [0, 1], p.stdout + p.stderr)
        return p, pids, out

    def events_in(self, path):
        return sum(e.get("ph") == "X" for e in json.load(open(path))["traceEvents"])

    def lines_of(self, text, pid):
        return [l for l in text.splitlines() if f"child process {pid} " in l]

    def test_a_rank_that_exits_3_is_said_in_one_line(self):
        p, pids, out = self.trace("exit3")
        self.assertEqual(p.returncode, 1, "the launcher's status")
        t0, t1 = (out[:-5] + f".{pids[r]}.json" for r in (0, 1))
        said0 = self.lines_of(p.stdout, pids[0])
        self.assertEqual(len(said0), 1, p.stdout)
        self.assertEqual(said0[0], f"attnprof trace: child process {pids[0]} (rank 0) exited with status 0; "
                                   f"trace {t0} ({self.events_in(t0)} events)")
        said1 = self.lines_of(p.stderr, pids[1])
        self.assertEqual(said1, [f"attnprof: child process {pids[1]} (rank 1) exited with status 3; its trace "
                                 f"{t1} keeps the {self.events_in(t1)} events it flushed"], p.stderr)
        self.assertEqual(self.lines_of(p.stdout, pids[1]), [])
        self.assertIn("used no CUDA itself; 2 child process trace(s)", p.stdout)
        self.assertFalse(os.path.exists(out), "the launcher wrote no trace of its own")
        doc = json.loads(subprocess.run([ATTNPROF, "summary", t1, "--json"], capture_output=True,
                                        text=True, check=True).stdout)
        step = next(r for r in doc["ranges"] if r["name"] == "step")
        self.assertEqual((step["calls"], step["per_call"]["kernel"]), (3, 1), "what it flushed is read")

    def test_a_rank_killed_by_sigterm_is_said_in_one_line(self):
        p, pids, out = self.trace("sigterm")
        t1 = out[:-5] + f".{pids[1]}.json"
        said1 = self.lines_of(p.stdout + p.stderr, pids[1])
        self.assertEqual(len(said1), 1, p.stdout + p.stderr)
        self.assertIn(f"child process {pids[1]} (rank 1) was killed by signal 15", said1[0])
        self.assertIn(f"its trace {t1} keeps the {self.events_in(t1)} events", said1[0])


if __name__ == "__main__":
    ATTNPROF = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
