#!/usr/bin/env python3
"""GPU test (label gpu, 2 GPUs): a 2-rank torchrun under `attnprof trace`.

usage: check_ranks_trace.py ATTNPROF OUT_DIR [ok|crash|nonccl ...]

Runs `attnprof trace --out OUT/MODE.json -- torchrun --standalone
--nproc-per-node 2 torch_ranks.py MODE` and checks, from the trace files
themselves (every expected count is made here from the raw events, never
taken from attnprof's output):
- ok: one trace per worker (OUT/MODE.<pid>.json, the pids the workers print),
  none from the launcher or a line saying so; each worker's GPU work on its
  own device; the steps, kernels and NCCL kernels counted here per call of
  "step" equal what `summary A B --json` gives per rank (NCCL as kind comm),
  with the spread; the per-rank kernel and key-average rows add up to the
  raw counts; `merge` gives each rank its own host and GPU lanes, links no
  kernel to another rank's launch, and aligns the clocks on the NCCL ends:
  the k-th all-reduce ends on both GPUs within TOL_US after the offset, and
  the offset itself is within TOL_US of zero, since both processes read one
  host's CLOCK_MONOTONIC.
- crash: rank 1 exits with status 3 mid-run: one line says so, and its trace
  keeps the steps and collectives it made before.
- nonccl: no rank reaches NCCL: merge keeps the clocks and says so in one
  line (also beside the ok run's rank 0, which has collectives).
Exit 77 (skipped) with fewer than 2 GPUs or without torch.distributed.

TOL_US: the ends of one all-reduce on two GPUs of one host differ by the last
NVLink transfer (a few us) plus CUPTI's GPU-to-host clock conversion (about a
us); a pairing off by one collective would be off by a whole step (an SDPA of
~0.3 ms apart), which the check also asserts is more than 2 * TOL_US.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys

from gpu_check import check, gpu_count, run_modes

HERE = os.path.dirname(os.path.abspath(__file__))
OK_FILES = []  # the ok run's traces (rank 0, rank 1), for nonccl's merges beside them
SCRIPT = os.path.join(HERE, "torch_ranks.py")
TOL_US = 50.0
ATTNPROF = OUT = None
# not anchored: torchrun may put "[rank0]:" before a worker's lines
RANK_LINE = re.compile(r"\brank (\d+) pid (\d+) device (\d+) mode (\w+) steps (\d+) collectives (\d+) exit (\d+)\b")


def env():
    e = dict(os.environ)
    e["NCCL_NVLS_ENABLE"] = "0"
    return e


def attnprof(*args, rc=0, save=None):
    p = subprocess.run([ATTNPROF, *args], capture_output=True, text=True, timeout=300, env=env())
    if save:
        with open(os.path.join(OUT, save), "w") as f:
            f.write(f"$ attnprof {' '.join(args)}\n{p.stdout}{p.stderr}")
    if rc is not None:
        check(p.returncode == rc, f"attnprof {args[0]}: exit {p.returncode} (wanted {rc}) {p.stderr[-400:]}")
    return p


def torchrun():
    exe = shutil.which("torchrun")
    return [exe] if exe else [sys.executable, "-m", "torch.distributed.run"]


def run_bounded(cmd, limit=60):
    """cmd in a session of its own; past limit s, SIGTERM to it all (torchrun ends its
    workers on SIGTERM), SIGKILL 10 s later, and the check fails rather than hangs."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(),
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        err += f"\n(check_ranks_trace: stopped after {limit} s)\n"
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def trace(mode):
    """attnprof trace of torchrun; returns (process, {rank: fields}, {pid: trace path})."""
    for f in os.listdir(OUT):
        if f.startswith(mode + "."):
            os.remove(os.path.join(OUT, f))
    out = os.path.join(OUT, mode + ".json")
    cmd = [ATTNPROF, "trace", "--out", out, "--", *torchrun(), "--standalone", "--nproc-per-node", "2",
           SCRIPT, mode]
    p = run_bounded(cmd)
    with open(os.path.join(OUT, mode + ".log"), "w") as f:
        f.write(f"$ {' '.join(cmd)}\nexit {p.returncode}\n--- stdout\n{p.stdout}--- stderr\n{p.stderr}")
    print(f"attnprof trace ({mode}): exit {p.returncode}\n{p.stdout[-2500:]}\n{p.stderr[-2500:]}")
    ranks = {}
    for m in RANK_LINE.finditer(p.stdout):
        r, pid, dev, _, steps, coll, status = (int(g) if g.isdigit() else g for g in m.groups())
        ranks[r] = {"pid": pid, "device": dev, "steps": steps, "collectives": coll, "exit": status}
    kids = {int(m.group(1)): os.path.join(OUT, f) for f in os.listdir(OUT)
            if (m := re.fullmatch(re.escape(mode) + r"\.(\d+)\.json", f))}
    return p, ranks, kids, out


