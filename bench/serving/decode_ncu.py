#!/usr/bin/env python3
"""Small decode cells for Nsight Compute: each cell's flash decode call run
--calls times on the same tensors (bf16, D128, one new token, contiguous
K/V, plus a paged twin with pages of 16 for cells of <= 2k keys), with
nothing else launched between them once the tensors exist, so that
`ncu -k regex:decode_ -c N` sees the split and combine kernels back to back
as a graph replay would (the K/V warm in L2 after the first call).
Usage: ncu ... python3 decode_ncu.py --lib build-gpu/lib/libattnprof.so
       [--cells 1x2048,16x1024] [--calls 3] [--paged] [--fix 0,3]
--fix: the cells once per ATTNPROF_DECODE_FIX value (read per call), in order."""
import argparse
import ctypes as C
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serving_vs_torch import Args, Lib, Seqs, Tensor, bhsd_of_bshd, tensor  # noqa: E402


def cell(lib, B, kv, calls, paged, hq=32, hkv=8, d=128):
    g = torch.Generator(device="cuda").manual_seed(B * 13 + kv)
    q = torch.randn(B, 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    kc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    vc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    o = torch.full_like(q, float("nan"))
    lens = torch.full((B,), kv, dtype=torch.int32, device="cuda")
    if paged:
        ps, per = 16, kv // 16
        table = torch.randperm(B * per, device="cuda", generator=g).to(torch.int32).view(B, per)
        kp = torch.empty(B * per, ps, hkv, d, device="cuda", dtype=torch.bfloat16)
        vp = torch.empty_like(kp)
        kp[table.view(-1).long()] = kc.view(B * per, ps, hkv, d)
        vp[table.view(-1).long()] = vc.view(B * per, ps, hkv, d)
        pool = lambda t: tensor(t, (t.shape[0], hkv, ps, d), (ps * hkv * d, d, hkv * d, 1))
        seqs = Seqs(B, None, None, lens.data_ptr(), table.data_ptr(), per, 0, 1, 1, kv)
        a = Args(bhsd_of_bshd(q), pool(kp), pool(vp), bhsd_of_bshd(o), 0, 0.0, 0, Tensor(),
                 None, None, C.pointer(seqs))
    else:
        seqs = Seqs(B, None, None, lens.data_ptr(), None, 0, 0, 1, 1, kv)
        a = Args(bhsd_of_bshd(q), bhsd_of_bshd(kc), bhsd_of_bshd(vc), bhsd_of_bshd(o), 0, 0.0,
                 0, Tensor(), None, None, C.pointer(seqs))
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
    ap.add_argument("--fix", default="", help="ATTNPROF_DECODE_FIX values, comma list")
    opt = ap.parse_args()
    lib = Lib(opt.lib)
    for fix in opt.fix.split(",") if opt.fix else [None]:
        if fix is not None:
            os.environ["ATTNPROF_DECODE_FIX"] = fix
            print(f"ATTNPROF_DECODE_FIX={fix}", flush=True)
        for c in opt.cells.split(","):
            B, kv = (int(x) for x in c.split("x"))
            cell(lib, B, kv, opt.calls, False)
            if opt.paged:
                cell(lib, B, kv, opt.calls, True)


if __name__ == "__main__":
    main()
