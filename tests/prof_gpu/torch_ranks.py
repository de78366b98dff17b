"""Two ranks under torchrun (--nproc-per-node 2), NCCL, one GPU each: STEPS
steps, each inside the NVTX range "step" holding one all-reduce and one SDPA
forward. For `attnprof trace -- torchrun --nproc-per-node 2 torch_ranks.py
MODE`; check_ranks_trace.py checks the traces against the counts it makes
itself from them.

MODE ok:     every rank runs every step.
MODE crash:  rank 1 exits with status 3 after CRASH_AFTER steps (the trace it
             flushed is kept); rank 0 runs its remaining steps without the
             all-reduce, which could never complete.
MODE nonccl: no rank reaches NCCL: the steps hold the SDPA only.
Each rank prints one line: "rank R pid P device D mode M steps S collectives C"."""
import os
import sys

os.environ["NCCL_NVLS_ENABLE"] = "0"  # before NCCL starts: NVLink multicast stays off

import torch
import torch.distributed as dist
import torch.nn.functional as F

STEPS = 6
CRASH_AFTER = 3
B, H, S, D = 4, 16, 4096, 64  # an SDPA of ~0.2 ms on an H200: collectives well apart


def step(q, k, v, x, collective):
    torch.cuda.nvtx.range_push("step")
    if collective:
        dist.all_reduce(x)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.cuda.nvtx.range_pop()
    return out


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    # device_id starts NCCL at once; nonccl leaves it unstarted, as a rank that never gets there
    eager = {} if mode == "nonccl" else {"device_id": torch.device("cuda", local)}
    dist.init_process_group("nccl", **eager)
    torch.manual_seed(rank)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    x = torch.full((1 << 20,), float(rank + 1), device="cuda")
    steps, collectives = 0, 0
    for i in range(STEPS):
        if mode == "crash" and rank == 1 and i == CRASH_AFTER:
            torch.cuda.synchronize()
            print(f"rank {rank} pid {os.getpid()} device {local} mode {mode} steps {steps} "
                  f"collectives {collectives} exit 3", flush=True)
            sys.exit(3)  # mid-run, on purpose
        collective = mode == "ok" or (mode == "crash" and i < CRASH_AFTER)
        step(q, k, v, x, collective)
        steps += 1
        collectives += collective
    torch.cuda.synchronize()
    if mode == "ok":  # 1 and 2 summed, then doubled by each later all-reduce
        want = 3.0 * 2 ** (STEPS - 1)
        got = x[0].item()
        if abs(got - want) > 1e-3 * want:
            print(f"rank {rank}: all-reduce gave {got}, wanted {want}", flush=True)
            return 1
    print(f"rank {rank} pid {os.getpid()} device {local} mode {mode} steps {steps} "
          f"collectives {collectives} exit 0", flush=True)
    if mode != "crash":  # in crash, rank 1 is gone: nothing to tear down together
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