def events(path):
    return [e for e in json.load(open(path))["traceEvents"] if e.get("ph") == "X"]


def is_nccl(name):
    return "nccl" in name


def raw_counts(path, range_name="step"):
    """Counted here from the raw events: the ranges, and the kernels launched
    inside them (launch call within the range, same thread; kernel tied to it
    by correlation id), NCCL ones apart."""
    ev = events(path)
    ranges = [e for e in ev if e.get("cat") == "user_annotation" and e["name"] == range_name]
    launches = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    inside = set()
    for r in ranges:
        for l in launches:
            if (l["pid"], l["tid"]) == (r["pid"], r["tid"]) and r["ts"] <= l["ts"] <= r["ts"] + r["dur"]:
                inside.add(l["args"].get("correlation"))
    in_ranges = [k for k in kernels if k["args"].get("correlation") in inside]
    return {
        "calls": len(ranges),
        "kernels": sum(not is_nccl(k["name"]) for k in in_ranges),
        "comm": sum(is_nccl(k["name"]) for k in in_ranges),
        "all_kernels": len(kernels),
        "all_nccl": sum(is_nccl(k["name"]) for k in kernels),
        "devices": sorted({e["args"].get("device") for e in ev
                           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}),
    }


def merge(name, a, b, rc=0):
    out = os.path.join(OUT, name + ".merged.json")
    p = attnprof("merge", "--out", out, a, b, rc=rc, save=name + ".merge.txt")
    info = {}
    for m in re.finditer(r"^rank (\d+): .* -> process (-?\d+), GPU (-?\d+); (\d+) NCCL collectives; "
                         r"clock (aligned|kept) by ([-+]\d+\.\d+) us", p.stdout, re.M):
        info[int(m.group(1))] = {"pid": int(m.group(2)), "gpu": int(m.group(3)),
                                 "collectives": int(m.group(4)), "aligned": m.group(5) == "aligned",
                                 "offset_us": float(m.group(6))}
    print(p.stdout[:1500], p.stderr, sep="\n")
    return p, info, out


def rows_named(doc_rank, name):
    return [r for r in doc_rank["ranges"] if r["name"] == name]


def check_summary(files, raws, steps):
    doc = json.loads(attnprof("summary", *files, "--json").stdout)
    attnprof("summary", *files, save="summary_ranks.txt")
    check(len(doc["ranks"]) == 2, "summary over the two files: two ranks")
    for r, (rk, raw) in enumerate(zip(doc["ranks"], raws)):
        rows = rows_named(rk, "step")
        check(len(rows) == 1, f"rank {r}: one row 'step'")
        s = rows[0]
        print(f"rank {r}: summary {json.dumps(s)}\n        counted here {json.dumps(raw)}")
        check(s["calls"] == raw["calls"] == steps[r], f"rank {r}: {steps[r]} calls of step")
        check(abs(s["per_call"]["kernel"] - raw["kernels"] / raw["calls"]) < 1e-9,
              f"rank {r}: kernels per call {s['per_call']['kernel']} = {raw['kernels']}/{raw['calls']} counted")
        check(abs(s["per_call"]["comm"] - raw["comm"] / raw["calls"]) < 1e-9,
              f"rank {r}: NCCL kernels per call as comm {s['per_call']['comm']} = {raw['comm']}/{raw['calls']}")
        ks = rk["kernels"]
        check(sum(k["calls"] for k in ks) == raw["all_kernels"],
              f"rank {r}: kernel rows add up to the {raw['all_kernels']} kernels of the trace")
        check(sum(k["calls"] for k in ks if is_nccl(k["name"])) == raw["all_nccl"],
              f"rank {r}: NCCL kernel rows add up to {raw['all_nccl']}")
        step_keys = [k for k in rk["key_averages"] if k["name"] == "step" and k["cat"] == "user_annotation"]
        check(len(step_keys) == 1 and step_keys[0]["calls"] == raw["calls"],
              f"rank {r}: key averages hold step x{raw['calls']}")
    sp = [s for s in doc["spread"] if s["name"] == "step"]
    dev = [rows_named(rk, "step")[0]["per_call"]["device_us"] for rk in doc["ranks"]]
    check(len(sp) == 1 and sp[0]["ranks"] == 2 and sp[0]["device_us_min"] == min(dev)
          and sp[0]["device_us_max"] == max(dev), f"spread of step over 2 ranks: {sp}")
    return doc


