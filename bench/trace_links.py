"""Counts, in one attnprof (Kineto JSON) trace, the GPU events and the launch
calls, and how many of each found its partner by correlation id: the check
that a cheaper way of recording launch calls still ties every kernel to its
launch (docs/design/profiler-cost.md).   usage: trace_links.py TRACE.json"""
import collections
import json
import sys

GPU = {"kernel", "gpu_memcpy", "gpu_memset"}
API = {"cuda_runtime", "cuda_driver"}


def main():
    with open(sys.argv[1]) as f:
        events = json.load(f)["traceEvents"]
    gpu, api, sync = collections.Counter(), collections.Counter(), collections.Counter()
    gpu_corr, api_corr = [], {}
    for e in events:
        if e.get("ph") != "X":
            continue
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") == "cuda_sync":  # CUPTI's sync kind or the sync calls' callbacks
            sync[e["name"]] += 1
        elif e.get("cat") in GPU:
            gpu[e["cat"]] += 1
            gpu_corr.append(corr)
        elif e.get("cat") in API:
            api[e["name"]] += 1
            api_corr[corr] = e["name"]
    linked = sum(1 for c in gpu_corr if c in api_corr)
    used = set(gpu_corr)
    idle = collections.Counter(n for c, n in api_corr.items() if c not in used)
    print(f"gpu events {dict(gpu)}; launch calls {dict(api)}; "
          f"gpu events linked to a launch {linked}/{len(gpu_corr)}; launch calls without GPU work {dict(idle)}; "
          f"sync events {dict(sync)}")
    return 0 if gpu_corr and linked == len(gpu_corr) else 1


if __name__ == "__main__":
    sys.exit(main())
