#!/usr/bin/env python3
"""The roofline of every run/compare row, on the CPU: the copy bandwidth kept
in its cache file, --copy-bw and --peak-tflops, the roof word recomputed here
from the row's bytes and flops and the two roofs, and compare --serving.

Every run gets its own XDG_CACHE_HOME, so nothing is read from or written to
the user's cache. --threads 1: the host's copy roof is a one-thread memcpy, so
the backends run on one thread too.

usage: test_roofline.py PATH_TO_ATTNPROF
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = None
SMALL = ["--shape", "1x2x67x24", "--iters", "3", "--warmup", "1", "--threads", "1"]
# A stated compute roof for the test: one core's f32 FMA peak, AVX-512 with two
# FMA units at about 3 GHz (2 x 16 lanes x 2 flops x 3e9 = 0.19 TFLOP/s).
CORE_PEAK = "0.2"
ROW_KEYS = ("bytes", "gbps", "flops", "tflops", "copy_gbps", "copy_frac", "peak_tflops",
            "peak_frac", "roof")


def run(cache, *args, check_rc=0):
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=600, env=env)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {check_rc}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def roof_word(row):
    """memory when moving the bytes at the copy roof takes longer than the
    flops at the matmul peak."""
    t_mem = row["bytes"] / (row["copy_gbps"] * 1e9)
    t_flop = row["flops"] / (row["peak_tflops"] * 1e12)
    return "memory" if t_mem > t_flop else "compute"


class Cache(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cache = self.tmp.name
        self.file = os.path.join(self.cache, "attnprof", "bandwidth.json")

    def tearDown(self):
        self.tmp.cleanup()

    def test_measured_once_then_kept(self):
        first = json.loads(run(self.cache, "run", "--backend", "flash", *SMALL, "--json").stdout)
        self.assertIn("measured now", first["roofline"]["copy_source"])
        with open(self.file) as f:
            kept = json.load(f)
        self.assertEqual(len(kept), 1)
        key, entry = next(iter(kept.items()))
        self.assertTrue(key.startswith("cpu: "), key)
        self.assertGreater(entry["copy_gbps"], 0)
        self.assertAlmostEqual(entry["copy_gbps"], first["roofline"]["copy_gbps"], places=6)
        # no temporary file left beside it
        self.assertEqual(os.listdir(os.path.dirname(self.file)), ["bandwidth.json"])
        second = json.loads(run(self.cache, "run", "--backend", "flash", *SMALL, "--json").stdout)
        self.assertIn("measured earlier", second["roofline"]["copy_source"])
        self.assertEqual(second["roofline"]["copy_gbps"], first["roofline"]["copy_gbps"])
        b = second["backend"]
        self.assertAlmostEqual(b["copy_frac"], b["gbps"] / b["copy_gbps"], places=9)

    def test_a_kept_figure_is_used_as_is(self):
        run(self.cache, "run", "--backend", "flash", *SMALL, "--json")
        with open(self.file) as f:
            kept = json.load(f)
        key = next(iter(kept))
        kept[key]["copy_gbps"] = 1234.5
        with open(self.file, "w") as f:
            json.dump(kept, f)
        doc = json.loads(run(self.cache, "run", "--backend", "flash", *SMALL, "--json").stdout)
        self.assertEqual(doc["roofline"]["copy_gbps"], 1234.5)
        self.assertEqual(doc["backend"]["copy_gbps"], 1234.5)

    def test_copy_bw_overrides_and_writes_nothing(self):
        doc = json.loads(run(self.cache, "run", "--backend", "math", *SMALL, "--copy-bw", "12.5",
                             "--json").stdout)
        self.assertEqual(doc["roofline"]["copy_source"], "--copy-bw")
        b = doc["backend"]
        self.assertEqual(b["copy_gbps"], 12.5)
        self.assertAlmostEqual(b["copy_frac"], b["gbps"] / 12.5, places=9)
        self.assertFalse(os.path.exists(self.file))

    def test_cpu_peak_is_unknown_unless_given(self):
        doc = json.loads(run(self.cache, "run", "--backend", "flash", *SMALL, "--copy-bw", "10",
                             "--json").stdout)
        b = doc["backend"]
        self.assertIsNone(doc["roofline"]["peak_tflops"])
        self.assertIsNone(b["peak_frac"])
        self.assertEqual(b["roof"], "unknown")
        given = json.loads(run(self.cache, "run", "--backend", "flash", *SMALL, "--copy-bw", "10",
                               "--peak-tflops", CORE_PEAK, "--json").stdout)["backend"]
        self.assertEqual(given["roof"], roof_word(given))
        self.assertAlmostEqual(given["peak_frac"], given["tflops"] / float(CORE_PEAK), places=9)

    def test_compare_rows_and_text(self):
        doc = json.loads(run(self.cache, "compare", *SMALL, "--peak-tflops", CORE_PEAK,
                             "--json").stdout)
        for b in doc["backends"]:
            for k in ROW_KEYS:
                self.assertIn(k, b, b["name"])
            self.assertEqual(b["roof"], roof_word(b), b["name"])
        out = run(self.cache, "compare", *SMALL, "--peak-tflops", CORE_PEAK).stdout
        for word in ("%copy", "TFLOP/s", "%peak", "roof", "roofs: copy", "kept in"):
            self.assertIn(word, out)

    def test_bad_values(self):
        for opt, v in (("--copy-bw", "0"), ("--copy-bw", "fast"), ("--peak-tflops", "-1")):
            p = run(self.cache, "run", *SMALL, opt, v, check_rc=2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(opt, p.stderr)
            self.assertEqual(p.stdout, "")


class Serving(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        args = ["compare", "--serving", "--iters", "2", "--warmup", "0", "--threads", "1",
                "--peak-tflops", CORE_PEAK]
        cls.doc = json.loads(run(cls.tmp.name, *args, "--json").stdout)
        cls.text = run(cls.tmp.name, *args, "--copy-bw", "10").stdout

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_grid(self):
        self.assertEqual(self.doc["grid"], "scaled-down for the CPU")
        cells = {(r["cell"]["B"], r["cell"]["H"], r["cell"]["H_kv"], r["cell"]["S_k"],
                  r["cell"]["page_size"]) for r in self.doc["rows"]}
        want = {(b, hq, 2, kv, p) for b in (1, 4) for kv in (256, 1024) for hq in (8, 16)
                for p in (16, 64)}
        self.assertEqual(cells, want)
        names = {r["name"] for r in self.doc["rows"]}
        self.assertTrue({"flash", "math"} <= names, names)
        self.assertEqual(len(self.doc["rows"]), len(want) * len(names))
        for r in self.doc["rows"]:
            self.assertEqual((r["cell"]["S_q"], r["cell"]["D"]), (1, 128))

    def test_rows(self):
        ok = [r for r in self.doc["rows"] if r["status"] == "ok"]
        self.assertTrue(any(r["name"] == "flash" for r in ok))
        for r in ok:
            c = r["cell"]
            for k in ROW_KEYS:
                self.assertIn(k, r, r["name"])
            what = f"{r['name']} {c}"
            self.assertTrue(0 < r["copy_frac"] < 1.5, f"{what}: copy_frac {r['copy_frac']}")
            self.assertTrue(0 < r["peak_frac"] < 1.5, f"{what}: peak_frac {r['peak_frac']}")
            self.assertAlmostEqual(r["copy_frac"], r["gbps"] / r["copy_gbps"], places=9)
            self.assertEqual(r["roof"], roof_word(r), what)
            # one new token, no causal mask: 4 B Hq KV D flops; K and V read at least once (bf16)
            self.assertEqual(r["flops"], 4 * c["B"] * c["H"] * c["S_k"] * 128)
            self.assertGreaterEqual(r["bytes"], 2 * c["B"] * c["H_kv"] * c["S_k"] * 128 * 2)

    def test_text(self):
        self.assertIn("scaled-down grid", self.text)
        self.assertIn("roofs: copy 10.0 GB/s (--copy-bw)", self.text)
        self.assertIn("tables checked once before timing, then passed trusted", self.text)
        self.assertRegex(self.text, r"grid: 16 cells in [0-9.]+ s")
        rows = [l for l in self.text.splitlines() if l.split()[:1] and l.split()[0] in ("1", "4")]
        self.assertEqual(len(rows), len(self.doc["rows"]))
        for l in rows:
            f = l.split()
            if "refused" in l or "failed" in l:
                continue
            self.assertIn(f[-1], ("memory", "compute"), l)
        self.assertGreater(self.doc["wall_s"], 0)


def cells_of(doc):
    return {(r["cell"]["B"], r["cell"]["H"], r["cell"]["S_k"], r["cell"]["page_size"])
            for r in doc["rows"]}


class ServingLimits(unittest.TestCase):
    """A cell whose K/V pool does not fit says so in its rows and the grid goes
    on; a backend past --max-forward-ms is not timed and its row says why."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.base = ["compare", "--serving", "--iters", "2", "--warmup", "0", "--threads", "1",
                    "--peak-tflops", CORE_PEAK, "--json"]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_mem_limit(self):
        # pools (K and V, bf16, Hkv 2, D 128): B*KV*1 KiB; 3 MiB holds B*KV <= 3072:
        # (1, 256), (1, 1024), (4, 256) fit, (4, 1024) does not
        doc = json.loads(run(self.tmp.name, *self.base, "--mem-limit-mib", "3").stdout)
        self.assertEqual(len(cells_of(doc)), 16)  # every cell has its rows
        for r in doc["rows"]:
            big = r["cell"]["B"] * r["cell"]["S_k"] > 3072
            self.assertEqual(r["status"] == "skipped", big, r)
            if big:
                self.assertIn("does not fit", r["why"])
                self.assertIn("4.0 MiB", r["why"])
        self.assertTrue(any(r["status"] == "ok" for r in doc["rows"]))

    def test_max_forward_ms(self):
        # 1e-6 ms: every backend's one forward is over it; the first cell's rows
        # say what the forward took, the later ones what its rate predicts
        doc = json.loads(run(self.tmp.name, *self.base, "--max-forward-ms", "1e-6").stdout)
        self.assertEqual(len(cells_of(doc)), 16)
        self.assertTrue(all(r["status"] in ("skipped", "refused") for r in doc["rows"]))
        first = [r for r in doc["rows"] if r["status"] == "skipped"][:1]
        self.assertRegex(first[0]["why"], r"one forward took [0-9.]+ ms, over --max-forward-ms")
        later = [r for r in doc["rows"] if "would take about" in r.get("why", "")]
        self.assertTrue(later)
        # a generous limit times everything
        doc = json.loads(run(self.tmp.name, *self.base, "--max-forward-ms", "60000").stdout)
        self.assertFalse([r for r in doc["rows"] if r["status"] == "skipped"])

    def test_bad_values(self):
        for args in (["--max-forward-ms", "0"], ["--mem-limit-mib", "x"],
                     ["--mem-limit-mib", "-3"]):
            p = run(self.tmp.name, "compare", "--serving", *args, check_rc=2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertEqual(p.stdout, "")
        p = run(self.tmp.name, "compare", *SMALL, "--max-forward-ms", "5", check_rc=2)
        self.assertIn("belong to --serving", p.stderr)


if __name__ == "__main__":
    ATTNPROF = sys.argv.pop(1)
    unittest.main(verbosity=2)
