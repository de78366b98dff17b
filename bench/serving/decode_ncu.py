#!/usr/bin/env python3
"""Small decode cells for Nsight Compute: each cell's flash decode call run
--calls times on the same tensors (bf16, D128, one new token, contiguous
K/V, or with --paged also in pages of 16 on a shuffled table), with
nothing else launched between them once the tensors exist, so that
`ncu -k regex:decode_ -c N` sees the split and combine kernels back to back
as a graph replay would (the K/V warm in L2 after the first call).
Usage: ncu ... python3 decode_ncu.py --lib build-gpu/lib/libattnprof.so
       [--cells 1x2048,16x1024] [--calls 3] [--paged]"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving_vs_torch import Lib, decode_cell, decode_paged  # noqa: E402


def cell(lib, B, kv, calls, paged, hq=32, hkv=8, d=128):
    g, q, kc, vc, o, lens, a = decode_cell(B, kv, hq, hkv, d)
    if paged:
        a, kp, vp, table = decode_paged(q, kc, vc, o, lens, g)
    torch.cuda.synchronize()
    run = lib.call(a)
    for _ in range(calls):
        run()
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2).float(), kc.transpose(1, 2).float(), vc.transpose(1, 2).float(),
        enable_gqa=True)
    err = ((o.transpose(1, 2).float() - ref).norm() / ref.norm()).item()
    print(f"B={B} KV={kv} {'paged p16' if paged else 'contiguous'}: splits "
          f"{lib.split_count(a)}, {calls} calls, err {err:.1e}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cells", default="1x2048,16x1024")
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--paged", action="store_true", help="also the paged twin of each cell")
    opt = ap.parse_args()
    lib = Lib(opt.lib)
    for c in opt.cells.split(","):
        B, kv = (int(x) for x in c.split("x"))
        cell(lib, B, kv, opt.calls, False)
        if opt.paged:
            cell(lib, B, kv, opt.calls, True)


if __name__ == "__main__":
    main()
