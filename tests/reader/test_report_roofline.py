#!/usr/bin/env python3
"""The report's roofline, offline: attnprof compare and run on the CPU write
each backend's roofline point into the trace (its group annotation's args:
flops and bytes of one forward, time per forward, the two roofs); attnprof
report reads them back, from Chrome JSON and from pftrace, and draws one dot
per backend under the two roofs.

Checked in the page (Python's html.parser): one dot per backend that ran,
each at the intensity (flops / bytes) and TFLOP/s (flops / time) recomputed
here from the trace file's args; dots ordered on the page as those figures
are; the roofs at the figures given (--copy-bw, --peak-tflops) and meeting at
the ridge; no roofline for a trace without points (an H200 fixture).

usage: test_report_roofline.py ATTNPROF FIXTURE_DIR
"""
import html.parser
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = FIXTURES = None
PROBLEM = ["--shape", "1x2x67x24", "--iters", "3", "--warmup", "1", "--threads", "1",
           "--copy-bw", "10", "--peak-tflops", "0.2"]


def run(*args):
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tempfile.gettempdir(), "attnprof-test"))
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=600, env=env)
    if p.returncode:
        raise AssertionError(f"attnprof {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


class Svg(html.parser.HTMLParser):
    """The roofline svg's circles and roof lines, as attribute dicts."""

    def __init__(self):
        super().__init__()
        self.inside, self.svgs, self.points, self.roofs = False, 0, [], {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and a.get("class") == "roofline":
            self.inside, self.svgs = True, self.svgs + 1
        elif self.inside and tag == "circle" and a.get("class") == "point":
            self.points.append(a)
        elif self.inside and tag == "line" and "roof" in a.get("class", "").split():
            self.roofs[a["class"].split()[1]] = a

    def handle_endtag(self, tag):
        if tag == "svg":
            self.inside = False


def page(trace, work):
    out = os.path.join(work, "r.html")
    run("report", "--html", out, trace)
    s = Svg()
    with open(out, encoding="utf-8") as f:
        s.feed(f.read())
    return s


def points_in(trace_json):
    """(backend, intensity, tflops) of every group annotation with a point."""
    pts = {}
    for e in trace_json["traceEvents"]:
        a = e.get("args", {})
        if e.get("cat") == "user_annotation" and "time per forward (us)" in a:
            self_check = (a["copy roof (GB/s)"], a["matmul peak (TFLOP/s)"])
            assert self_check == (10, 0.2), self_check
            pts[e["name"]] = (a["flops"] / a["bytes"], a["flops"] / (a["time per forward (us)"] * 1e6))
    return pts


class Roofline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.json_path = os.path.join(cls.tmp.name, "compare.json")
        cls.pf_path = os.path.join(cls.tmp.name, "compare.pftrace")
        doc = json.loads(run("compare", *PROBLEM, "--json", "--trace", cls.json_path).stdout)
        cls.ran = {b["name"] for b in doc["backends"] if b["status"] == "ok"}
        run("compare", *PROBLEM, "--trace", cls.pf_path)
        with open(cls.json_path) as f:
            cls.want = points_in(json.load(f))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check_page(self, s, want):
        self.assertEqual(s.svgs, 1)
        self.assertEqual(len(s.points), len(want))
        got = sorted((float(p["data-intensity"]), float(p["data-tflops"])) for p in s.points)
        for (gi, gt), (wi, wt) in zip(got, sorted(want.values())):
            self.assertTrue(math.isclose(gi, wi, rel_tol=1e-9), (gi, wi))
            self.assertTrue(math.isclose(gt, wt, rel_tol=1e-9), (gt, wt))
        # higher TFLOP/s is higher on the page (smaller y); more flop/byte further right
        by_t = sorted(s.points, key=lambda p: float(p["data-tflops"]))
        self.assertTrue(all(float(a["cy"]) >= float(b["cy"]) for a, b in zip(by_t, by_t[1:])))
        by_i = sorted(s.points, key=lambda p: float(p["data-intensity"]))
        self.assertTrue(all(float(a["cx"]) <= float(b["cx"]) for a, b in zip(by_i, by_i[1:])))
        mem, comp = s.roofs["roof-memory"], s.roofs["roof-compute"]
        self.assertEqual(float(mem["data-gbps"]), 10)
        self.assertEqual(float(comp["data-tflops"]), 0.2)
        self.assertEqual((mem["x2"], mem["y2"]), (comp["x1"], comp["y1"]))  # the ridge
        self.assertEqual(comp["y1"], comp["y2"])  # the compute roof is flat
        self.assertLess(float(mem["y2"]), float(mem["y1"]))  # the memory roof rises

    def test_trace_carries_a_point_per_backend(self):
        self.assertEqual(set(self.want), self.ran)
        self.assertGreaterEqual(len(self.ran), 2)

    def test_page_from_chrome_json(self):
        self.check_page(page(self.json_path, self.tmp.name), self.want)

    def test_page_from_pftrace(self):
        # another compare run: same bytes and flops, its own times; the page
        # draws what that file holds, so only counts and roofs are compared
        s = page(self.pf_path, self.tmp.name)
        self.assertEqual(len(s.points), len(self.want))
        self.assertEqual(float(s.roofs["roof-memory"]["data-gbps"]), 10)
        self.assertEqual(sorted(round(float(p["data-intensity"]), 9) for p in s.points),
                         sorted(round(i, 9) for i, _ in self.want.values()))

    def test_run_trace_has_one_point(self):
        path = os.path.join(self.tmp.name, "run.json")
        run("run", "--backend", "flash", *PROBLEM, "--trace", path)
        with open(path) as f:
            want = points_in(json.load(f))
        self.assertEqual(set(want), {"flash"})
        self.check_page(page(path, self.tmp.name), want)

    def test_no_roofline_without_points(self):
        s = page(os.path.join(FIXTURES, "trace_flash.json"), self.tmp.name)
        self.assertEqual(s.svgs, 0)


if __name__ == "__main__":
    ATTNPROF, FIXTURES = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main(verbosity=2)
