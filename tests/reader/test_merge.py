#!/usr/bin/env python3
"""attnprof merge and the per-rank summary (issue 16, part 4) on synthetic
per-rank traces built here: two ranks whose pids, devices and correlation ids
collide, whose clocks differ by a known shift, and who end each all-reduce
together. Expected figures are computed here from the events.

usage: test_merge.py PATH_TO_ATTNPROF
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = None
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SHIFT = 7000.5  # rank 1's clock runs this many us ahead


def run(*args, rc=0):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=120)
    if rc is not None and p.returncode != rc:
        raise AssertionError(f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {rc}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def rank_trace(rank, pid, device, nccl=True, calls=3):
    """attn_fwd calls of 2 kernels and one all-reduce; times on the rank's own clock."""
    ev, corr = [], 0
    shift = SHIFT * rank
    for c in range(calls):
        t0 = 1000.0 * c + 10.0 * rank  # ranks start their calls a little apart
        ev.append({"ph": "X", "cat": "user_annotation", "name": "attn_fwd", "pid": pid, "tid": pid,
                   "ts": t0 + shift, "dur": 600.0 + 50 * rank, "args": {}})
        for j, (name, dur) in enumerate((("gemm", 100.0 + rank), ("softmax", 20.0),
                                         (NCCL, None)) if nccl else (("gemm", 100.0 + rank), ("softmax", 20.0))):
            corr += 1
            lts = t0 + 10 + 20 * j
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid,
                       "tid": pid, "ts": lts + shift, "dur": 5.0, "args": {"correlation": corr}})
            start = lts + 30
            if dur is None:  # the all-reduce ends at one true instant on every rank
                dur = 1000.0 * c + 500.0 - start
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": device, "tid": 7,
                       "ts": start + shift, "dur": dur,
                       "args": {"correlation": corr, "device": device, "stream": 7}})
    return {"traceEvents": ev}


class Merge(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.TemporaryDirectory()
        self.addCleanup(self.d.cleanup)

    def write(self, name, doc):
        path = os.path.join(self.d.name, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_two_ranks_one_timeline(self):
        # the worst case: same pid and device in both files (two containers, one GPU each)
        r0 = self.write("r0.json", rank_trace(0, 4242, 0))
        r1 = self.write("r1.json", rank_trace(1, 4242, 0))
        out = os.path.join(self.d.name, "merged.json")
        p = run("merge", "--out", out, r0, r1)
        self.assertIn("rank 1:", p.stdout)
        self.assertIn(f"clock aligned by {-SHIFT:+.3f} us", p.stdout)
        ev = json.load(open(out))["traceEvents"]
        nccl = [e for e in ev if e.get("name") == NCCL]
        self.assertEqual(len(nccl), 6)
        by_pid = {}
        for e in nccl:
            by_pid.setdefault(e["pid"], []).append(round(e["ts"] + e["dur"], 3))
        self.assertEqual(len(by_pid), 2, "each rank's GPU in lanes of its own")
        a, b = (sorted(v) for v in by_pid.values())
        self.assertEqual(a, b, "collective ends aligned")
        hosts = {e["pid"] for e in ev if e.get("cat") == "user_annotation"}
        self.assertEqual(len(hosts), 2, "each rank's process in lanes of its own")
        doc = json.loads(run("summary", out, "--json").stdout)
        r = next(r for r in doc["ranges"] if r["name"] == "attn_fwd")
        self.assertEqual(r["calls"], 6)
        self.assertEqual(r["per_call"]["kernel"], 2)
        self.assertEqual(r["per_call"]["comm"], 1)
        self.assertEqual(doc["links"]["ambiguous"], 0)
        self.assertEqual(doc["links"]["gpu_without_launch"], 0)

    def test_per_rank_figures_and_spread(self):
        r0 = self.write("r0.json", rank_trace(0, 11, 0))
        r1 = self.write("r1.json", rank_trace(1, 12, 1))
        text = run("summary", r0, r1).stdout
        self.assertIn("range attn_fwd", text)
        rows = [l.split() for l in text.splitlines() if l.strip().startswith(("0 ", "1 "))]
        self.assertEqual(len(rows), 2, text)
        host = [float(r[-1]) for r in rows]
        self.assertEqual(host, [600.0, 650.0])  # each rank's own host time per call
        self.assertIn("spread of host us/call: min 600.0, max 650.0, max-min 50.0", text)
        doc = json.loads(run("summary", r0, r1, "--json").stdout)
        self.assertEqual([r["file"] for r in doc["ranks"]], [r0, r1])
        self.assertEqual([r["ranges"][0]["per_call"]["host_us"] for r in doc["ranks"]], [600, 650])
        s = next(s for s in doc["spread"] if s["name"] == "attn_fwd")
        self.assertEqual((s["ranks"], s["host_us_min"], s["host_us_max"]), (2, 600, 650))

    def test_a_rank_without_collectives_is_said_and_still_merged(self):
        r0 = self.write("r0.json", rank_trace(0, 11, 0))
        r1 = self.write("r1.json", rank_trace(1, 12, 1, nccl=False))
        out = os.path.join(self.d.name, "merged.json")
        p = run("merge", "--out", out, r0, r1)
        self.assertIn("rank 1: no NCCL collectives in this trace", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("clock kept", p.stdout)
        self.assertTrue(os.path.exists(out))

    def test_bad_input(self):
        r0 = self.write("r0.json", rank_trace(0, 11, 0))
        p = run("merge", "--out", os.path.join(self.d.name, "m.json"), r0, rc=2)
        self.assertIn("two traces or more", p.stderr)
        bad = self.write("bad.json", {"a": 1})
        p = run("merge", "--out", os.path.join(self.d.name, "m.json"), r0, bad, rc=2)
        self.assertFalse(os.path.exists(os.path.join(self.d.name, "m.json")))


def main():
    global ATTNPROF
    ATTNPROF = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)


if __name__ == "__main__":
    main()
