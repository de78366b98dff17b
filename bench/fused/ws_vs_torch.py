#!/usr/bin/env python3
"""flash's Hopper kernels beside PyTorch's cuDNN and FlashAttention SDPA
backends, in one process on the same tensors (the issue-12 grid).

Cells: D 64/128/256 x S 1k, 2k, 4k, 8k, 16k x causal off/on, B*S = 16384,
H*D = 2048, bf16, BHSD; then the blog shape 8x16x1024x64 causal. Per cell:
  torch cudnn   SDPBackend.CUDNN_ATTENTION
  torch flash   SDPBackend.FLASH_ATTENTION (FA2)
  ws            attnprof flash on an engine with flash_kernel=ws (warp-specialized)
  wgmma         attnprof flash on an engine with flash_kernel=wgmma (the
                earlier kernel; --no-wgmma leaves it out)
  ws-ctl        (--control) ws again, last: the noise of one pair of runs of
                the same kernel
Each run's output is compared with cudnn's first (relative error of the whole
tensor; above 1e-2 the run is not timed). Times: CUDA events around each
call, 3 warm-up calls, median of --reps; --rounds N runs the backends N
times, in reverse order every other round (a later position measured up to
8 % slower on the long cells), and keeps the median of the medians. TFLOP/s = 4 B H S^2 D / t
(halved when causal). Prints ours/cudnn and ours/FA2 per cell.

  python3 bench/fused/ws_vs_torch.py --lib build/lib/libattnprof.so [--control] [--rounds 3]
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


def grid():
    """The 31 cells (b, h, s, d, causal), in order."""
    cells = [(16384 // s, 2048 // d, s, d, causal)
             for d in (64, 128, 256) for s in (1024, 2048, 4096, 8192, 16384)
             for causal in (False, True)]
    return cells + [(8, 16, 1024, 64, True)]


def checked(runs, out, label, causal):
    """The runs whose output (returned, or written into out) is within 1e-2
    of the first's, and each one's error."""
    ref = runs[0][1]().float()
    ok, errs = [], {}
    for name, fn in runs:
        out.fill_(float("nan"))
        try:
            got = fn()
            torch.cuda.synchronize()
            got = out if got is None else got
            err = ((got.float() - ref).norm() / ref.norm()).item()
        except RuntimeError as e:
            print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<9} refused: {e}")
            continue
        if not err <= 1e-2:
            print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<9} FAIL rel_err {err:.3e}")
            continue
        ok.append((name, fn))
        errs[name] = err
    return ok, errs


def timed(ok, reps, rounds):
    """Median over rounds of each run's median time, in us; every other round reversed."""
    times = {n: [] for n, _ in ok}
    for rnd in range(max(1, rounds)):
        for name, fn in (ok if rnd % 2 == 0 else ok[::-1]):
            times[name].append(median_us(fn, reps))
    return {n: statistics.median(v) for n, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description="flash's ws kernel beside PyTorch's cuDNN and FA2")
    ap.add_argument("--lib", required=True, help="libattnprof.so")
    ap.add_argument("--reps", type=int, default=20, help="calls per median")
    ap.add_argument("--rounds", type=int, default=1, help="rounds, reversed every other one")
    ap.add_argument("--d", type=int, default=0, help="only this head dim")
    ap.add_argument("--max-s", type=int, default=16384, help="no cell longer than this")
    ap.add_argument("--no-wgmma", action="store_true", help="leave the wgmma kernel out")
    ap.add_argument("--control", action="store_true", help="ws run twice (ws-ctl): the noise")
    opt = ap.parse_args()
    attnprof = load_attnprof(opt.lib)
    engines = {k: attnprof.Engine(flash_kernel=k) for k in ("ws", "wgmma")}

    def ours(q, k, v, o, causal, kernel):
        call = attnprof.Call(q, k, v, o, causal="top-left" if causal else None,
                             engine=engines[kernel])
        return raw_runner(attnprof, call, "flash")

    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; bf16 BHSD; "
          f"median of {opt.reps} calls x {opt.rounds} rounds; TF = TFLOP/s")
    print(f"{'B x H x S x D':<18}{'causal':<7}{'run':<9}{'us':>9}{'TF':>8}"
          f"{'/cudnn':>8}{'/FA2':>7}{'rel_err':>10}")
    summary, control = [], []
    torch.manual_seed(0)
    for b, h, s, d, causal in grid():
        if (opt.d and d != opt.d) or s > opt.max_s:
            continue
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        label = f"{b}x{h}x{s}x{d}"

        def torch_fn(backend):
            def call():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return call
        runs = [("cudnn", torch_fn(SDPBackend.CUDNN_ATTENTION)),
                ("FA2", torch_fn(SDPBackend.FLASH_ATTENTION)),
                ("ws", ours(q, k, v, o, causal, "ws"))]
        if not opt.no_wgmma:
            runs.append(("wgmma", ours(q, k, v, o, causal, "wgmma")))
        if opt.control:
            runs.append(("ws-ctl", ours(q, k, v, o, causal, "ws")))
        ok, errs = checked(runs, o, label, causal)
        t = timed(ok, opt.reps, opt.rounds)
        for name, _ in ok:
            rc = t["cudnn"] / t[name] if "cudnn" in t else float("nan")
            rf = t["FA2"] / t[name] if "FA2" in t else float("nan")
            print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<9}{t[name]:9.1f}"
                  f"{flops / t[name] * 1e-6:8.1f}{rc:8.2f}{rf:7.2f}{errs[name]:10.2e}", flush=True)
        if "ws" in t and "cudnn" in t:
            summary.append((label, causal, flops / t["ws"] * 1e-6, flops / t["cudnn"] * 1e-6,
                            t["cudnn"] / t["ws"], t["ws"]))
        if "ws" in t and "ws-ctl" in t:
            control.append((label, causal, t["ws-ctl"] / t["ws"]))
        del q, k, v, o
    print("\nsummary: ws vs cudnn (TFLOP/s)")
    for label, causal, tw, tc, r, us in summary:
        print(f"  {label:<16}{'causal' if causal else 'full':<8} ws {tw:6.1f}  cudnn {tc:6.1f}  "
              f"ws/cudnn {r:5.2f}  ({us:.1f} us)")
    if control:
        print("\ncontrol: ws-ctl time / ws time (the same kernel twice: the noise of one pair)")
        for label, causal, r in control:
            print(f"  {label:<16}{'causal' if causal else 'full':<8} {r:5.3f}")
    if summary:
        print(f"cells at or above cudnn: {sum(r >= 1.0 for *_, r, _ in summary)}/{len(summary)}; "
              f"lowest ws/cudnn {min(r for *_, r, _ in summary):.2f}")


if __name__ == "__main__":
    sys.exit(main())
