#!/usr/bin/env python3
"""attnprof summary, diff, report and --expect on trace files, end to end.

Every figure compared is recounted here from the trace file with Python's json
(a GPU event belongs to an attn_fwd call when the launch call with its
correlation id lies inside the call on the same thread), never taken from
attnprof's own output alone.

usage: test_reader_cli.py PATH_TO_ATTNPROF FIXTURE_DIR
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

ATTNPROF = FIXTURES = None
FILES = ["trace_naive.json", "trace_naive_inplace.json", "trace_efficient.json", "trace_flash.json"]
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


def run(*args, rc=None):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=120)
    if rc is not None and p.returncode != rc:
        raise AssertionError(f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {rc}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def fixture(name):
    return os.path.join(FIXTURES, name)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def per_call(path, rng="attn_fwd"):
    """{kind: count per call, "device_us": ..., "names": {name: count}} for rng."""
    ev = [e for e in load(path)["traceEvents"] if e.get("ph") == "X"]
    calls = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] == rng]
    launches = {e["args"]["correlation"]: e for e in ev
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    out = {"kernel": 0, "memcpy": 0, "memset": 0, "device_us": 0.0, "names": {}}
    for g in ev:
        kind = GPU_CATS.get(g.get("cat"))
        launch = launches.get(g.get("args", {}).get("correlation"))
        if not kind or not launch:
            continue
        if any(c["pid"] == launch["pid"] and c["tid"] == launch["tid"]
               and c["ts"] <= launch["ts"] <= c["ts"] + c["dur"] for c in calls):
            out[kind] += 1
            out["device_us"] += g["dur"]
            out["names"][g["name"]] = out["names"].get(g["name"], 0) + 1
    n = len(calls)
    return {k: (v / n if k != "names" else v) for k, v in out.items()}, n


class Summary(unittest.TestCase):
    def test_fixtures_match_the_files(self):
        for f in FILES:
            want, calls = per_call(fixture(f))
            doc = json.loads(run("summary", fixture(f), "--json", rc=0).stdout)
            rows = [r for r in doc["ranges"] if r["name"] == "attn_fwd"]
            self.assertEqual(len(rows), 1, f)
            r = rows[0]
            self.assertEqual(r["calls"], calls, f)
            for kind in ("kernel", "memcpy", "memset"):
                self.assertEqual(r["per_call"][kind], want[kind], f"{f} {kind}")
            self.assertAlmostEqual(r["per_call"]["device_us"], want["device_us"], places=3, msg=f)
            self.assertGreater(r["per_call"]["host_us"], 0, f)
            self.assertEqual(sum(r["per_call"]["launch_api"].values()),
                             want["kernel"] + want["memcpy"] + want["memset"], f)

    def test_contract_keys_and_occupancy_beside_the_file(self):
        doc = json.loads(run("summary", fixture("trace_naive.json"), "--json", "--range", "attn_fwd",
                             rc=0).stdout)
        self.assertEqual([r["name"] for r in doc["ranges"]], ["attn_fwd"])
        keys = {"name", "calls", "device_us_avg", "grid", "block", "registers_per_thread",
                "shared_memory", "occupancy_pct", "occupancy_pct_in_file"}
        raw = [e for e in load(fixture("trace_naive.json"))["traceEvents"]
               if e.get("cat") == "kernel"]
        zero_fixed = 0
        for k in doc["kernels"]:
            self.assertLessEqual(keys, set(k), k["name"])
            first = next(e for e in raw if e["name"] == k["name"])
            self.assertEqual(k["occupancy_pct_in_file"], first["args"]["est. achieved occupancy %"])
            self.assertEqual(k["shared_memory"], first["args"]["shared memory"])
            self.assertEqual(k["grid"], first["args"]["grid"])
            if k["occupancy_pct_in_file"] == 0 and k["shared_memory"] > 48 * 1024:
                self.assertGreater(k["occupancy_pct"], 0, k["name"])
                zero_fixed += 1
        self.assertGreater(zero_fixed, 0)

    def test_text_tables(self):
        out = run("summary", fixture("trace_flash.json"), rc=0).stdout
        for word in ("attn_fwd", "ProfilerStep#3", "kernels", "occ", "file", "key averages"):
            self.assertIn(word, out)

    def test_gzip_reads_like_plain(self):
        with tempfile.TemporaryDirectory() as d:
            gz = os.path.join(d, "t.json.gz")
            with open(fixture("trace_efficient.json"), "rb") as f, gzip.open(gz, "wb") as g:
                g.write(f.read())
            a = json.loads(run("summary", fixture("trace_efficient.json"), "--json", rc=0).stdout)
            b = json.loads(run("summary", gz, "--json", rc=0).stdout)
            self.assertEqual(a["ranges"], b["ranges"])
            self.assertEqual(a["kernels"], b["kernels"])

    def test_unknown_range(self):
        p = run("summary", fixture("trace_flash.json"), "--range", "nope", rc=2)
        self.assertIn("nope", p.stderr)
        self.assertIn("attn_fwd", p.stderr)  # the ranges a user may pick


class BadFiles(unittest.TestCase):
    def check(self, content, says):
        with tempfile.NamedTemporaryFile("wb", suffix=".json", delete=False) as f:
            f.write(content)
        try:
            for cmd in (["summary", f.name], ["diff", f.name, fixture("trace_flash.json")],
                        ["report", "--html", f.name + ".html", f.name]):
                p = run(*cmd, rc=2)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith("attnprof: error: "), lines[0])
                self.assertIn(says, lines[0])
                self.assertFalse(os.path.exists(f.name + ".html"))
        finally:
            os.unlink(f.name)

    def test_truncated(self):
        with open(fixture("trace_flash.json"), "rb") as f:
            data = f.read()
        self.check(data[: len(data) // 2], "premature EOF")

    def test_not_json(self):
        self.check(b"hello", "not valid JSON")

    def test_not_a_trace(self):
        self.check(b'{"a": 1}', "traceEvents")

    def test_missing_and_directory(self):
        self.assertIn("cannot open", run("summary", "/nonexistent.json", rc=2).stderr)
        self.assertIn("cannot read", run("summary", "/", rc=2).stderr)

    def test_warnings_say_what_was_skipped(self):
        # Routine skips (every PyTorch trace has them) only with --verbose.
        p = run("summary", "--verbose", fixture("trace_naive.json"), rc=0)
        self.assertIn("skipped 1 events of categories attnprof does not model: Trace (1)", p.stderr)
        p = run("summary", fixture("trace_naive.json"), rc=0)
        self.assertEqual(p.stderr, "")


class Diff(unittest.TestCase):
    def test_naive_to_inplace_one_vanished_memcpy(self):
        a, _ = per_call(fixture("trace_naive.json"))
        b, _ = per_call(fixture("trace_naive_inplace.json"))
        gone = sorted(set(a["names"]) - set(b["names"]))
        came = sorted(set(b["names"]) - set(a["names"]))
        doc = json.loads(run("diff", fixture("trace_naive.json"), fixture("trace_naive_inplace.json"),
                             "--json", rc=0).stdout)
        r = next(r for r in doc["ranges"] if r["name"] == "attn_fwd")
        self.assertEqual(sorted(r["vanished"]), gone)
        self.assertEqual(sorted(r["appeared"]), came)
        self.assertEqual(len(gone), 1)
        self.assertIn("Memcpy DtoD", gone[0])
        for c in r["changed"]:
            self.assertEqual(c["count_a"], c["count_b"], c["name"])
        text = run("diff", fixture("trace_naive.json"), fixture("trace_naive_inplace.json"), rc=0).stdout
        self.assertIn("vanished  Memcpy DtoD", text)

    def test_same_file_changes_nothing(self):
        doc = json.loads(run("diff", fixture("trace_flash.json"), fixture("trace_flash.json"), "--json",
                             rc=0).stdout)
        for r in doc["ranges"]:
            self.assertEqual((r["appeared"], r["vanished"], r["changed"]), ([], [], []), r["name"])


class Expect(unittest.TestCase):
    def test_held_and_broken(self):
        want, _ = per_call(fixture("trace_naive.json"))
        k, m = int(want["kernel"]), int(want["memcpy"])
        p = run("summary", fixture("trace_naive.json"), "--expect", f"kernels == {k}, memcpy == {m}", rc=0)
        self.assertIn("all expectations held", p.stdout)
        p = run("summary", fixture("trace_naive.json"), "--expect", f"memcpy == {m + 1}", rc=1)
        self.assertIn(f"BROKEN memcpy == {m + 1} (observed {m})", p.stdout)
        doc = json.loads(run("summary", fixture("trace_naive.json"), "--json", "--expect",
                             f"memcpy == {m + 1}", rc=1).stdout)
        self.assertEqual(doc["expectations"][0]["held"], False)

    def test_file_with_range_sections(self):
        want, _ = per_call(fixture("trace_naive.json"))
        nvjet = next(n for n in want["names"] if n.startswith("nvjet"))
        with tempfile.NamedTemporaryFile("w", suffix=".expect", delete=False) as f:
            f.write(f"# naive, per forward\n[attn_fwd]\nkernels == {int(want['kernel'])}\n"
                    f"memset <= 1\nlaunch(nvjet) == cuLaunchKernelEx\noccupancy(nvjet) < 20%\n"
                    f"[ProfilerStep#3]\ncalls == 1\n")
        try:
            p = run("summary", fixture("trace_naive.json"), "--expect", "@" + f.name, rc=0)
            self.assertIn("held   [attn_fwd] launch(nvjet) == cuLaunchKernelEx (observed cuLaunchKernelEx)",
                          p.stdout)
            self.assertIn("[ProfilerStep#3] calls == 1", p.stdout)
            self.assertTrue(nvjet)
            p = run("summary", fixture("trace_flash.json"), "--expect", "@" + f.name, rc=1)
            self.assertIn("BROKEN [attn_fwd] kernels", p.stdout)
        finally:
            os.unlink(f.name)

    def test_run_shares_the_language(self):
        p = run("run", "--backend", "naive_inplace", "--shape", "1x2x64x32", "--iters", "2", "--warmup", "0",
                "--expect", "[attn_fwd]\nops == 5\ncopies == 0", rc=0)
        self.assertIn("held   [attn_fwd] copies == 0", p.stdout)
        run("run", "--backend", "naive", "--shape", "1x2x64x32", "--iters", "2", "--warmup", "0",
            "--expect", "[attn_fwd]\ncopies == 0", rc=1)

    def test_bad_expectation_is_usage(self):
        self.assertIn("metric", run("summary", fixture("trace_naive.json"), "--expect", "bogus == 1",
                                    rc=2).stderr)


class Report(unittest.TestCase):
    def test_writes_one_page(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.html")
            run("report", "--html", out, *[fixture(f) for f in FILES], rc=0)
            with open(out, encoding="utf-8") as f:
                html = f.read()
            self.assertEqual(html.count('<svg class="timeline"'), len(FILES))
            self.assertEqual(html.count('<section class="trace"'), len(FILES))
            self.assertNotIn("http://", html.replace("http://www.w3.org", ""))  # nothing loaded
            self.assertNotIn("https://", html)


class HostileNames(unittest.TestCase):
    """The page's bytes, without a browser (test_report_chromium.py checks the DOM)."""

    def test_escaped_in_text_and_in_the_data_block(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import test_report_chromium as chromium_test  # its hostile trace, one definition
        with tempfile.TemporaryDirectory() as d:
            bad, out = os.path.join(d, "hostile.json"), os.path.join(d, "r.html")
            chromium_test.hostile_trace(bad)
            run("report", "--html", out, bad, rc=0)
            with open(out, encoding="utf-8") as f:
                page = f.read()
            self.assertEqual(page.count("<script"), 1)  # ours, the data block
            self.assertEqual(page.count("</script>"), 1)
            for raw in ("<img", "<svg onload", "<b>", "<!--"):
                self.assertNotIn(raw, page)
            block = page.split('id="attnprof-data">', 1)[1].split("</script>", 1)[0]
            for raw in ("<", ">", "&", "\u2028", "\u2029"):  # harmless in text, not in a script
                self.assertNotIn(raw, block)
            names = [r["name"] for r in json.loads(block)["traces"][0]["ranges"]]
            self.assertEqual(sorted(names), sorted(chromium_test.HOSTILE))


def main():
    global ATTNPROF, FIXTURES
    ATTNPROF, FIXTURES = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)


if __name__ == "__main__":
    main()
