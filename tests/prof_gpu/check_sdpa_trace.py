"""Checks the trace of torch_sdpa_nvtx.py (issue 3's "done when").

usage: check_sdpa_trace.py TRACE.json SUMMARY_FLASH.json SUMMARY_CUDNN.json

The summaries are `attnprof summary TRACE --range sdpa_X --json`. Checked:
- sdpa_flash: 5 calls, one kernel per call, no memcpy/memset;
- sdpa_cudnn: its kernels are launched through cuLaunchKernelEx, and each
  has a non-zero occupancy that agrees with the calculator: the figure the
  trace carries, the one `attnprof summary` recomputes, and a hand
  computation here from the kernel's footprint with sm_90's allocation rules
  (independent of the C code) all give the same theoretical occupancy.
Prints each figure; exit status 1 on the first mismatch.
"""
import json
import sys


def fail(msg):
    print("CHECK FAILED:", msg)
    sys.exit(1)


def round_up(x, unit):
    return (x + unit - 1) // unit * unit


def hand_occupancy(args, dev):
    """Blocks per SM by sm_90's rules (notes/profiler.md section 2)."""
    threads = args["block"][0] * args["block"][1] * args["block"][2]
    warps = -(-threads // 32)
    max_warps = dev["maxThreadsPerMultiprocessor"] // 32
    limits = {"warps": max_warps // warps, "blocks": 32}
    regs = args["registers per thread"]
    per_warp = round_up(regs * 32, 256)
    limits["regs"] = 0 if per_warp * round_up(warps, 4) > 65536 else (65536 // 4 // per_warp) * 4 // warps
    smem = round_up(args["shared memory"] + 1024, 128)
    carveout = args.get("shared memory executed", dev["sharedMemPerMultiprocessor"])
    limits["smem"] = carveout // smem
    blocks = min(limits.values())
    cluster = args.get("cluster", [0, 0, 0])
    size = max(cluster[0], 1) * max(cluster[1], 1) * max(cluster[2], 1)
    if size > 1 and args.get("max active clusters", 0) > 0:
        blocks = min(blocks, args["max active clusters"] * size / dev["numSms"])
    return 100.0 * blocks * warps / max_warps, limits


def main():
    trace = json.load(open(sys.argv[1]))
    flash = json.load(open(sys.argv[2]))
    cudnn = json.load(open(sys.argv[3]))
    dev = trace["deviceProperties"][0]
    f = flash["ranges"][0]
    print(f"sdpa_flash: calls {f['calls']}, per call {json.dumps(f['per_call'])}")
    if f["name"] != "sdpa_flash" or f["calls"] != 5:
        fail("sdpa_flash: 5 calls expected")
    if f["per_call"]["kernel"] != 1 or f["per_call"]["memcpy"] != 0 or f["per_call"]["memset"] != 0:
        fail("sdpa_flash: one kernel per call and no copies/sets expected")
    c = cudnn["ranges"][0]
    print(f"sdpa_cudnn: calls {c['calls']}, per call {json.dumps(c['per_call'])}")
    if c["per_call"]["launch_api"].get("cuLaunchKernelEx", 0) <= 0:
        fail("sdpa_cudnn: no kernel launched through cuLaunchKernelEx")
    events = {e["name"]: e for e in trace["traceEvents"] if e.get("cat") == "kernel"}
    for k in cudnn["kernels"]:
        args = events[k["name"]]["args"]
        hand, limits = hand_occupancy(args, dev)
        print(f"  kernel {k['name'][:70]}")
        print(f"    launch {k['launch_api']}, grid {k['grid']} block {k['block']} cluster {k['cluster']}, "
              f"{k['registers_per_thread']} regs, {k['shared_memory']} B smem, "
              f"carveout {args.get('shared memory executed')}, opt-in {args.get('shared memory opt-in', 0)}")
        print(f"    occupancy: trace est. {args['est. achieved occupancy %']:.2f}% theoretical "
              f"{args['theoretical occupancy %']:.2f}%; summary {k['occupancy_pct']:.2f}% / "
              f"{k['occupancy_theoretical_pct']:.2f}% ({k['occupancy_limiting']}); by hand "
              f"{hand:.2f}% {limits}")
        if k["launch_api"] == "cuLaunchKernelEx" and not k["occupancy_pct"] > 0:
            fail("a cuLaunchKernelEx kernel with zero occupancy")
        if abs(hand - k["occupancy_theoretical_pct"]) > 1e-6 or \
           abs(args["theoretical occupancy %"] - k["occupancy_theoretical_pct"]) > 1e-6:
            fail("theoretical occupancy disagrees between the trace, the summary and the hand count")
    print("sdpa check: all held")


if __name__ == "__main__":
    main()
