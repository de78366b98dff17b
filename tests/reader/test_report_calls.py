#!/usr/bin/env python3
"""The HTML report beyond the first call, clicked in headless Chromium.

Chromium is driven over its DevTools pipe (--remote-debugging-pipe: JSON
messages on fds 3 and 4, NUL-terminated; Python's standard library only), so
the test clicks as a person would and reads the computed style:
- the slowest calls' timelines are hidden until a row's link (or a histogram
  bar holding one) is clicked, then shown; the one shown is the right call:
  its device time and the kernels drawn inside it equal what the file holds
  for the slowest attn_fwd call (computed here from the file by correlation);
  it draws a flow per launch whose GPU work is in view;
- the page holds at most 10 such timelines and says so;
- a trace merged from two files (attnprof merge) has a row per process under
  each range, with the figures each file gives alone, and lane groups per
  process in its timelines;
- several files: a per-rank table, one row per file.
Exit 77 (skipped) only when no chromium is installed.

usage: test_report_calls.py ATTNPROF FIXTURE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys
import time

from chromium_util import SKIP, check, start

FIXTURE = "trace_naive.json"
SECOND = "trace_flash.json"


class Devtools:
    """One headless Chromium, one page, over the DevTools pipe."""

    def __init__(self, exe, work):
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        os.set_inheritable(to_r, True)
        os.set_inheritable(from_w, True)
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--remote-debugging-pipe", f"--user-data-dir={os.path.join(work, 'profile')}"]

        def fds():  # the pipe on fds 3 (commands in) and 4 (replies out)
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        # close_fds would close 3 and 4 after preexec_fn has set them
        self.proc = subprocess.Popen(cmd, preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf, self.next_id, self.session = b"", 0, None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + 60
        while time.time() < deadline:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise AssertionError(f"{method}: {reply['error']}")
                    return reply["result"]
            chunk = os.read(self.from_r, 1 << 16)
            if not chunk:
                raise AssertionError("chromium closed the DevTools pipe")
            self.buf += chunk
        raise AssertionError(f"{method}: no reply in 60 s")

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.navigate", {"url": url})
        for _ in range(600):
            if self.eval("document.readyState") == "complete":
                return
            time.sleep(0.1)
        raise AssertionError(f"{url} did not load")

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise AssertionError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def slowest_call(path):
    """The attn_fwd call with the most device time: (device us, kernels), by launch correlation."""
    with open(path, encoding="utf-8") as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    calls = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] == "attn_fwd"]
    launch = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    best = None
    for c in calls:
        dev, kernels = 0.0, 0
        for g in ev:
            if g.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
                continue
            l = launch.get(g.get("args", {}).get("correlation"))
            if l and l["pid"] == c["pid"] and l["tid"] == c["tid"] and c["ts"] <= l["ts"] <= c["ts"] + c["dur"]:
                dev += g["dur"]
                kernels += g["cat"] == "kernel"
        if best is None or dev > best[0]:
            best = (dev, kernels)
    return best


def many_calls(path, n=30):
    """n attn_fwd calls of 3 kernels each, device times all different; their device us, by call."""
    ev, corr, dev = [], 1, []
    for i in range(n):
        t0, total = 2000.0 * i, 0.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": "attn_fwd", "pid": 1, "tid": 1, "ts": t0, "dur": 300})
        for k in range(3):
            d = 50.0 + ((i * 37 + k * 11) % 97) + i / 1000
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t0 + 10 + 20 * k, "dur": 5, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{k}", "pid": 0, "tid": 7, "ts": t0 + 400 + 300 * k,
                       "dur": d, "args": {"correlation": corr, "device": 0, "stream": 7}})
            corr, total = corr + 1, total + d
        dev.append(total)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": ev}, f)
    return dev


def display(dt, elem_id):
    return dt.eval(f"getComputedStyle(document.getElementById('{elem_id}')).display")


def one_trace(dt, attnprof, fixtures, work):
    src = os.path.join(fixtures, FIXTURE)
    page = os.path.join(work, "one.html")
    subprocess.run([attnprof, "report", "--html", page, src], check=True)
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check("http://" not in text.replace("http://www.w3.org", "") and "https://" not in text,
          "no address to fetch in the page")
    dt.open("file://" + page)
    n_tl = dt.eval("document.querySelectorAll('div.call-tl').length")
    n_calls = dt.eval("+document.querySelector('div.dist').dataset.calls")
    check(n_tl == min(10, n_calls), f"{n_tl} slowest-call timelines embedded for {n_calls} calls (at most 10)")
    check(dt.eval("document.querySelector('div.dist').textContent.includes('timelines of the')"),
          "the page says only the slowest calls' timelines are embedded")
    check(all(display(dt, f"call-0-{k}") == "none" for k in range(1, n_tl + 1)),
          "every slowest-call timeline hidden before a click")
    dt.eval("document.querySelector('table.slowest a[href=\"#call-0-1\"]').click()")
    check(display(dt, "call-0-1") == "block" and display(dt, "call-0-2") == "none",
          "clicking row #1 shows its timeline, and only that one")
    want_us, want_k = slowest_call(src)
    got_us = dt.eval("+document.getElementById('call-0-1').dataset.deviceUs")
    check(abs(got_us - want_us) < 1e-3, f"the call shown is the slowest: {got_us} us, the file says {want_us}")
    got_k = dt.eval("document.querySelectorAll('#call-0-1 svg.timeline g.c-kernel:not(.outside)').length")
    check(got_k == want_k, f"its timeline draws the {want_k} kernels the call launched ({got_k})")
    flows = dt.eval("document.querySelectorAll('#call-0-1 line.flow').length")
    check(flows >= want_k > 0, f"flows from launches to GPU work drawn ({flows})")
    bar = dt.eval("(() => { const a = document.querySelector('svg.hist a'); if (!a) return null;"
                  " a.dispatchEvent(new MouseEvent('click', {bubbles: true})); return a.getAttribute('href'); })()")
    check(bar is not None and display(dt, bar[1:]) == "block", f"clicking a histogram bar shows {bar}")


def capped(dt, attnprof, work):
    src = os.path.join(work, "many.json")
    dev = sorted(many_calls(src), reverse=True)
    page = os.path.join(work, "many.html")
    subprocess.run([attnprof, "report", "--html", page, src], check=True)
    dt.open("file://" + page)
    n_tl = dt.eval("document.querySelectorAll('div.call-tl').length")
    check(n_tl == 10, f"30 calls: the timelines of the 10 slowest embedded ({n_tl})")
    for k in (1, 4, 10):
        dt.eval(f"document.querySelector('table.slowest a[href=\"#call-0-{k}\"]').click()")
        got = dt.eval(f"+document.getElementById('call-0-{k}').dataset.deviceUs")
        shown = [i for i in range(1, 11) if display(dt, f"call-0-{i}") == "block"]
        kernels = dt.eval(f"document.querySelectorAll('#call-0-{k} g.c-kernel:not(.outside)').length")
        check(shown == [k] and abs(got - dev[k - 1]) < 1e-3 and kernels == 3,
              f"row #{k}: its timeline alone, {got} us, the file's {k}th slowest {dev[k - 1]:.3f}, 3 kernels")


def merged(dt, attnprof, fixtures, work):
    files = [os.path.join(fixtures, f) for f in (FIXTURE, SECOND)]
    both = os.path.join(work, "merged.json")
    subprocess.run([attnprof, "merge", "--out", both, *files], check=True, stdout=subprocess.DEVNULL)
    page = os.path.join(work, "merged.html")
    subprocess.run([attnprof, "report", "--html", page, both], check=True)
    alone = []
    for k, f in enumerate(files):
        p = os.path.join(work, f"alone{k}.html")
        subprocess.run([attnprof, "report", "--html", p, f], check=True)
        dt.open("file://" + p)
        alone.append(json.loads(dt.eval("document.getElementById('attnprof-data').textContent"))["traces"][0])
    dt.open("file://" + page)
    data = json.loads(dt.eval("document.getElementById('attnprof-data').textContent"))["traces"][0]
    procs = data["processes"]
    check(len(procs) == 2, f"two processes in the merged trace ({[p['pid'] for p in procs]})")
    rows = dt.eval("document.querySelectorAll('table.ranges tr.rank').length")
    named = dt.eval("document.querySelectorAll('table.ranges tr:not(.rank) td.n[title]').length")
    check(rows >= named >= 1, f"per-process rows under the ranges ({rows} under {named} ranges)")
    for k, p in enumerate(procs):  # merge keeps input order in pids here: input 0's are unchanged
        mine = {r["name"]: r for r in p["ranges"]}
        for r in alone[k]["ranges"]:
            m = mine.get(r["name"])
            check(m is not None and m["calls"] == r["calls"] and m["kernel"] == r["kernel"] and
                  (m["device_us"] is None) == (r["device_us"] is None) and
                  (m["device_us"] is None or abs(m["device_us"] - r["device_us"]) < 1e-6),
                  f"process {p['pid']}, {r['name']}: the figures of {os.path.basename(files[k])} alone")
    groups = dt.eval("[...new Set([...document.querySelectorAll('svg.timeline text.rank')]"
                     ".map(t => t.dataset.pid))].length")
    check(groups == 2, f"timeline lane groups for both processes ({groups})")
    ranks = os.path.join(work, "ranks.html")
    subprocess.run([attnprof, "report", "--html", ranks, *files], check=True)
    dt.open("file://" + ranks)
    check(dt.eval("document.querySelectorAll('table.ranks tr').length") == 3,
          "several files: a per-rank table, a row per file")


def main():
    attnprof, fixtures, work = sys.argv[1:4]
    exe = start(work)
    if not exe:
        return SKIP
    dt = Devtools(exe, work)
    try:
        one_trace(dt, attnprof, fixtures, work)
        capped(dt, attnprof, work)
        merged(dt, attnprof, fixtures, work)
    finally:
        dt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
