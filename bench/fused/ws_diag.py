#!/usr/bin/env python3
"""Diagnosis of flash's ws kernel variants on small shapes against torch's math
SDPA (fp32): relative error per variant (ATTNPROF_FLASH_WS_FLAGS) and, for a
one-key problem, the first output values beside V's (they must be equal).

  python3 bench/fused/ws_diag.py --lib build/lib/libattnprof.so
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    opt = ap.parse_args()
    os.environ["ATTNPROF_LIB"] = opt.lib
    import attnprof  # after ATTNPROF_LIB: the binding loads the library on import
    engines = {k: attnprof.Engine(flash_kernel=k) for k in ("ws", "wgmma", "mma_sync")}
    torch.manual_seed(1)
    variants = [("ws", "ws", ""), ("ws-f0", "ws", "0"), ("ws-f1", "ws", "1"), ("ws-f2", "ws", "2"),
                ("ws-f8", "ws", "8"), ("ws-f11", "ws", "11"), ("wgmma", "wgmma", ""),
                ("mma_sync", "mma_sync", "")]
    for b, h, sq, sk, d, causal in ((1, 1, 1, 1, 128, False), (1, 1, 128, 128, 128, False),
                                    (1, 1, 300, 300, 128, False), (1, 2, 1000, 1000, 128, True),
                                    (2, 4, 2048, 2048, 128, False), (1, 1, 1, 1, 64, False),
                                    (1, 1, 200, 200, 256, True)):
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
                   for s in (sq, sk, sk))
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        line = f"{b}x{h}x{sq}x{sk}x{d} causal={int(causal)}:"
        for name, kern, fl in variants:
            if fl and d != 128:
                continue
            o = torch.full_like(q, float("nan"))
            call = attnprof.Call(q, k, v, o, causal="top-left" if causal else None,
                                 engine=engines[kern])
            fn, handle, code, ref_arg = call.raw("flash")
            os.environ["ATTNPROF_FLASH_WS_FLAGS"] = fl
            rc = fn(handle, code, ref_arg)
            torch.cuda.synchronize()
            if rc:
                line += f" {name}=refused({attnprof.lib.attn_last_error().decode()})"
                continue
            err = ((o.float() - ref).norm() / ref.norm()).item()
            nan = torch.isnan(o).sum().item()
            line += f" {name}={err:.2e}" + (f"(nan {nan})" if nan else "")
            if sq == 1 and sk == 1 and name in ("ws", "ws-f8"):
                print(f"  {name} {d}: o[:6] {o[0, 0, 0, :6].tolist()}\n      v[:6] {v[0, 0, 0, :6].tolist()}")
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
