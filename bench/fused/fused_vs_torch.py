#!/usr/bin/env python3
"""The fused backends beside PyTorch's, in one process on the same tensors.

For each cell of the sweep grid of DESIGN.md (B*S = 16384, H*D = 2048, bf16,
BHSD; causal off and on) and the blog shape (8x16x1024x64 causal), times
  torch SDPA FLASH_ATTENTION      vs  attnprof flash
  torch SDPA EFFICIENT_ATTENTION  vs  attnprof efficient
  efficient with an additive bf16 mask [1, 1, S, S] (S <= 4096, non-causal)
with CUDA events around each call (3 warm-up calls, the median of --reps),
and prints TFLOP/s (4 B H S^2 D, halved when causal) and the ratio
ours / torch. Before timing, our output is compared with torch's (relative
error of the whole tensor); a cell whose error exceeds 1e-2 is not timed.

attnprof is called through a minimal ctypes mirror of attn_args
(include/attnprof/attn.h); both libraries use the default stream of the same
context, so the events bracket our kernels as they bracket torch's.

  python3 bench/fused/fused_vs_torch.py --lib build/lib/libattnprof.so
"""
import argparse
import ctypes as C
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DT_BF16, BACKEND_EFFICIENT, BACKEND_FLASH = 2, 4, 5
CAUSAL_NONE, CAUSAL_TOP_LEFT, MASK_NONE, MASK_ADDITIVE = 0, 1, 0, 2


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int), ("device", C.c_int),
                ("shape", C.c_int64 * 4), ("strides", C.c_int64 * 4)]


class Args(C.Structure):
    _fields_ = [("q", Tensor), ("k", Tensor), ("v", Tensor), ("out", Tensor),
                ("causal", C.c_int), ("scale", C.c_double), ("mask_kind", C.c_int),
                ("mask", Tensor), ("lse", C.c_void_p), ("stream", C.c_void_p)]


def tensor(t):
    assert t.dtype == torch.bfloat16 and t.dim() == 4
    return Tensor(t.data_ptr(), DT_BF16, t.device.index or 0, (C.c_int64 * 4)(*t.shape),
                  (C.c_int64 * 4)(*t.stride()))


def median_us(fn, reps):
    for _ in range(3):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="S <= 4096 only")
    ap.add_argument("--mask-only", action="store_true",
                    help="only the masked cells (S <= 4096, non-causal): efficient and efficient+mask")
    opt = ap.parse_args()
    lib = C.CDLL(opt.lib)
    lib.attn_forward.argtypes = [C.c_int, C.POINTER(Args)]
    lib.attn_forward.restype = C.c_int
    lib.attn_last_error.restype = C.c_char_p

    def ours(backend, q, k, v, o, causal, mask=None):
        a = Args(tensor(q), tensor(k), tensor(v), tensor(o),
                 CAUSAL_TOP_LEFT if causal else CAUSAL_NONE, 0.0, MASK_NONE, Tensor(), None, None)
        if mask is not None:
            a.mask_kind, a.mask = MASK_ADDITIVE, tensor(mask)

        def call():
            rc = lib.attn_forward(backend, C.byref(a))
            if rc:
                raise RuntimeError(lib.attn_last_error().decode())
        return call

    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; bf16 BHSD; "
          f"median of {opt.reps} calls; TFLOP/s = 4 B H S^2 D (/2 causal) / time")
    cells = [(8, 16, 1024, 64, True)]
    for d, s in ((64, 1024), (64, 16384), (128, 4096), (128, 16384), (256, 4096)):
        for causal in (False, True):
            cells.append((16384 // s, 2048 // d, s, d, causal))
    hdr = (f"{'B x H x S x D':<18}{'causal':<7}{'pair':<16}{'torch us':>9}{'ours us':>9}"
           f"{'torch TF':>9}{'ours TF':>9}{'ratio':>7}{'rel_err':>10}")
    print(hdr)
    worst = {}
    torch.manual_seed(0)
    for b, h, s, d, causal in cells:
        if (opt.quick or opt.mask_only) and s > 4096:
            continue
        if opt.mask_only and causal:
            continue
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        mask = (torch.rand(1, 1, s, s, device="cuda") * 4 - 2).to(torch.bfloat16) if s <= 4096 else None
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        pairs = [("flash", SDPBackend.FLASH_ATTENTION, BACKEND_FLASH, None),
                 ("efficient", SDPBackend.EFFICIENT_ATTENTION, BACKEND_EFFICIENT, None)]
        if mask is not None and not causal:  # torch takes a mask or is_causal, not both
            pairs.append(("efficient+mask", SDPBackend.EFFICIENT_ATTENTION, BACKEND_EFFICIENT, mask))
        if opt.mask_only:
            pairs = pairs[1:]
        for name, tb, ob, m in pairs:
            with sdpa_kernel(tb):
                tfn = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)
                ref = tfn()
                ofn = ours(ob, q, k, v, o, causal, m)
                ofn()
                torch.cuda.synchronize()
                err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
                label = f"{b}x{h}x{s}x{d}"
                if not err <= 1e-2:
                    print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<16} FAIL rel_err {err:.3e}")
                    worst[name] = 0.0
                    continue
                tt = median_us(tfn, opt.reps)
                ot = median_us(ofn, opt.reps)
            ratio = tt / ot
            worst[name] = min(worst.get(name, 9e9), ratio)
            print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<16}{tt:9.1f}{ot:9.1f}"
                  f"{flops / tt * 1e-6:9.1f}{flops / ot * 1e-6:9.1f}{ratio:7.2f}{err:10.2e}",
                  flush=True)
        del q, k, v, o, mask
    print("lowest ratio (ours / torch, >= 1.00 is the target): " +
          ", ".join(f"{k} {v:.2f}" for k, v in worst.items()))


if __name__ == "__main__":
    sys.exit(main())
