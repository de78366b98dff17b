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
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "schema",
                      "summary.schema.json")


def valid(doc):
    """summary --json obeys docs/schema/summary.schema.json (jsonschema: install-deps.sh)."""
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.Draft202012Validator(json.load(open(SCHEMA))).validate(doc)
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
SHIFT = 7000.5  # rank 1's clock runs this many us ahead


def run(*args, rc=0):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=120)
    if rc is not None and p.returncode != rc:
        raise AssertionError(f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {rc}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def rank_trace(rank, pid, device, nccl=True, calls=3, jitter=None):
    """attn_fwd calls of 2 kernels and one all-reduce; times on the rank's own clock.
    jitter(c): us added to the c-th all-reduce's end (ends that do not pair up)."""
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
                dur = 1000.0 * c + 500.0 - start + (jitter(c) if jitter else 0.0)
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
        ranges = text[:text.index("kernels per rank")]
        rows = [l.split() for l in ranges.splitlines() if l.strip().startswith(("0 ", "1 "))]
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

    def test_clocks_that_cannot_be_aligned_are_kept_and_said(self):
        # rank 1's all-reduces end at times no single offset maps onto rank 0's
        r0 = self.write("r0.json", rank_trace(0, 11, 0, calls=5))
        r1 = self.write("r1.json", rank_trace(1, 12, 1, calls=5, jitter=lambda c: [0, 3000, 9000, 400, 20000][c]))
        out = os.path.join(self.d.name, "merged.json")
        p = run("merge", "--out", out, r0, r1)
        said = p.stderr.strip().splitlines()
        self.assertEqual(len(said), 1, p.stderr)
        self.assertIn("rank 1: the clocks cannot be aligned", said[0])
        self.assertIn("kept", said[0])
        self.assertIn("rank 1:", p.stdout)
        self.assertIn("clock kept by +0.000 us", p.stdout)
        self.assertTrue(os.path.exists(out), "the merged trace is still written")
        # and the ends that do pair up report how close they came
        r1 = self.write("r1b.json", rank_trace(1, 12, 1, calls=5, jitter=lambda c: [0, 3, -2, 1, 0][c]))
        p = run("merge", "--out", out, r0, r1)
        self.assertEqual(p.stderr, "")
        self.assertIn(f"clock aligned by {-SHIFT:+.3f} us (ends then within a median of 1.000 us)", p.stdout)

    def test_per_rank_kernels_and_key_averages(self):
        docs = [rank_trace(0, 11, 0, calls=3), rank_trace(1, 12, 1, calls=4)]
        files = [self.write(f"r{r}.json", d) for r, d in enumerate(docs)]
        want = []  # per rank, counted from the events written above
        for d in docs:
            k = {}
            for e in d["traceEvents"]:
                if e["cat"] == "kernel":
                    c = k.setdefault(e["name"], [0, 0.0])
                    c[0] += 1
                    c[1] += e["dur"]
            want.append(k)
        text = run("summary", *files).stdout
        self.assertIn("kernels per rank", text)
        self.assertIn("key averages per rank", text)
        lines = text[text.index("kernels per rank"):text.index("key averages per rank")].splitlines()
        rows = [l.split() for l in lines[2:] if l.strip()]
        # the gemm group: its name on the first row, the second rank's row below it
        i = next(j for j, r in enumerate(rows) if r[0] == "gemm")
        self.assertEqual(rows[i][1:3], ["0", str(want[0]["gemm"][0])])
        self.assertEqual(rows[i + 1][0:2], ["1", str(want[1]["gemm"][0])])
        self.assertEqual(float(rows[i + 1][2]), round(want[1]["gemm"][1], 1))
        nccl = next(l for l in lines if l.startswith("ncclDevKernel"))
        self.assertTrue(nccl.rstrip().endswith("comm"), nccl)
        doc = json.loads(run("summary", *files, "--json").stdout)
        valid(doc)
        for r, rk in enumerate(doc["ranks"]):
            got = {k["name"]: [k["calls"], k["device_us_total"]] for k in rk["kernels"]}
            self.assertEqual(got.keys(), want[r].keys())
            for name, (calls, us) in want[r].items():
                self.assertEqual(got[name][0], calls)
                self.assertAlmostEqual(got[name][1], us, places=6)
            keys = {(k["cat"], k["name"]): k["calls"] for k in rk["key_averages"]}
            self.assertEqual(keys[("user_annotation", "attn_fwd")], 3 + r)
            self.assertEqual(keys[("cuda_runtime", "cudaLaunchKernel")], 3 * (3 + r))

    def test_a_merged_trace_gets_a_rank_per_process(self):
        docs = [rank_trace(0, 11, 0, calls=3), rank_trace(1, 12, 1, calls=4)]
        files = [self.write(f"r{r}.json", d) for r, d in enumerate(docs)]
        out = os.path.join(self.d.name, "merged.json")
        run("merge", "--out", out, *files)
        doc = json.loads(run("summary", out, "--json").stdout)
        valid(doc)
        self.assertEqual([rk["pid"] for rk in doc["ranks"]], [11, 12])
        for r, rk in enumerate(doc["ranks"]):
            fwd = next(x for x in rk["ranges"] if x["name"] == "attn_fwd")
            self.assertEqual((fwd["calls"], fwd["per_call"]["kernel"], fwd["per_call"]["comm"]), (3 + r, 2, 1))
            self.assertEqual(sum(k["calls"] for k in rk["kernels"]), 3 * (3 + r))
        self.assertEqual(next(s for s in doc["spread"] if s["name"] == "attn_fwd")["ranks"], 2)
        text = run("summary", out).stdout
        self.assertIn("rank 0: process 11", text)
        self.assertIn("rank 1: process 12", text)
        self.assertIn("kernels per rank", text)
        # one process: no per-rank section
        self.assertNotIn("per rank", run("summary", files[0]).stdout)
        self.assertNotIn("ranks", json.loads(run("summary", files[0], "--json").stdout))

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
