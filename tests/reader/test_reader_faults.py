#!/usr/bin/env python3
"""The reader's faults on traces from many processes (issue 16, part 6), each on
a small synthetic Kineto trace built here. The figures every test expects are
recounted from the trace events with Python (the rule of tests/reader: a GPU
event belongs to a range when its launch call starts inside the range on the
same thread of the same process), never taken from attnprof's output.

usage: test_reader_faults.py PATH_TO_ATTNPROF PATH_TO_READ_BOTH
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = None
READ_BOTH = None  # tests/reader/read_both.c


def run(*args, rc=0):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=120)
    if rc is not None and p.returncode != rc:
        raise AssertionError(f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {rc}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


class Trace:
    """Kineto-shaped events: host rows on (pid, tid), GPU rows on (device, stream)."""

    def __init__(self):
        self.events = []

    def range(self, pid, name, ts, dur, tid=1):
        self.events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": pid,
                            "tid": tid, "ts": ts, "dur": dur, "args": {}})

    def call(self, pid, name, ts, corr, tid=1, dur=2.0):
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": pid, "tid": tid,
                            "ts": ts, "dur": dur, "args": {"correlation": corr}})

    def kernel(self, device, name, ts, dur, corr, stream=7):
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": device,
                            "tid": stream, "ts": ts, "dur": dur,
                            "args": {"correlation": corr, "device": device, "stream": stream,
                                     "grid": [1, 1, 1], "block": [128, 1, 1]}})

    def launch(self, pid, device, ts, corr, kernel="k", kdur=10.0, tid=1):
        self.call(pid, "cudaLaunchKernel", ts, corr, tid)
        self.kernel(device, kernel, ts + 5, kdur, corr)

    def write(self, d, name="t.json"):
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": self.events}, f)
        return path


def truth(events, rng):
    """Per range name: calls and GPU events per call, by the reference rule:
    launches matched by (process, correlation), a GPU event counted once per
    call whose span holds its launch's start on the launching thread."""
    host = [e for e in events if e["cat"] == "user_annotation" and e["name"] == rng]
    launches = {}
    for e in events:
        if e["cat"] == "cuda_runtime":
            launches.setdefault(e["args"]["correlation"], []).append(e)
    n = dur = 0
    for g in events:
        if g["cat"] != "kernel":
            continue
        # the process whose launches ran on this device (each test keeps one device per process
        # where correlation ids collide, or says otherwise)
        cands = launches.get(g["args"]["correlation"], [])
        cands = [c for c in cands if c["ts"] <= g["ts"] and c.get("device", g["pid"]) == g["pid"]]
        if not cands:
            continue
        c = max(cands, key=lambda c: c["ts"])
        if any(h["pid"] == c["pid"] and h["tid"] == c["tid"] and h["ts"] <= c["ts"] <= h["ts"] + h["dur"]
               for h in host):
            n += 1
            dur += g["dur"]
    return len(host), n, dur


def summary(path, *flags):
    return json.loads(run("summary", path, "--json", *flags).stdout)


def row(doc, name):
    rows = [r for r in doc["ranges"] if r["name"] == name]
    if len(rows) != 1:
        raise AssertionError(f"{len(rows)} rows named {name}: {[r['name'] for r in doc['ranges']]}")
    return rows[0]