def check_merged(path, info, raws):
    ev = events(path)
    nccl = [e for e in ev if e.get("cat") == "kernel" and is_nccl(e["name"])]
    gpu_pids = sorted({e["pid"] for e in nccl})
    check(len(gpu_pids) == 2, f"merged: the NCCL kernels on two GPU lanes {gpu_pids}")
    host = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "user_annotation"):
            host.setdefault(e["pid"], 0)
            host[e["pid"]] += 1
    check(sorted(host) == sorted(i["pid"] for i in info.values()),
          f"merged: one host process per rank {sorted(host)}")
    launch_pid = {e["args"]["correlation"]: e["pid"] for e in ev
                  if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    lane_of = {i["gpu"]: i["pid"] for i in info.values()}
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    wrong = [k for k in kernels if launch_pid.get(k["args"].get("correlation")) != lane_of.get(k["pid"])]
    check(not wrong, f"merged: each of {len(kernels)} kernels tied to a launch of its own rank's process")
    for r, i in info.items():
        check(i["collectives"] == raws[r]["all_nccl"],
              f"rank {r}: merge counts {i['collectives']} NCCL collectives = {raws[r]['all_nccl']} counted")
    ends = [sorted(e["ts"] + e["dur"] for e in nccl if e["pid"] == info[r]["gpu"]) for r in (0, 1)]
    k = min(len(ends[0]), len(ends[1]))
    res = [ends[0][j] - ends[1][j] for j in range(k)]
    gaps = [b - a for a, b in zip(ends[0], ends[0][1:])]
    print(f"aligned NCCL ends, rank 0 - rank 1 (us): {[round(x, 3) for x in res]}")
    print(f"offset of rank 1: {info[1]['offset_us']:+.3f} us; gaps between collectives on rank 0 (us): "
          f"{[round(g, 1) for g in gaps]}")
    check(k > 0 and max(abs(x) for x in res) <= TOL_US,
          f"the {k} aligned ends agree within {TOL_US} us (worst {max(abs(x) for x in res):.3f})")
    check(not gaps or min(gaps) > 2 * TOL_US, "collectives more than 2 * TOL_US apart: a wrong pairing would show")
    check(abs(info[1]["offset_us"]) <= TOL_US, "offset within TOL_US of 0 (one host, one monotonic clock)")


def by_rank(ranks, kids, mode):
    check(sorted(ranks) == [0, 1], f"{mode}: both ranks reported {ranks}")
    files = []
    for r in (0, 1):
        check(ranks[r]["pid"] in kids, f"{mode}: rank {r} (pid {ranks[r]['pid']}) has its trace")
        files.append(kids[ranks[r]["pid"]])
    return files


def launcher_wrote_none(p, out):
    if os.path.exists(out):
        check(not [e for e in events(out) if e.get("cat") == "kernel"], "the launcher's own trace holds no kernel")
    else:
        check("used no CUDA itself" in p.stdout, "the launcher wrote no trace, and the output says so")


def mode_ok():
    p, ranks, kids, out = trace("ok")
    check(p.returncode == 0, "torchrun exited 0")
    check(len(kids) == 2, f"one trace per worker: {sorted(kids)}")
    files = by_rank(ranks, kids, "ok")
    launcher_wrote_none(p, out)
    raws = [raw_counts(f) for f in files]
    for r in (0, 1):
        check(raws[r]["devices"] == [ranks[r]["device"]],
              f"rank {r}: all its GPU work on device {ranks[r]['device']} ({raws[r]['devices']})")
        check(raws[r]["comm"] == ranks[r]["collectives"] == raws[r]["calls"],
              f"rank {r}: one NCCL kernel per step ({raws[r]['comm']} in {raws[r]['calls']} steps)")
    check(ranks[0]["device"] != ranks[1]["device"], "the ranks on different devices")
    check_summary(files, raws, [ranks[0]["steps"], ranks[1]["steps"]])
    mp, info, merged = merge("ok", *files)
    check(sorted(info) == [0, 1] and all(i["aligned"] for i in info.values()), "merge: both clocks aligned")
    said = [l for l in mp.stderr.splitlines() if l.startswith("attnprof: rank ")]
    check(not said, f"merge: nothing said about the ranks when all aligned ({said})")
    check_merged(merged, info, raws)
    attnprof("summary", merged, save="ok.merged.summary.txt")
    doc = json.loads(attnprof("summary", merged, "--json").stdout)
    check(len(doc.get("ranks", [])) == 2, "summary of the merged trace: a rank per process")
    for r, rk in enumerate(doc["ranks"]):
        s = rows_named(rk, "step")[0]
        check(abs(s["per_call"]["comm"] - raws[r]["comm"] / raws[r]["calls"]) < 1e-9,
              f"merged, rank {r}: comm per call as counted in its own trace")
    OK_FILES[:] = files


def end_lines(text, pid):
    return [l for l in text.splitlines() if f"child process {pid} " in l]


def mode_crash():
    p, ranks, kids, out = trace("crash")
    check(p.returncode != 0, f"torchrun failed as a rank did (exit {p.returncode})")
    check(1 in ranks and ranks[1]["exit"] == 3, "rank 1 said it exits with status 3")
    pid1 = ranks[1]["pid"]
    lines = end_lines(p.stdout + p.stderr, pid1)
    check(len(lines) == 1 and "(rank 1) exited with status 3" in lines[0] and "keeps the" in lines[0],
          f"one line says rank 1's exit: {lines}")
    check(pid1 in kids, "rank 1's trace was written")
    raw = raw_counts(kids[pid1])
    print("rank 1 counted:", json.dumps(raw))
    check(raw["calls"] == ranks[1]["steps"] and raw["comm"] == ranks[1]["collectives"],
          f"rank 1's trace keeps its {ranks[1]['steps']} steps and {ranks[1]['collectives']} collectives")
    others = [pid for pid in kids if pid != pid1]
    check(len(others) == 1, f"rank 0's trace too: {others}")
    lines0 = end_lines(p.stdout + p.stderr, others[0])
    check(len(lines0) == 1, f"one line says how rank 0 ended: {lines0}")
    files = [kids[others[0]], kids[pid1]]
    mp, info, _ = merge("crash", *files)
    check(info.get(1, {}).get("aligned"), "merge: the crashed rank's clock aligned on the collectives it made")


def mode_nonccl():
    p, ranks, kids, out = trace("nonccl")
    check(p.returncode == 0, "torchrun exited 0")
    files = by_rank(ranks, kids, "nonccl")
    for r in (0, 1):
        raw = raw_counts(files[r])
        check(raw["all_nccl"] == 0 and raw["calls"] == ranks[r]["steps"],
              f"rank {r}: {raw['calls']} steps, no NCCL kernel")
    doc = json.loads(attnprof("summary", *files, "--json").stdout)
    check(all(rows_named(rk, "step")[0]["per_call"]["comm"] == 0 for rk in doc["ranks"]), "summary: comm 0 per step")
    mp, info, _ = merge("nonccl", *files)
    said = [l for l in mp.stderr.splitlines() if l.startswith("attnprof: rank ")]
    check(len(said) == 1 and "rank 1: no NCCL collectives in this trace" in said[0] and "kept" in said[0],
          f"merge says in one line that rank 1 kept its clock: {said}")
    check(not info[1]["aligned"] and info[1]["offset_us"] == 0, "rank 1's clock kept")
    if OK_FILES:  # beside a rank that has collectives
        mp, info, _ = merge("ok0_nonccl1", OK_FILES[0], files[1])
        said = [l for l in mp.stderr.splitlines() if l.startswith("attnprof: rank ")]
        check(len(said) == 1 and "rank 1: no NCCL collectives in this trace" in said[0], f"one line: {said}")
        mp, info, _ = merge("nonccl0_ok1", files[0], OK_FILES[1])
        said = [l for l in mp.stderr.splitlines() if l.startswith("attnprof: rank ")]
        check(len(said) == 1 and "no NCCL collectives in the first trace" in said[0], f"one line: {said}")


def main():
    global ATTNPROF, OUT
    ATTNPROF, OUT = sys.argv[1], sys.argv[2]
    os.makedirs(OUT, exist_ok=True)
    modes = sys.argv[3:] or ["ok", "crash", "nonccl"]
    n = gpu_count()
    if n < 2:
        print(f"SKIP: 2 GPUs needed, nvidia-smi lists {n}")
        return 77
    probe = subprocess.run([sys.executable, "-c", "import torch.distributed as d; assert d.is_nccl_available()"],
                           capture_output=True, text=True)
    if probe.returncode:
        print(f"SKIP: torch.distributed with NCCL not importable by {sys.executable}")
        return 77
    return run_modes("ranks", modes, lambda m: globals()["mode_" + m]())


if __name__ == "__main__":
    sys.exit(main())
