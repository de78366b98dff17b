#!/usr/bin/env python3
"""Cells of flash's ws kernel for Nsight Compute: each cell's call run
--calls times on the same tensors (bf16, BHSD), nothing else launched
between them once the tensors exist, so that `ncu -k regex:flash_fwd_ws -c N`
sees the ws kernels back to back; --cudnn runs PyTorch's cuDNN SDPA on the
same tensors after each cell (ncu's kernel filter then names both: fused.sh
step ncu, NCU_KERNELS), so that the two kernels are profiled side by side
(bench/fused/ncu_compare.py); --order FILE writes one line per call made
(label, cell), in launch order, for ncu_compare.py --order.
Usage: ncu ... python3 ws_ncu.py --lib build-gpu/lib/libattnprof.so
       [--cells 8x16x1024x64c,1x16x16384x128] [--calls 1] [--cudnn] [--order FILE]
A cell is BxHxSxD, with a trailing c for causal (top-left)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_setup import load_attnprof, ncu_driver_args, parse_cell, raw_runner  # noqa: E402


def cell(attnprof, engine, spec, calls, cudnn, log):
    b, h, s, d, causal = parse_cell(spec)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    run = raw_runner(attnprof, attnprof.Call(q, k, v, o, causal="top-left" if causal else None,
                                             engine=engine), "flash")
    torch.cuda.synchronize()
    for _ in range(calls):
        run()
        log("ws", spec)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=causal)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    print(f"{spec}: {calls} calls, rel_err {err:.1e}", flush=True)
    if cudnn:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            for _ in range(calls):
                oc = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                log("cudnn", spec)
        torch.cuda.synchronize()
        err = ((oc.float() - ref).norm() / ref.norm()).item()
        print(f"{spec}: {calls} cuDNN calls, rel_err {err:.1e}", flush=True)


def main():
    ap = ncu_driver_args("8x16x1024x64c,1x16x16384x128", 1)
    ap.add_argument("--cudnn", action="store_true", help="PyTorch's cuDNN SDPA after each cell")
    ap.add_argument("--order", default="", help="file for the calls' (label, cell) lines")
    opt = ap.parse_args()
    attnprof = load_attnprof(opt.lib)
    engine = attnprof.Engine(flash_kernel="ws")
    torch.manual_seed(0)
    order = open(opt.order, "w") if opt.order else None

    def log(label, spec):
        if order:
            print(label, spec, file=order, flush=True)
    for spec in opt.cells.split(","):
        cell(attnprof, engine, spec, opt.calls, opt.cudnn, log)


if __name__ == "__main__":
    sys.exit(main())
