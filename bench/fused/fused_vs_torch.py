#!/usr/bin/env python3
"""The fused backends beside PyTorch's, in one process on the same tensors.

For each cell of compare --sweep's grid (docs/cli.md; B*S = 16384, H*D = 2048, bf16,
BHSD; causal off and on) and the blog shape (8x16x1024x64 causal), times
  torch SDPA FLASH_ATTENTION      vs  attnprof flash
  torch SDPA EFFICIENT_ATTENTION  vs  attnprof efficient
  efficient with an additive bf16 mask [1, 1, S, S] (S <= 4096, non-causal)
with CUDA events around each call (3 warm-up calls, the median of --reps),
and prints TFLOP/s (4 B H S^2 D, halved when causal) and the ratio
ours / torch. Before timing, our output is compared with torch's (relative
error of the whole tensor); a cell whose error exceeds 1e-2 is not timed.

attnprof is called through its ctypes binding (python/attnprof), one engine
handle per flash kernel (opts.flash_kernel); both libraries use the default
stream of the same context, so the events bracket our kernels as they
bracket torch's.

  python3 bench/fused/fused_vs_torch.py --lib build/lib/libattnprof.so

--kernels mma_sync,wgmma,ws also times flash with each kernel forced (an
engine handle with opts.flash_kernel set; one this device or build lacks is
refused and left out) beside the kernel flash picks and torch's FA2, after
checking each against torch on the cell and on odd shapes (tails, causal
diagonal); --mma-sync is --kernels mma_sync; --d 128 keeps the cells of one
head dim; --rounds N times torch and every kernel N times in turn (the
medians' median is printed), which keeps clock drift from favouring
whichever runs first.
"""
import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_setup import load_attnprof, median_us, raw_runner  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="S <= 4096 only")
    ap.add_argument("--mask-only", action="store_true",
                    help="only the masked cells (S <= 4096, non-causal): efficient and efficient+mask")
    ap.add_argument("--kernels", "--versions", default="",
                    help="comma list of flash kernels to force beside auto: mma_sync,wgmma,ws")
    ap.add_argument("--d", type=int, default=0, help="only the cells of this head dim")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--flash-only", action="store_true")
    ap.add_argument("--mma-sync", action="store_true",
                    help="also time flash's mma.sync kernel (opts.flash_kernel=mma_sync) "
                         "beside the kernel flash picks (wgmma on a H100/H200)")
    opt = ap.parse_args()
    attnprof = load_attnprof(opt.lib)
    kernels = [x for x in opt.kernels.split(",") if x]
    if opt.mma_sync and "mma_sync" not in kernels:
        kernels.append("mma_sync")
    engines = {"auto": attnprof.Engine()}
    for kname in kernels:
        engines[kname] = attnprof.Engine(flash_kernel=kname)

    def ours(backend, q, k, v, o, causal, mask=None, kernel="auto"):
        call = attnprof.Call(q, k, v, o, causal="top-left" if causal else None, mask=mask,
                             mask_kind="additive" if mask is not None else None,
                             engine=engines[kernel])
        return raw_runner(attnprof, call, backend)

    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; bf16 BHSD; "
          f"median of {opt.reps} calls; TFLOP/s = 4 B H S^2 D (/2 causal) / time")
    torch.manual_seed(0)
    # odd shapes first (tails, causal diagonal, Sq != Sk): every kernel against torch
    for ver in ["auto"] + kernels:
        worst_odd, fails = 0.0, []
        for b, h, sq, sk, d, causal in ((1, 4, 1000, 1000, 128, False), (1, 4, 1000, 1000, 128, True),
                                        (2, 3, 77, 77, 128, True), (1, 2, 4129, 4129, 128, True),
                                        (1, 2, 200, 333, 128, False), (2, 2, 130, 130, 128, False),
                                        (1, 2, 513, 513, 64, True)):
            if opt.d and d != opt.d:
                continue
            q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
            k, v = (torch.randn(b, h, sk, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
            o = torch.full_like(q, float("nan"))
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
            try:
                ours("flash", q, k, v, o, causal, None, ver)()
                torch.cuda.synchronize()
                err = ((o.float() - ref).norm() / ref.norm()).item()
            except RuntimeError as e:
                err = float("inf")
                print(f"  flash {ver} {b}x{h}x{sq}x{sk}x{d}: {e}")
            worst_odd = max(worst_odd, err) if err == err else float("inf")
            if not err <= 1e-2:
                fails.append(f"{b}x{h}x{sq}x{sk}x{d} causal={causal} rel_err {err:.3e}")
        print(f"odd shapes flash {ver}: {'PASS' if not fails else 'FAIL'} worst rel_err {worst_odd:.2e}"
              + "".join("\n  " + f for f in fails))
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
        if opt.d and d != opt.d:
            continue
        if opt.mask_only and causal:
            continue
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        mask = (torch.rand(1, 1, s, s, device="cuda") * 4 - 2).to(torch.bfloat16) if s <= 4096 else None
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        pairs = [("flash", SDPBackend.FLASH_ATTENTION, "flash", None),
                 ("efficient", SDPBackend.EFFICIENT_ATTENTION, "efficient", None)]
        if mask is not None and not causal:  # torch takes a mask or is_causal, not both
            pairs.append(("efficient+mask", SDPBackend.EFFICIENT_ATTENTION, "efficient", mask))
        if opt.mask_only:
            pairs = pairs[1:]
        if opt.flash_only:
            pairs = pairs[:1]
        for name, tb, ob, m in pairs:
            with sdpa_kernel(tb):
                tfn = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)
                ref = tfn()
                runs = [(name, "auto")] + ([(f"flash {x}", x) for x in kernels]
                                           if name == "flash" else [])
                fns = []
                for rname, ver in runs:
                    ofn = ours(ob, q, k, v, o, causal, m, ver)
                    o.fill_(float("nan"))
                    try:
                        ofn()
                        torch.cuda.synchronize()
                        err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
                    except RuntimeError as e:
                        print(f"{rname}: {e}")
                        continue
                    label = f"{b}x{h}x{s}x{d}"
                    if not err <= 1e-2:
                        print(f"{label:<18}{'yes' if causal else 'no':<7}{rname:<16} FAIL rel_err {err:.3e}")
                        worst[rname] = 0.0
                        continue
                    fns.append((rname, ofn, err))
                tts, ots = [], {r: [] for r, _, _ in fns}
                for _ in range(max(1, opt.rounds)):
                    tts.append(median_us(tfn, opt.reps))
                    for rname, ofn, _ in fns:
                        ots[rname].append(median_us(ofn, opt.reps))
                tt = statistics.median(tts)
            for rname, _, err in fns:
                ot = statistics.median(ots[rname])
                ratio = tt / ot
                worst[rname] = min(worst.get(rname, 9e9), ratio)
                print(f"{label:<18}{'yes' if causal else 'no':<7}{rname:<16}{tt:9.1f}{ot:9.1f}"
                      f"{flops / tt * 1e-6:9.1f}{flops / ot * 1e-6:9.1f}{ratio:7.2f}{err:10.2e}",
                      flush=True)
        del q, k, v, o, mask
    print("lowest ratio (ours / torch, >= 1.00 is the target): " +
          ", ".join(f"{k} {v:.2f}" for k, v in worst.items()))


if __name__ == "__main__":
    sys.exit(main())