class Faults(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def test_colliding_correlation_ids_of_two_processes(self):
        """Two ranks merged: the same correlation ids in both; rank 0 on device 0, rank 1 on 1.
        Rank 0 calls cudaStreamIsCapturing first, so its ids are one off rank 1's."""
        t = Trace()
        for pid, dev, t0 in ((100, 0, 0.0), (200, 1, 3.0)):
            t.range(pid, "attn_fwd", t0, 200.0)
            corr = 1
            if pid == 100:
                t.call(pid, "cudaStreamIsCapturing", t0 + 1, corr)
                corr += 1
            for j in range(3):
                t.launch(pid, dev, t0 + 10 + 20 * j, corr, kdur=100.0 + pid + j)
                corr += 1
        for e in t.events:  # the reference rule: this process's device
            if e["cat"] == "cuda_runtime":
                e["device"] = 0 if e["pid"] == 100 else 1
        path = t.write(self.dir.name)
        calls, n, dur = truth(t.events, "attn_fwd")
        r = row(summary(path), "attn_fwd")
        self.assertEqual(r["calls"], calls)
        self.assertEqual(r["per_call"]["kernel"], n / calls)
        self.assertAlmostEqual(r["per_call"]["device_us"], dur / calls, places=9)
        self.assertEqual(r["per_call"]["launch_api"], {"cudaLaunchKernel": n / calls})

    def test_colliding_ids_on_one_device_follow_time(self):
        """Two processes on one GPU, one after the other, ids restarting at 1."""
        t = Trace()
        for pid, t0 in ((100, 0.0), (200, 1000.0)):
            t.range(pid, "attn_fwd", t0, 200.0)
            if pid == 100:
                t.call(pid, "cudaGetDevice", t0 + 1, 1)
            for j in range(3):
                t.launch(pid, 0, t0 + 10 + 20 * j, 2 + j if pid == 100 else 1 + j)
        path = t.write(self.dir.name)
        calls, n, _ = truth(t.events, "attn_fwd")
        r = row(summary(path), "attn_fwd")
        self.assertEqual(r["per_call"]["kernel"], n / calls)
        self.assertEqual(r["per_call"]["launch_api"], {"cudaLaunchKernel": n / calls})

    def test_overlapping_ranges_without_nesting(self):
        t = Trace()
        t.range(1, "attn_fwd", 0.0, 100.0)
        t.range(1, "other", 50.0, 100.0)  # starts inside attn_fwd, ends after it
        for j, ts in enumerate((10.0, 60.0, 70.0, 120.0)):
            t.launch(1, 0, ts, j + 1)
        path = t.write(self.dir.name)
        doc = summary(path)
        for name in ("attn_fwd", "other"):
            calls, n, _ = truth(t.events, name)
            self.assertEqual(row(doc, name)["per_call"]["kernel"], n / calls, name)
        self.assertEqual(truth(t.events, "attn_fwd")[1], 3)  # the test's own premise
        self.assertEqual(doc["links"]["crossing_ranges"], 1)
        self.assertIn("overlap without nesting", run("summary", path).stdout)

    def test_unmatched_kernels_and_launches_are_counted(self):
        t = Trace()
        t.range(1, "attn_fwd", 0.0, 100.0)
        t.launch(1, 0, 10.0, 1)
        t.kernel(0, "orphan", 30.0, 5.0, 99)  # no launch has id 99
        t.call(1, "cudaLaunchKernel", 40.0, 50)  # no GPU work has id 50
        t.call(1, "cudaGetDevice", 45.0, 51)  # not a launch: not counted
        path = t.write(self.dir.name)
        doc = summary(path)
        self.assertEqual(doc["links"]["gpu_without_launch"], 1)
        self.assertEqual(doc["links"]["launches_without_gpu"], 1)
        text = run("summary", path).stdout
        self.assertIn("1 GPU event(s) matched no launch call", text)
        self.assertIn("1 launch call(s) had no GPU work", text)

    def test_json_numbers_at_full_precision(self):
        t = Trace()
        t.range(1, "attn_fwd", 0.0, 3000.0)
        t.launch(1, 0, 10.0, 1, kdur=2617.851)
        for j in range(5):  # a total far above a million microseconds
            t.launch(1, 0, 4000.0 + j * 10, 2 + j, kernel="long", kdur=2410922.469)
        path = t.write(self.dir.name)
        doc = summary(path)
        self.assertEqual(row(doc, "attn_fwd")["per_call"]["device_us"], 2617.851)
        longk = next(k for k in doc["kernels"] if k["name"] == "long")
        self.assertAlmostEqual(longk["device_us_total"], 5 * 2410922.469, delta=1e-6)
        self.assertEqual(longk["device_us_avg"], 2410922.469)

    def test_nested_ranges_of_one_name_agree_with_the_kernel_table(self):
        """Rule: a range inside a range of the same name is part of that call."""
        t = Trace()
        t.range(1, "attn_fwd", 0.0, 100.0)
        t.range(1, "attn_fwd", 10.0, 40.0)
        t.launch(1, 0, 20.0, 1)
        t.launch(1, 0, 60.0, 2)
        path = t.write(self.dir.name)
        doc = summary(path, "--range", "attn_fwd")
        r = row(doc, "attn_fwd")
        in_table = sum(k["calls"] for k in doc["kernels"])
        self.assertEqual(in_table, 2)
        self.assertEqual(r["calls"], 1)
        self.assertEqual(r["per_call"]["kernel"] * r["calls"], in_table)
        self.assertAlmostEqual(r["per_call"]["host_us"], 100.0)

    def test_profiler_steps_merge_by_default(self):
        t = Trace()
        for s in range(5):
            t.range(1, f"ProfilerStep#{s + 3}", s * 100.0, 90.0)
            t.launch(1, 0, s * 100.0 + 10, s + 1)
        path = t.write(self.dir.name)
        doc = summary(path)
        names = [r["name"] for r in doc["ranges"]]
        self.assertEqual(names, ["ProfilerStep#N"])
        self.assertEqual(row(doc, "ProfilerStep#N")["calls"], 5)
        self.assertEqual(row(doc, "ProfilerStep#N")["per_call"]["kernel"], 1)
        names = [r["name"] for r in summary(path, "--per-step")["ranges"]]
        self.assertEqual(names, [f"ProfilerStep#{s + 3}" for s in range(5)])
        diff = json.loads(run("diff", path, path, "--json").stdout)
        self.assertEqual([r["name"] for r in diff["ranges"]], ["ProfilerStep#N"])

    def test_nul_inside_a_name_keeps_names_apart(self):
        t = Trace()
        t.range(1, "attn_fwd", 0.0, 100.0)
        t.launch(1, 0, 10.0, 1, kernel="k\u0000a")
        t.launch(1, 0, 30.0, 2, kernel="k\u0000b")
        path = t.write(self.dir.name)
        names = sorted(k["name"] for k in summary(path)["kernels"])
        self.assertEqual(len(names), 2, names)
        self.assertNotEqual(names[0], names[1])
        self.assertTrue(all(n.startswith("k") and len(n) > 1 for n in names), names)


class Tokenizer(unittest.TestCase):
    """The fast tokenizer (chrome_scan.c) and yajl (the reader's testing
    surface, through read_both) read alike: status, error line, counts and
    every event."""

    def both(self, path, *args):
        p = subprocess.run([READ_BOTH, path], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, f"{path}: {p.stdout}{p.stderr}")
        p = subprocess.run([ATTNPROF, "summary", path, "--json", *args], capture_output=True,
                           text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def test_fixtures(self):
        fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "prof", "fixtures")
        names = [f for f in os.listdir(fixtures) if f.endswith(".json")]
        self.assertGreater(len(names), 3)
        for f in names:
            self.assertEqual(self.both(os.path.join(fixtures, f))[0], 0, f)

    def test_escapes_numbers_and_piece_boundaries(self):
        """Several MB, so tokens straddle the 1 MiB pieces at many places."""
        t = Trace()
        names = ["plain", "q\"uote\\back/slash", "tab\tnl\ncr\r", "\u00e9\u4e2d\ud83d\ude00",
                 "ctl\u0001\u001f", "k\u0000nul", "<script>"]
        ts = 0.0
        for i in range(30000):
            t.range(1, "attn_fwd", ts, 90.0)
            t.launch(1, 0, ts + 1, i + 1, kernel=names[i % len(names)] + "x" * (i % 97), kdur=1.5e1)
            ts += 100.0
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        path = t.write(d.name)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:  # numbers in every JSON form, odd spacing
            f.write(text.replace('"dur": 15.0', '"dur" :1.5E+1 ').replace('"tid": 1,', '"tid":\t1 ,'))
        rc, out, _ = self.both(path)
        self.assertEqual(rc, 0)
        doc = json.loads(out)
        self.assertEqual(row(doc, "attn_fwd")["calls"], 30000)
        self.assertEqual(len(doc["kernels"]), len({n + "x" * (i % 97) for i in range(30000)
                                                   for n in [names[i % len(names)]]}))

    def test_bad_documents_say_the_same(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        for i, bad in enumerate([b'{"traceEvents": [}', b'{"traceEvents": []} {', b"",
                                 b'{"traceEvents": [{"name": "a\x01b"}]}', b'[1, 2,]',
                                 b'{"traceEvents": [{"name": "\\ud800"}]}', b"[01]", b"[1.]",
                                 b"[tru]", b'{"a" 1}', b"[" * 5000]):
            path = os.path.join(d.name, f"bad{i}.json")
            with open(path, "wb") as f:
                f.write(bad)
            self.both(path)


class ReportDistribution(unittest.TestCase):
    """The HTML report's device time per call: nearest-rank percentiles, slowest calls."""

    def test_percentiles_and_slowest(self):
        import math
        import random
        random.seed(3)
        t = Trace()
        per_call = []
        for c in range(37):
            t0 = c * 1000.0
            t.range(1, "attn_fwd", t0, 900.0)
            durs = [round(random.uniform(5, 300), 3) for _ in range(1 + c % 3)]
            for j, d in enumerate(durs):
                t.launch(1, 0, t0 + 10 + 20 * j, 100 * c + j + 1, kdur=d)
            per_call.append(sum(durs))
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        path, html = t.write(d.name), os.path.join(d.name, "r.html")
        run("report", "--html", html, path)
        page = open(html, encoding="utf-8").read()
        asc = sorted(per_call)
        want = {p: asc[max(1, math.ceil(p / 100 * len(asc))) - 1] for p in (50, 90, 99)}
        div = page.split('<div class="dist"', 1)[1].split(">", 1)[0]
        attrs = dict(a.split("=", 1) for a in div.split())
        self.assertEqual(int(attrs["data-calls"].strip('"')), 37)
        for p in (50, 90, 99):
            self.assertAlmostEqual(float(attrs[f"data-p{p}-us"].strip('"')), want[p], places=6)
        slow = page.split('<table class="slowest">', 1)[1].split("</table>", 1)[0]
        rows = [r for r in slow.split("<tr>")[2:]]
        self.assertEqual(len(rows), 10)  # the 10 slowest, each with its timeline
        top = float(rows[0].split("<td>")[2].split("</td>")[0])
        self.assertAlmostEqual(top, asc[-1], places=3)
        hist = page.split('<svg class="hist"', 1)[1].split("</svg>", 1)[0]
        self.assertEqual(hist.count("<rect"), 20)
        self.assertEqual(sum(int(b.split(": ")[1].split(" calls")[0])
                             for b in hist.split("<title>")[1:]), 37)


class Graphs(unittest.TestCase):
    """Kernels replayed by a CUDA graph share the graph launch's correlation id."""

    def test_graph_kernels_count_per_forward_and_are_said_apart(self):
        t = Trace()
        for call in range(2):
            t0 = call * 1000.0
            t.range(1, "attn_fwd", t0, 500.0)
            t.launch(1, 0, t0 + 5, 100 * call + 1, kernel="eager")
            corr = 100 * call + 2
            t.call(1, "cudaGraphLaunch", t0 + 20, corr)
            for j, name in enumerate(("gemm", "softmax", "gemm2")):
                t.kernel(0, name, t0 + 40 + 30 * j, 20.0, corr)
                t.events[-1]["args"]["graph id"] = 7
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        path = t.write(d.name)
        doc = summary(path)
        calls, n, _ = truth(t.events, "attn_fwd")
        r = row(doc, "attn_fwd")
        self.assertEqual(r["per_call"]["kernel"], n / calls)
        graph = sum(1 for e in t.events if e["cat"] == "kernel" and "graph id" in e["args"])
        self.assertEqual(r["per_call"]["graph"], graph / calls)
        self.assertEqual(r["per_call"]["launch_api"],
                         {"cudaLaunchKernel": 1.0, "cudaGraphLaunch": graph / calls})
        by_name = {k["name"]: k for k in doc["kernels"]}
        self.assertEqual(by_name["gemm"]["graph_calls"], 2)
        self.assertEqual(by_name["eager"]["graph_calls"], 0)
        self.assertIn("from CUDA graphs", run("summary", path).stdout)


def main():
    global ATTNPROF, READ_BOTH
    ATTNPROF, READ_BOTH = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)


if __name__ == "__main__":
    main()
