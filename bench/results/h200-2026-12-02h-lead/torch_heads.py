# Per-call kernel durations of the ws kernel in torch.profiler sessions (6 calls back to back).
import json, os, sys, tempfile, torch
sys.path.insert(0, "bench")
from torch_setup import load_attnprof, raw_runner
from torch.profiler import ProfilerActivity, profile
a = load_attnprof(sys.argv[1]); eng = a.Engine(flash_kernel="ws")
q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3)); o = torch.empty_like(q)
fn = raw_runner(a, a.Call(q, k, v, o, causal="top-left", engine=eng), "flash")
for _ in range(20): fn()
for s in range(4):
    for _ in range(50): fn(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(6): fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as t:
        p.export_chrome_trace(t + "/x.json"); ev = json.load(open(t + "/x.json"))["traceEvents"]
    print("torch session", s, [round(e["dur"], 2) for e in sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])])
