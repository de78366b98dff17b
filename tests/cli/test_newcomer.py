#!/usr/bin/env python3
"""What a newcomer hits first (issue 14), each item with the command that
showed it: memory of a command that needs no GPU library, the traced
program's own peak memory, problems too big to run, one behaviour per idea
across subcommands, help and usage errors, the JSON output contract.

usage: test_newcomer.py PATH_TO_ATTNPROF SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest

ATTNPROF = None
SRC = None
FIXTURE = None


def run(*args, check_rc=None, env=None, timeout=300):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=timeout,
                       env=env)
    if check_rc is not None and p.returncode != check_rc:
        raise AssertionError(
            f"attnprof {' '.join(args)}: exit {p.returncode}, wanted {check_rc}\n"
            f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def has_trace_command():
    """`attnprof trace` needs the CUPTI injection library (CUDA builds)."""
    lib = os.path.join(os.path.dirname(os.path.dirname(ATTNPROF)), "lib")
    return os.path.exists(os.path.join(lib, "libattnprof_inject.so"))


class LazyLibraries(unittest.TestCase):
    """Item 4: the CUDA runtime linked dynamically, cuBLAS loaded on first use."""

    def test_help_loads_no_cublas_and_stays_small(self):
        env = dict(os.environ, LD_DEBUG="files")
        proc = subprocess.Popen([ATTNPROF, "help"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, text=True)
        err = proc.stderr.read()
        proc.stderr.close()
        _, status, ru = os.wait4(proc.pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertNotIn("libcublas", err, "attnprof help loaded cuBLAS")
        self.assertNotIn("libcudart_static", err)
        # Linux reports ru_maxrss in KiB; about 220 MB before the fix.
        self.assertLess(ru.ru_maxrss, 48 * 1024, f"attnprof help peaked at {ru.ru_maxrss} KiB")

    def test_library_does_not_need_cublas(self):
        lib = os.path.join(os.path.dirname(os.path.dirname(ATTNPROF)), "lib", "libattnprof.so")
        out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
        needed = re.findall(r"NEEDED.*\[(.*)\]", out)
        self.assertTrue(needed, out)
        self.assertFalse([n for n in needed if "cublas" in n], needed)


class TracePeakMemory(unittest.TestCase):
    """Item 4: `trace -- PROG` reports PROG's peak memory, not attnprof's."""

    def peak(self, *prog):
        with tempfile.TemporaryDirectory() as d:
            p = run("trace", "--out", os.path.join(d, "t.json"), "--", *prog, check_rc=0)
        m = re.search(r"its peak memory ([0-9.]+) MiB", p.stdout)
        self.assertTrue(m, p.stdout + p.stderr)
        return float(m.group(1))

    def test_small_program_small_peak(self):
        if not has_trace_command():
            self.skipTest("this build has no trace command (no CUPTI)")
        self.assertLess(self.peak("true"), 8.0)

    def test_large_program_large_peak(self):
        if not has_trace_command():
            self.skipTest("this build has no trace command (no CUPTI)")
        touch = "b = bytearray(96 << 20); b[::4096] = b'x' * len(b[::4096])"
        self.assertGreater(self.peak(sys.executable, "-c", touch), 96.0)


class TooBig(unittest.TestCase):
    """Item 7: refused up front, with figures, before memory is spent."""

    def rss_of(self, *args):
        proc = subprocess.Popen([ATTNPROF, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        timer = threading.Timer(60, proc.kill)  # before the fix: a run of days
        timer.start()
        out, err = proc.stdout.read(), proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
        _, status, ru = os.wait4(proc.pid, 0)
        timer.cancel()
        return os.waitstatus_to_exitcode(status), out.decode(), err, ru.ru_maxrss

    def test_naive_refused_before_allocating(self):
        rc, out, err, kib = self.rss_of("run", "--backend", "naive", "--shape", "1x1x10000000x64")
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("GiB", err)
        self.assertLess(kib, 256 * 1024, "memory was spent before the refusal")

    def test_auto_refused_with_time_estimate(self):
        rc, out, err, kib = self.rss_of("run", "--shape", "1x1x10000000x64")
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertRegex(err, r"would take about [0-9.]+ (days|h)")
        self.assertIn("--force", err)
        self.assertIn("fp64 check skipped", err)
        self.assertLess(kib, 256 * 1024)

    def test_reference_skipped_saying_so(self):
        # A problem the backend runs in seconds but whose fp64 reference
        # (memory bound, O(S^2) in double) is estimated past its limit is run
        # unchecked; a small one is checked.
        p = run("run", "--shape", "1x1x64x16", "--iters", "2", "--json", check_rc=0)
        self.assertNotIn("skipped", p.stderr)
        self.assertIsNotNone(json.loads(p.stdout)["backend"]["rel_err"])


class OneLineRefusals(unittest.TestCase):
    """Item 15: a refusal names the backend once."""

    def test_refusal_does_not_repeat_backend(self):
        p = run("run", "--backend", "efficient", "--shape", "1x1x16x16", check_rc=2)
        line = p.stderr.strip()
        self.assertEqual(len(line.splitlines()), 1, line)
        self.assertEqual(line.count("efficient"), 1, line)

    def test_auto_log_names_each_backend_once(self):
        out = run("run", "--shape", "1x1x16x16", "--iters", "1", check_rc=0).stdout
        log = out[out.index("auto:"):out.index("backend ")]
        refused = [l for l in log.splitlines() if " refused " in l]
        self.assertTrue(refused, log)
        for l in refused:
            name = l.split()[0]
            self.assertEqual(l.count(name), 1, l)


def fixture(name):
    return os.path.join(SRC, "tests", "prof", "fixtures", name)


class OneBehaviourPerIdea(unittest.TestCase):
    """Item 8: --range means the same in summary, diff and report."""

    def summary_ranges(self, f, *opts):
        p = run("summary", "--json", *opts, f, check_rc=0)
        return [r["name"] for r in json.loads(p.stdout)["ranges"]]

    def test_report_unknown_range_exits_2_listing_ranges(self):
        f = fixture("trace_flash.json")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.html")
            p = run("report", "--range", "nosuch", "--html", out, f, check_rc=2)
            self.assertFalse(os.path.exists(out))
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        # The page shows one row per step: the names summary --per-step lists.
        for name in self.summary_ranges(f, "--per-step"):
            self.assertIn(name, p.stderr)
            with tempfile.TemporaryDirectory() as d:
                run("report", "--range", name, "--html", os.path.join(d, "r.html"), f, check_rc=0)

    def test_diff_accepts_every_name_summary_lists(self):
        f = fixture("trace_flash.json")
        for name in self.summary_ranges(f) + self.summary_ranges(f, "--per-step"):
            p = run("diff", f, f, "--range", name, "--json", check_rc=0)
            self.assertEqual(len(json.loads(p.stdout)["ranges"]), 1, name)

    def test_diff_unknown_range_lists_names_and_prints_nothing(self):
        f = fixture("trace_flash.json")
        p = run("diff", f, f, "--range", "nosuch", check_rc=2)
        self.assertEqual(p.stdout, "")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("attn_fwd", p.stderr)


class QuietReader(unittest.TestCase):
    """Item 9: routine skips only with --verbose; one line on stderr for errors."""

    def test_pytorch_trace_reads_silently(self):
        p = run("summary", fixture("trace_naive.json"), check_rc=0)
        self.assertEqual(p.stderr, "")
        p = run("summary", "--verbose", fixture("trace_naive.json"), check_rc=0)
        self.assertIn("skipped", p.stderr)

    def test_one_line_errors(self):
        f = fixture("trace_naive.json")
        with tempfile.TemporaryDirectory() as d:
            p = run("diff", f, d, check_rc=2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        p = run("report", "--html", "/proc/x.html", f, check_rc=2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


class ReportOutputFirst(unittest.TestCase):
    """Item 10: the page's path is checked before any input is read."""

    def test_unwritable_report(self):
        # The input does not exist: the output is what must be named.
        p = run("report", "--html", "/proc/x.html", "/nonexistent.json", check_rc=2)
        self.assertIn("cannot write report", p.stderr)
        self.assertNotIn("nonexistent", p.stderr)


