#!/usr/bin/env python3
"""The attnprof command end to end on the CPU.

Every count compared here is read from the trace file attnprof wrote (parsed
with Python's json), not taken from attnprof's own tables alone: the test
recounts the cpu_op events inside each attn_fwd range itself.

usage: test_cli.py PATH_TO_ATTNPROF
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = None
SMALL = ["--shape", "1x2x67x24", "--iters", "3", "--warmup", "1"]


def run(*args, check_rc=None):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=300)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(
            f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {check_rc}\n"
            f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def ns(us):
    """Trace times are microseconds with exact nanoseconds: compare as integers."""
    return int(round(float(us) * 1000))


def ops_per_range(trace, group=None):
    """cpu_op events per attn_fwd range, counted from the trace by time on the
    same thread; with group, only inside the user_annotation named group."""
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    ranges = [e for e in ev if e["cat"] == "user_annotation" and e["name"] == "attn_fwd"]
    if group is not None:
        g = [e for e in ev if e["cat"] == "user_annotation" and e["name"] == group]
        assert len(g) == 1, f"{len(g)} group ranges named {group}"
        g0, g1 = ns(g[0]["ts"]), ns(g[0]["ts"]) + ns(g[0]["dur"])
        ranges = [r for r in ranges if g0 <= ns(r["ts"]) and ns(r["ts"]) + ns(r["dur"]) <= g1]
    ops = [e for e in ev if e["cat"] == "cpu_op"]
    out = []
    for r in ranges:
        r0, r1 = ns(r["ts"]), ns(r["ts"]) + ns(r["dur"])
        inside = [o for o in ops if o["tid"] == r["tid"] and r0 <= ns(o["ts"])
                  and ns(o["ts"]) + ns(o["dur"]) <= r1]
        kinds = {}
        for o in inside:
            k = o["args"]["op kind"]
            kinds[k] = kinds.get(k, 0) + 1
        out.append((len(inside), kinds))
    return out


class Version(unittest.TestCase):
    def test_lists_backends_and_collectors(self):
        out = run("--version", check_rc=0).stdout
        for name in ("naive", "naive_inplace", "math", "flash", "collectors:", "cpu"):
            self.assertIn(name, out)


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace_path = os.path.join(cls.tmp.name, "compare.json")
        p = run("compare", *SMALL, "--causal", "--json", "--trace", cls.trace_path, check_rc=0)
        cls.doc = json.loads(p.stdout)
        with open(cls.trace_path) as f:
            cls.trace = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def backend(self, name):
        for b in self.doc["backends"]:
            if b["name"] == name:
                return b
        self.fail(f"{name} missing from compare --json: {[b['name'] for b in self.doc['backends']]}")

    def test_contract_keys(self):
        self.assertEqual(self.doc["device"], "cpu")
        self.assertEqual(self.doc["shape"]["S_q"], 67)
        for name in ("naive", "naive_inplace", "math", "flash"):
            b = self.backend(name)
            self.assertEqual(b["status"], "ok", b)
            for key in ("per_forward", "device_us", "host_us", "tflops", "rel_err"):
                self.assertIn(key, b)
            for kind in ("total", "gemm", "elementwise", "copy", "softmax"):
                self.assertIn(kind, b["per_forward"])
            self.assertLessEqual(b["rel_err"], 1e-2, f"{name} bf16 error")
            self.assertGreater(b["device_us"], 0)

    def test_naive_has_one_more_op_and_it_is_the_copy(self):
        naive, inplace = self.backend("naive")["per_forward"], self.backend("naive_inplace")["per_forward"]
        self.assertEqual(naive["total"], inplace["total"] + 1, (naive, inplace))
        self.assertEqual(naive["copy"], 1)
        self.assertEqual(inplace["copy"], 0)
        for kind, n in naive.items():
            if kind not in ("total", "copy"):
                self.assertEqual(n, inplace[kind], kind)

    def test_counts_agree_with_the_trace_file(self):
        for name in ("naive", "naive_inplace", "math", "flash"):
            per_range = ops_per_range(self.trace, group=name)
            self.assertEqual(len(per_range), 3, f"{name}: profiled forwards in the trace")
            want = self.backend(name)["per_forward"]
            for total, kinds in per_range:
                self.assertEqual(total, want["total"], name)
                for kind, n in kinds.items():
                    self.assertEqual(n, want[kind], f"{name} {kind}")
        naive = ops_per_range(self.trace, group="naive")[0]
        inplace = ops_per_range(self.trace, group="naive_inplace")[0]
        self.assertEqual(naive[0], 6)
        self.assertEqual(inplace[0], 5)

    def test_trace_schema(self):
        self.assertEqual(self.trace.get("schemaVersion"), 1)
        self.assertIn("baseTimeNanoseconds", self.trace)
        cats = {e.get("cat") for e in self.trace["traceEvents"]}
        self.assertIn("cpu_op", cats)
        self.assertIn("user_annotation", cats)
        for e in self.trace["traceEvents"]:
            if e.get("cat") == "cpu_op":
                for arg in ("External id", "op kind"):
                    self.assertIn(arg, e["args"], e)
        meta = [e for e in self.trace["traceEvents"] if e.get("ph") == "M"]
        self.assertTrue(any(m["name"] == "process_name" for m in meta))
        self.assertTrue(any(m["name"] == "thread_name" for m in meta))

    def test_text_table(self):
        out = run("compare", *SMALL, check_rc=0).stdout
        for name in ("naive", "naive_inplace", "math", "flash", "ops/fwd", "rel_err"):
            self.assertIn(name, out)


class RunAndExpect(unittest.TestCase):
    def test_expectations_hold(self):
        p = run("run", "--backend", "naive_inplace", *SMALL, "--causal",
                "--expect", "ops==5, copies==0", check_rc=0)
        self.assertIn("held", p.stdout)
        self.assertNotIn("BROKEN", p.stdout)

    def test_expectations_break(self):
        p = run("run", "--backend", "naive", *SMALL, "--causal",
                "--expect", "ops==5,copies==0", check_rc=1)
        self.assertIn("BROKEN", p.stdout)
        self.assertIn("6", p.stdout)

    def test_expect_from_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".expect", delete=False) as f:
            f.write("# flash on the CPU: one fused op\nops == 1\nfused == 1\n")
        try:
            run("run", "--backend", "flash", *SMALL, "--expect", "@" + f.name, check_rc=0)
        finally:
            os.unlink(f.name)

    def test_auto_explains(self):
        p = run("run", *SMALL, check_rc=0)
        self.assertIn("auto:", p.stdout)
        self.assertIn("taken", p.stdout)

    def test_run_json(self):
        doc = json.loads(run("run", "--backend", "math", *SMALL, "--json", check_rc=0).stdout)
        self.assertEqual(doc["backend"]["name"], "math")
        self.assertGreater(doc["backend"]["per_forward"]["total"], 5)

    def test_bshd_layout_and_gqa(self):
        doc = json.loads(run("run", "--backend", "flash", "--shape", "2x4x33x16", "--kv-heads", "2",
                             "--sk", "47", "--layout", "bshd", "--causal=bottom-right",
                             "--mask", "additive", "--json", "--iters", "2", check_rc=0).stdout)
        self.assertLessEqual(doc["backend"]["rel_err"], 1e-2)

    def test_paged_decode_problem(self):
        """--page-size: K/V in a shuffled paged cache, every CPU backend against fp64;
        math's page gather shows in the trace as a copy op per sequence."""
        dec = ["--batch", "2", "--heads", "8/2", "--new-tokens", "3", "--kv-len", "70",
               "--page-size", "16", "--shape", "1x1x1x32", "--iters", "2", "--warmup", "1"]
        # --shape first would reset the heads: give the serving options after it
        dec = dec[-6:-4] + dec[:-6] + dec[-4:]
        for backend in ("flash", "math", "naive"):
            doc = json.loads(run("run", "--backend", backend, *dec, "--json", check_rc=0).stdout)
            b = doc["backend"]
            self.assertEqual(doc["shape"]["page_size"], 16)
            self.assertLessEqual(b["rel_err"], 1e-2, backend)
            self.assertGreater(b["bytes"], 0)
            self.assertGreater(b["gbps"], 0)
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "t.json")
            run("run", "--backend", "math", *dec, "--trace", trace, check_rc=0)
            with open(trace) as f:
                per = ops_per_range(json.load(f))
            self.assertTrue(per and all(k.get("copy", 0) >= 2 for _, k in per), per)

    def test_text_table_has_gbps(self):
        self.assertIn("GB/s", run("run", *SMALL, check_rc=0).stdout)


