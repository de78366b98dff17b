#!/usr/bin/env python3
"""The HTML report in a real browser: headless Chromium loads the page written
for the four H200 fixtures plus a trace full of hostile names, and the DOM it
builds must hold what the report promises and nothing a trace injected.

Checked in the DOM Chromium dumps (parsed with Python's html.parser):
- one timeline per trace, three comparison charts, the tables; the naive
  fixture's timeline draws as many attributed kernels as the file holds per
  attn_fwd call (counted here from the file);
- the one <script> is the JSON data block, it parses, and its labels are the
  file names exactly, hostile one included;
- no element or attribute a trace could have smuggled in (img, iframe, on*
  handlers, the markers the hostile names try to set), while the hostile
  names are there as text.
A screenshot is saved at SCREENSHOT for a person to look at. Exit 77
(skipped) only when no chromium is installed.

usage: test_report_chromium.py ATTNPROF FIXTURE_DIR WORK_DIR SCREENSHOT
"""
import html.parser
import json
import os
import subprocess
import sys

from chromium_util import SKIP, check, start

FILES = ["trace_naive.json", "trace_naive_inplace.json", "trace_efficient.json", "trace_flash.json"]
HOSTILE = [
    "</script><script>document.title='PWNED'</script>",
    "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">",
    "\"><svg onload=\"document.body.id='pwned'\"><!--",
    "<!--<script>",
    "line\u2028sep\u2029para & &amp; ]]> <b>bold</b>",
]
HOSTILE_FILE = "<img src=x onerror=alert(1)>.json"


def hostile_trace(path):
    """A GPU trace whose every shown string is hostile: ranges, ops, API, kernels, device."""
    ev, corr = [], 1
    for i, name in enumerate(HOSTILE):
        t0 = 1000.0 * i
        ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": t0, "dur": 500})
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t0 + 1, "dur": 100})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": t0 + 2,
                   "dur": 5, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t0 + 10, "dur": 200,
                   "args": {"correlation": corr, "device": 0, "stream": 7, "grid": [1, 1, 1],
                            "block": [128, 1, 1], "registers per thread": 32, "shared memory": 0}})
        corr += 1
    doc = {"deviceProperties": [{"id": 0, "name": HOSTILE[1], "computeMajor": 9, "computeMinor": 0,
                                 "numSms": 132}], "traceEvents": ev}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


def attn_fwd_kernels(path):
    """Kernels per attn_fwd call, counted from the file by launch correlation."""
    with open(path, encoding="utf-8") as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] == "attn_fwd"]
    first = min(calls, key=lambda c: c["ts"])
    launch = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    n = 0
    for k in ev:
        l = launch.get(k.get("args", {}).get("correlation")) if k.get("cat") == "kernel" else None
        n += bool(l and l["tid"] == first["tid"] and first["ts"] <= l["ts"] <= first["ts"] + first["dur"])
    return n


class Dom(html.parser.HTMLParser):
    """Counts of tags, classes and attributes, the text, the scripts' bodies."""

    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.text, self.scripts = {}, [], [], []
        self.timelines, self.in_script, self.svg = [], None, None
        self.in_head = self.in_title = False
        self.title = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for c in cls:
            self.tags[f"{tag}.{c}"] = self.tags.get(f"{tag}.{c}", 0) + 1
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag == "svg" and "timeline" in cls:  # the first call's; "call": a slowest call's
            self.svg = None if "call" in cls else {"trace": a.get("data-trace"), "kernels_in_call": 0}
            if self.svg:
                self.timelines.append(self.svg)
        if tag == "g" and "c-kernel" in cls and "outside" not in cls and self.svg:
            self.svg["kernels_in_call"] += 1
        if tag == "script":
            self.in_script = {"attrs": a, "body": ""}
        self.in_head |= tag == "head"
        self.in_title = tag == "title" and self.in_head

    def handle_endtag(self, tag):
        self.in_head &= tag != "head"
        self.in_title = False
        if tag == "script" and self.in_script is not None:
            self.scripts.append(self.in_script)
            self.in_script = None

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        if self.in_script is not None:
            self.in_script["body"] += data
        else:
            self.text.append(data)


def chromium(exe, work, *args):
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--hide-scrollbars", f"--user-data-dir={os.path.join(work, 'profile')}", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise AssertionError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return p.stdout


def main():
    attnprof, fixtures, work, shot = sys.argv[1:5]
    exe = start(work)
    if not exe:
        return SKIP
    bad = os.path.join(work, HOSTILE_FILE)
    hostile_trace(bad)
    page = os.path.join(work, "report.html")
    traces = [os.path.join(fixtures, f) for f in FILES] + [bad]
    subprocess.run([attnprof, "report", "--html", page, *traces], check=True)
    dom = Dom()
    dom.feed(chromium(exe, work, "--dump-dom", "file://" + page))
    t = dom.tags
    check(dom.title == "attnprof report" and t.get("h1") == 1, f"the page loaded, its title intact ({dom.title!r})")
    check(len(dom.timelines) == len(traces), f"{len(traces)} timelines rendered ({len(dom.timelines)})")
    check(t.get("svg.bars") == 3, "three comparison charts")
    check(t.get("table.ranges") == len(traces) and t.get("table.kernels") == len(traces),
          "a range table and a kernel table per trace")
    want = attn_fwd_kernels(traces[0])
    got = next(x["kernels_in_call"] for x in dom.timelines if x["trace"] == "0")
    check(got == want, f"naive timeline: {got} kernels of the first attn_fwd drawn, the file holds {want}")
    check(len(dom.scripts) == 1 and dom.scripts[0]["attrs"].get("type") == "application/json",
          "one script element, the inert JSON data block")
    data = json.loads(dom.scripts[0]["body"])
    labels = [x["label"] for x in data["traces"]]
    check(labels == [os.path.basename(p) for p in traces], "data block labels are the file names, exactly")
    check(any(r["name"] == HOSTILE[0] for r in data["traces"][-1]["ranges"]), "hostile names kept in the data")
    for tag in ("img", "iframe", "object", "embed", "b"):
        check(t.get(tag, 0) == 0, f"no injected <{tag}>")
    handlers = [(tag, k) for tag, k, _ in dom.attrs if k.startswith("on")]
    check(not handlers, f"no event handler attributes ({handlers[:3]})")
    check(not any(k == "data-pwned" or (k == "id" and v == "pwned") for _, k, v in dom.attrs),
          "no marker a hostile name tried to set")
    text = "".join(dom.text)
    for h in HOSTILE[:2]:
        check(h[:30] in text, f"hostile name shown as text: {h[:30]!r}")
    chromium(exe, work, f"--screenshot={shot}", "--window-size=1400,2600", "file://" + page)
    with open(shot, "rb") as f:
        png = f.read()
    check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000, f"screenshot saved: {shot} ({len(png)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