class Help(unittest.TestCase):
    """Item 11: usage errors in one line; each subcommand's own help."""

    def test_usage_errors_one_line(self):
        for args in (["summary", "--bogus"], ["diff", "a"], ["report", "x.json"], ["summary"],
                     ["run", "--bogus"], ["trace", "--bogus"], ["trace"], [],
                     ["trace", "--defer", "0", "--", "true"], ["trace", "--defer", "5x", "--", "true"]):
            p = run(*args, check_rc=2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, f"{args}: {p.stderr}")
            self.assertEqual(p.stdout, "", args)

    def test_inherited_defer_checked(self):
        # A bad ATTNPROF_CUPTI_DEFER from the environment is refused as --defer's would be;
        # --defer given on the line wins over it.
        env = dict(os.environ, ATTNPROF_CUPTI_DEFER="64MB")
        p = run("trace", "--", "true", check_rc=2, env=env)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("ATTNPROF_CUPTI_DEFER='64MB'", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_subcommand_help_lists_options(self):
        for cmd, opts in (("run", ["--backend", "--shape", "--iters", "--expect", "--force",
                                   "--cuda-graphs", "--flash-kernel", "--wide"]),
                          ("compare", ["--sweep", "--shape", "--no-check"]),
                          ("summary", ["--range", "--json", "--top", "--verbose"]),
                          ("diff", ["--range", "--threshold", "--min-us"]),
                          ("report", ["--html", "--range"]),
                          ("trace", ["--out", "--all-api", "--stream-only", "--defer"])):
            a = run("help", cmd, check_rc=0).stdout
            b = run(cmd, "--help", check_rc=0).stdout
            self.assertEqual(a, b, cmd)
            for o in opts:
                lines = [l for l in a.splitlines() if l.strip().startswith(o)]
                self.assertEqual(len(lines), 1, f"{cmd} help: {o}\n{a}")
        self.assertIn("naive_inplace", run("run", "--help").stdout)

    def test_help_unknown_command(self):
        self.assertEqual(len(run("help", "nosuch", check_rc=2).stderr.strip().splitlines()), 1)


class NoDriver(unittest.TestCase):
    """Item 12: without a driver, say so."""

    def test_no_driver_message(self):
        if os.path.exists("/dev/nvidiactl"):
            self.skipTest("this machine has an NVIDIA driver")
        p = run("run", "--device", "cuda", "--shape", "1x1x16x16", check_rc=3)
        self.assertNotIn("insufficient", p.stderr)
        if "no CUDA backends" not in p.stderr:  # a CUDA build
            self.assertIn("no NVIDIA driver was found", p.stderr)


class OutputContract(unittest.TestCase):
    """Item 16: the JSON contract lives in docs/ and the output obeys its schemas."""

    def validate(self, schema, *args):
        import jsonschema  # scripts/install-deps.sh installs it
        with open(os.path.join(SRC, "docs", "schema", schema)) as f:
            s = json.load(f)
        jsonschema.Draft202012Validator.check_schema(s)
        doc = json.loads(run(*args, check_rc=0).stdout)
        jsonschema.validate(doc, s, cls=jsonschema.Draft202012Validator)
        return doc, s

    def test_compare(self):
        self.validate("compare.schema.json", "compare", "--shape", "1x2x33x16", "--iters", "2",
                      "--json")

    def test_run_backend_entry(self):
        import jsonschema
        doc = json.loads(run("run", "--shape", "1x2x33x16", "--iters", "2", "--json",
                             check_rc=0).stdout)
        with open(os.path.join(SRC, "docs", "schema", "compare.schema.json")) as f:
            s = json.load(f)
        entry = dict(s["$defs"]["backend"], **{"$defs": s["$defs"]})
        jsonschema.validate(doc["backend"], entry, cls=jsonschema.Draft202012Validator)

    def test_summary_and_diff(self):
        for f in ("trace_naive.json", "trace_flash.json"):
            self.validate("summary.schema.json", "summary", "--json", fixture(f))
        self.validate("diff.schema.json", "diff", "--json", fixture("trace_naive.json"),
                      fixture("trace_naive_inplace.json"))

    def test_schema_can_fail(self):
        import jsonschema
        doc, s = self.validate("diff.schema.json", "diff", "--json", fixture("trace_naive.json"),
                               fixture("trace_flash.json"))
        del doc["ranges"]
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate(doc, s)

    def test_documents_stand_alone(self):
        texts = [run("help").stdout] + [run("help", c).stdout for c in
                                        ("run", "compare", "summary", "diff", "report", "trace")]
        for root, _, files in os.walk(os.path.join(SRC, "docs")):
            texts += [open(os.path.join(root, f)).read() for f in files if f.endswith(".md")]
        texts.append(open(os.path.join(SRC, "README.md")).read())
        for t in texts:
            self.assertNotIn("DESIGN.md", t)


class Spread(unittest.TestCase):
    """Item 13: CPU timings with their spread; the CPU's traced time named
    for what it is; the HTML report's device time consistent."""

    def test_quartiles_in_json_and_table(self):
        doc = json.loads(run("run", "--shape", "1x2x33x16", "--iters", "7", "--json",
                             check_rc=0).stdout)["backend"]
        self.assertLessEqual(doc["time_us_q1"], doc["time_us"])
        self.assertLessEqual(doc["time_us"], doc["time_us_q3"])
        text = run("run", "--shape", "1x2x33x16", "--iters", "7", check_rc=0).stdout
        self.assertIn("[q1 - q3]", text)
        self.assertIn("traced_us", text)
        self.assertRegex(text, r"\[[0-9.]+ - [0-9.]+\]")

    def test_html_device_time_consistent_on_cpu(self):
        with tempfile.TemporaryDirectory() as d:
            t, h = os.path.join(d, "t.json"), os.path.join(d, "r.html")
            run("run", "--shape", "1x2x33x16", "--iters", "2", "--trace", t, check_rc=0)
            run("report", "--html", h, t, check_rc=0)
            html = open(h).read()
        rows = re.search(r'<table class="ranges">(.*?)</table>', html, re.S).group(1)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", rows.split("</tr>")[1])
        self.assertEqual(cells[6], "-", f"device us of a CPU range: {cells}")
        data = re.search(r'\{"name": "attn_fwd"[^}]*\}', html)
        self.assertIn('"device_us": null', data.group(0))


class Scopes(unittest.TestCase):
    """Item 14: every kernel table says what it counts over; the docs list
    every --expect metric."""

    def test_summary_labels(self):
        f = fixture("trace_flash.json")
        out = run("summary", f, check_rc=0).stdout
        self.assertIn("kernels in the whole trace", out)
        self.assertIn("key averages over the whole trace", out)
        out = run("summary", "--range", "attn_fwd", f, check_rc=0).stdout
        self.assertIn("kernels in range attn_fwd", out)

    def test_docs_list_every_metric(self):
        doc = open(os.path.join(SRC, "docs", "cli.md")).read()
        section = doc[doc.index("## Expectations"):doc.index("## JSON")]
        for metric in ("ops", "gemm", "copies", "kernel", "memcpy", "memset", "device_us",
                       "host_us", "calls", "occupancy(K)", "launch(K)"):
            self.assertIn(f"`{metric}", section, metric)
        f = fixture("trace_flash.json")
        run("summary", f, "--expect", "occupancy(top) > 5, launch(top) == cudaLaunchKernel",
            check_rc=0)


class Wide(unittest.TestCase):
    """Item 15: --wide shows long kernel names whole."""

    def test_wide_kernel_names(self):
        f = fixture("trace_flash.json")
        full = json.loads(run("summary", "--json", f, check_rc=0).stdout)["kernels"][0]["name"]
        self.assertGreater(len(full), 44)
        self.assertNotIn(full, run("summary", f, check_rc=0).stdout)
        self.assertIn(full, run("summary", "--wide", f, check_rc=0).stdout)


def main():
    global ATTNPROF, SRC
    ATTNPROF, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], "-v"])


if __name__ == "__main__":
    main()