class TraceFormats(unittest.TestCase):
    """--trace FILE in each format (by name, or --format): JSON, .json.gz
    (gzip, as torch.profiler writes it) and Perfetto protobuf; `summary`
    reads each back to the same counts."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.paths = {"json": os.path.join(d, "t.json"), "json.gz": os.path.join(d, "t.json.gz"),
                     "pftrace": os.path.join(d, "t.pftrace"), "forced": os.path.join(d, "t.bin")}
        for fmt, path in cls.paths.items():
            extra = ["--format", "pftrace"] if fmt == "forced" else []
            run("run", "--backend", "math", *SMALL, "--trace", path, *extra, check_rc=0)
        cls.summaries = {fmt: json.loads(run("summary", path, "--json", check_rc=0).stdout)
                         for fmt, path in cls.paths.items()}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_files_are_what_they_say(self):
        with gzip.open(self.paths["json.gz"], "rt") as f:
            self.assertIn("traceEvents", json.load(f))
        for fmt in ("pftrace", "forced"):
            with open(self.paths[fmt], "rb") as f:
                self.assertEqual(f.read(1), b"\x0a", fmt)  # Trace.packet, field 1

    def test_same_counts_from_every_format(self):
        def counts(doc):
            return [(r["name"], r["calls"], {k: v for k, v in r["per_call"].items()
                                             if k not in ("device_us", "host_us")})
                    for r in doc["ranges"]]
        want = counts(self.summaries["json"])
        self.assertTrue(want)
        for fmt, doc in self.summaries.items():
            self.assertEqual(counts(doc), want, fmt)


class BadInput(unittest.TestCase):
    def bad(self, *args, contains=None):
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "t.json")
            p = run(*args, "--trace", trace) if args[0] in ("run", "compare") else run(*args)
            self.assertEqual(p.returncode, 2, f"{args}: exit {p.returncode}\n{p.stderr}")
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, f"{args}: stderr not one line: {p.stderr!r}")
            self.assertTrue(lines[0].startswith("attnprof: error: "), lines[0])
            if contains:
                self.assertIn(contains, lines[0])
            self.assertEqual(os.listdir(d), [], f"{args}: left files behind")

    def test_malformed_shape(self):
        for s in ("8x16x1024", "8x16x1024x64x2", "axbxcxd", "8x16x1024x", "1x1x1x0",
                  "-1x1x1x1", "1x1x1x99999999999", "8 x16x1024x64"):
            self.bad("run", "--shape", s, contains="--shape")

    def test_bad_serving_options(self):
        self.bad("run", "--heads", "8/3", contains="--heads")
        self.bad("run", "--page-size", "0", contains="--page-size")
        self.bad("run", "--page-size", "16", "--mask", "bool", contains="--page-size")

    def test_unknown_backend_and_dtype(self):
        self.bad("run", "--backend", "fast", contains="accepted are")
        self.bad("run", "--dtype", "f64", contains="accepted are")

    def test_bad_expect(self):
        self.bad("run", "--expect", "ops=>5")
        self.bad("run", "--expect", "wibble==3")
        self.bad("run", "--expect", "@/nonexistent/expectations")

    def test_bad_format(self):
        self.bad("run", *SMALL, "--format", "protobuf", contains="json, json.gz or pftrace")
        p = run("run", *SMALL, "--format", "pftrace")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("--trace", p.stderr)

    def test_cut_traces(self):
        """A pftrace or a .json.gz cut short: exit 2, one line, never a shorter trace."""
        with tempfile.TemporaryDirectory() as d:
            for name in ("t.pftrace", "t.json.gz"):
                full = os.path.join(d, name)
                run("run", "--backend", "math", *SMALL, "--trace", full, check_rc=0)
                with open(full, "rb") as f:
                    data = f.read()
                cut = os.path.join(d, "cut")
                with open(cut, "wb") as f:
                    f.write(data[:len(data) * 2 // 3])
                p = run("summary", cut)
                self.assertEqual(p.returncode, 2, f"{name}: {p.stderr}")
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn("truncated" if name.endswith("pftrace") else "gzip", lines[0])

    def test_unwritable_trace(self):
        p = run("run", *SMALL, "--trace", "/nonexistent-dir/t.json")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertFalse(os.path.exists("/nonexistent-dir"))

    def test_scores_too_big(self):
        # 64 heads x 65536^2 fp32 scores (1.1 TB): naive refuses before allocating, naming the bytes.
        self.bad("run", "--backend", "naive", "--shape", "1x64x65536x8", "--no-check",
                 contains="bytes")

    def test_gqa_mismatch_and_options(self):
        self.bad("run", "--shape", "1x8x64x64", "--kv-heads", "3", contains="heads")
        self.bad("run", "--frobnicate")
        self.bad("run", "--iters", "0")
        self.bad("run", "--causal=sideways")
        self.bad("nonsense")

    def test_flash_head_dim_limit(self):
        self.bad("run", "--backend", "flash", "--shape", "1x1x8x300", contains="300")


if __name__ == "__main__":
    ATTNPROF = sys.argv.pop(1)
    unittest.main(verbosity=2)
