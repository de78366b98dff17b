#!/usr/bin/env python3
"""flash's Hopper kernels beside PyTorch's cuDNN and FlashAttention SDPA
backends, in one process on the same tensors (the issue-12 grid).

Cells: D 64/128/256 x S 1k, 2k, 4k, 8k, 16k x causal off/on, B*S = 16384,
H*D = 2048, bf16, BHSD; then the blog shape 8x16x1024x64 causal. Per cell:
  torch cudnn   SDPBackend.CUDNN_ATTENTION
  torch flash   SDPBackend.FLASH_ATTENTION (FA2)
  ws            attnprof flash, ATTNPROF_FLASH_KERNEL=ws (warp-specialized)
  wgmma         attnprof flash, ATTNPROF_FLASH_KERNEL=wgmma (the earlier kernel)
  ws-f0/1/2     (--ablation, D128 only) ws without ping-pong and overlap,
                ping-pong only, overlap only (ATTNPROF_FLASH_WS_FLAGS)
  ws-base/fa3   (--tiles) ws in the base and in FA3's tile shapes
                (ATTNPROF_FLASH_WS_TILE, read only by a build with
                -DATTNPROF_FLASH_WS_ABLATION=ON; elsewhere both run the pick of
                fused/ws_tile.h), both checked and timed
  ws-old/snake  (--ab) ws as it was before the snake schedule and the second
                Q buffer (ATTNPROF_FLASH_WS_AB=3), and with the snake alone
                (=2); read only by an ablation build, like --tiles
  floor         (--floor) ws with the softmax removed (flags 7): the
                tensor-core and copy time of the cell; its output is wrong
                by design and not compared
  ws-prev/pair/wait  (--sched, ablation build) ws as it was before causal
                tiles were paired per head and the O store's wait moved under
                the next tile (ATTNPROF_FLASH_WS_AB=44), with pairing at
                every length (=16), and with the store wait alone put back
                (=8)
  ws-osm        (--osmem, ablation build) ws with O staged in the Q buffer
                and stored by TMA where one Q buffer fits (=32), the kernel
                before O went out from registers there; run right after ws,
                so the two share their neighbours (on two-buffer cells both
                run the same code: the pair's noise)
  ws-eager      (--eager, ablation build) ws with the plain online softmax
                (=128), O rescaled on every key tile: the kernel before the
                lazy softmax (a row's max moves only when it rose by more
                than 8 in log2 units; warps whose rows all kept theirs skip
                O's rescale); run right after ws, as ws-osm
  ws-tree       (--tree, ablation build) ws with the row max and row sum as
                trees of 4 partials and every exp2's FFMA issued first
                (=256, the WS_TREE instances); run right after ws, as ws-osm
  ws-other      (--other-softmax, ablation build) ws with the other softmax form
                (=512, the WS_STALE instances): wg_softmax's (the tile's max
                first) at D64/D128, where ws runs the stale-max softmax (exps
                against the running max, checked by the row sums), and the
                stale-max one at D256; run right after ws, as ws-osm
  ws-dyn        (--dyn, ablation build) ws on a dynamic schedule (=1024):
                each CTA's producer takes its next tile from a global
                counter instead of the static rounds (causal: head by head,
                longest first, the last heads all together longest first);
                run right after ws, as ws-osm
  ws-NAME       (--var NAME=AB, repeatable, ablation build) ws with
                ATTNPROF_FLASH_WS_AB=AB (ws_tile.h's WS_AB_* bits), run right
                after ws (and ws-dyn), as ws-osm
  ws-ctl        (--control) ws again (=0), after the variants above: the
                noise of one pair when every cell runs a changed kernel
  ws-cl         (--cluster, ablation build) ws in clusters of two CTAs that
                share each K and V tile by TMA multicast (=64; non-causal
                bf16; causal cells run ws's code: more noise pairs)
The AB values of --ab and --sched carry 32 so that they still run the
kernel they name (the one-Q-buffer epilogue of their time).
Each run's output is compared with cudnn's first (relative error of the whole
tensor; above 1e-2 the run is not timed). Times: CUDA events around each
call, 3 warm-up calls, median of --reps; --rounds N runs the backends N
times, in reverse order every other round (a later position measured up to
8 % slower on the long cells), and keeps the median of the medians. TFLOP/s = 4 B H S^2 D / t
(halved when causal). Prints ours/cudnn and ours/FA2 per cell.

  python3 bench/fused/ws_vs_torch.py --lib build/lib/libattnprof.so
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
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--d", type=int, default=0, help="only this head dim")
    ap.add_argument("--max-s", type=int, default=16384)
    ap.add_argument("--ablation", action="store_true")
    ap.add_argument("--no-wgmma", action="store_true")
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--tiles", action="store_true")
    ap.add_argument("--ab", action="store_true")
    ap.add_argument("--sched", action="store_true")
    ap.add_argument("--osmem", action="store_true")
    ap.add_argument("--cluster", action="store_true")
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--tree", action="store_true")
    ap.add_argument("--other-softmax", action="store_true")
    ap.add_argument("--dyn", action="store_true")
    ap.add_argument("--var", action="append", default=[], help="NAME=AB: ws-NAME runs AB bits")
    ap.add_argument("--control", action="store_true")
    opt = ap.parse_args()
    attnprof = load_attnprof(opt.lib)
    engines = {k: attnprof.Engine(flash_kernel=k) for k in ("ws", "wgmma")}

    def ours(q, k, v, o, causal, kernel, flags="", tile="", ab=""):
        call = attnprof.Call(q, k, v, o, causal="top-left" if causal else None,
                             engine=engines[kernel])

        def knobs():
            os.environ["ATTNPROF_FLASH_WS_FLAGS"] = flags  # read by flash at each call
            os.environ["ATTNPROF_FLASH_WS_TILE"] = tile
            os.environ["ATTNPROF_FLASH_WS_AB"] = ab
        return raw_runner(attnprof, call, "flash", knobs)

    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; bf16 BHSD; "
          f"median of {opt.reps} calls x {opt.rounds} rounds; TF = TFLOP/s")
    cells = []
    for d in (64, 128, 256):
        for s in (1024, 2048, 4096, 8192, 16384):
            for causal in (False, True):
                cells.append((16384 // s, 2048 // d, s, d, causal))
    cells.append((8, 16, 1024, 64, True))
    print(f"{'B x H x S x D':<18}{'causal':<7}{'run':<9}{'us':>9}{'TF':>8}"
          f"{'/cudnn':>8}{'/FA2':>7}{'rel_err':>10}")
    summary, tiles, abs_ = [], [], []
    variants = {"ws-osm": [], "ws-cl": [], "ws-eager": [], "ws-tree": [], "ws-dyn": [], "ws-other": [], "ws-ctl": []}
    scheds = []
    extra = [tuple(x.split("=", 1)) for x in opt.var]
    for n, _ in extra:
        variants[f"ws-{n}"] = []
    torch.manual_seed(0)
    for b, h, s, d, causal in cells:
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
        if opt.osmem:
            runs.append(("ws-osm", ours(q, k, v, o, causal, "ws", ab="32")))
        if opt.eager:
            runs.append(("ws-eager", ours(q, k, v, o, causal, "ws", ab="128")))
        if opt.tree:
            runs.append(("ws-tree", ours(q, k, v, o, causal, "ws", ab="256")))
        if opt.other_softmax:
            runs.append(("ws-other", ours(q, k, v, o, causal, "ws", ab="512")))
        if opt.dyn:
            runs.append(("ws-dyn", ours(q, k, v, o, causal, "ws", ab="1024")))
        runs += [(f"ws-{n}", ours(q, k, v, o, causal, "ws", ab=a)) for n, a in extra]
        if opt.control:
            runs.append(("ws-ctl", ours(q, k, v, o, causal, "ws", ab="0")))
        if opt.cluster:
            runs.append(("ws-cl", ours(q, k, v, o, causal, "ws", ab="64")))
        if opt.tiles:
            runs += [(f"ws-{t}", ours(q, k, v, o, causal, "ws", tile=t)) for t in ("base", "fa3")]
        if opt.ab:
            runs += [("ws-old", ours(q, k, v, o, causal, "ws", ab="35")),
                     ("ws-snake", ours(q, k, v, o, causal, "ws", ab="34"))]
        if opt.sched:
            runs += [(n, ours(q, k, v, o, causal, "ws", ab=a))
                     for n, a in (("ws-prev", "44"), ("ws-pair", "16"), ("ws-wait", "8"))]
        if not opt.no_wgmma:
            runs.append(("wgmma", ours(q, k, v, o, causal, "wgmma")))
        if opt.ablation and d == 128:
            runs += [(f"ws-f{f}", ours(q, k, v, o, causal, "ws", str(f))) for f in (0, 1, 2)]
        if opt.floor:
            runs.append(("floor", ours(q, k, v, o, causal, "ws", "7")))
        ref = runs[0][1]().float()
        ok, errs = [], {}
        for name, fn in runs:
            o.fill_(float("nan"))
            try:
                out = fn()
                torch.cuda.synchronize()
                out = o if out is None else out
                err = ((out.float() - ref).norm() / ref.norm()).item()
            except RuntimeError as e:
                print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<9} refused: {e}")
                continue
            if name == "floor":
                err = float("nan")
            elif not err <= 1e-2:
                print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<9} FAIL rel_err {err:.3e}")
                continue
            ok.append((name, fn))
            errs[name] = err
        times = {n: [] for n, _ in ok}
        for rnd in range(max(1, opt.rounds)):
            for name, fn in (ok if rnd % 2 == 0 else ok[::-1]):
                times[name].append(median_us(fn, opt.reps))
        t = {n: statistics.median(v) for n, v in times.items()}
        for name, _ in ok:
            rc = t["cudnn"] / t[name] if "cudnn" in t else float("nan")
            rf = t["FA2"] / t[name] if "FA2" in t else float("nan")
            print(f"{label:<18}{'yes' if causal else 'no':<7}{name:<9}{t[name]:9.1f}"
                  f"{flops / t[name] * 1e-6:8.1f}{rc:8.2f}{rf:7.2f}{errs[name]:10.2e}", flush=True)
        if "ws" in t and "cudnn" in t:
            summary.append((label, causal, flops / t["ws"] * 1e-6, flops / t["cudnn"] * 1e-6,
                            t["cudnn"] / t["ws"], t["ws"]))
        if "ws-old" in t:
            abs_.append((label, causal, *(flops / t[n] * 1e-6 if n in t else float("nan")
                                          for n in ("ws-old", "ws-snake", "ws", "cudnn", "FA2")),
                         t["ws"]))
        for vn, rows in variants.items():
            if vn in t and "cudnn" in t:
                rows.append((label, causal, *(flops / t[n] * 1e-6 for n in ("ws", vn, "cudnn", "FA2")),
                             t[vn] / t["ws"], t["ws"]))
        if "ws-prev" in t:
            scheds.append((label, causal, t, flops))
        if "ws-base" in t and "ws-fa3" in t:
            tiles.append((label, causal, *(flops / t[n] * 1e-6 if n in t else float("nan")
                                           for n in ("ws-base", "ws-fa3", "cudnn", "FA2")),
                          t["ws-base"] / t["ws-fa3"]))
        del q, k, v, o
    print("\nsummary: ws vs cudnn (TFLOP/s)")
    for label, causal, tw, tc, r, us in summary:
        print(f"  {label:<16}{'causal' if causal else 'full':<8} ws {tw:6.1f}  cudnn {tc:6.1f}  "
              f"ws/cudnn {r:5.2f}  ({us:.1f} us)")
    titles = {"ws-osm": "osmem: TFLOP/s of ws (O from registers where one Q buffer fits) and "
                        "ws-osm (O staged in the Q buffer, TMA store); ws/var = var time / ws time",
              "ws-cl": "cluster: TFLOP/s of ws and ws-cl (clusters of two sharing K and V by "
                       "multicast; non-causal); ws/var = var time / ws time, var/cudnn",
              "ws-eager": "eager: TFLOP/s of ws (lazy softmax) and ws-eager (O rescaled on every "
                          "key tile); ws/var = var time / ws time",
              "ws-tree": "tree: TFLOP/s of ws (row max and sum as one chain each) and ws-tree "
                         "(trees of 4 partials, FFMAs first); ws/var = tree time / ws time",
              "ws-other": "other: TFLOP/s of ws (stale-max softmax at D64/D128, max first at D256) "
                          "and ws-other (the other form); ws/var = other time / ws time",
              "ws-dyn": "dyn: TFLOP/s of ws (static schedule) and ws-dyn (tiles from a global "
                        "counter); ws/var = dyn time / ws time",
              "ws-ctl": "control: TFLOP/s of ws and ws-ctl (the same kernel again); "
                        "ws/var = ctl time / ws time: the noise of one pair"}
    for vn, rows in variants.items():
        if not rows:
            continue
        print("\n" + titles.get(vn, f"{vn[3:]}: TFLOP/s of ws and {vn} (ATTNPROF_FLASH_WS_AB="
                                     f"{dict(extra).get(vn[3:], '?')}); ws/var = var time / ws time"))
        for label, causal, tw, to, tc, t2, r, us in rows:
            print(f"  {label:<16}{'causal' if causal else 'full':<8} ws {tw:6.1f} ({us:7.1f} us)  "
                  f"{vn[3:]} {to:6.1f}  cudnn {tc:6.1f}  FA2 {t2:6.1f}  ws/var {r:5.2f}  "
                  f"ws/cudnn {tw / tc:5.2f}  var/cudnn {to / tc:5.2f}  ws/FA2 {tw / t2:5.2f}")
    if tiles:
        print("\ntiles: TFLOP/s of ws in the base and FA3 shapes (fa3 speed-up = base time / fa3 time)")
        for label, causal, tb, tf, tc, t2, r in tiles:
            print(f"  {label:<16}{'causal' if causal else 'full':<8} base {tb:6.1f}  fa3 {tf:6.1f}  "
                  f"cudnn {tc:6.1f}  FA2 {t2:6.1f}  fa3/base {r:5.2f}  best/cudnn {max(tb, tf) / tc:5.2f}")
    if abs_:
        print("\nab: TFLOP/s of ws before (old), with the snake schedule (snake), with the snake "
              "and the second Q buffer (ws); new/old = old time / ws time")
        for label, causal, to, ts, tw, tc, t2, us in abs_:
            print(f"  {label:<16}{'causal' if causal else 'full':<8} old {to:6.1f}  snake {ts:6.1f}  "
                  f"ws {tw:6.1f} ({us:7.1f} us)  cudnn {tc:6.1f}  FA2 {t2:6.1f}  new/old {tw / to:5.2f}  "
                  f"ws/cudnn {tw / tc:5.2f}  ws/FA2 {tw / t2:5.2f}")
    if scheds:
        print("\nsched: TFLOP/s of ws (paired causal schedule at short S, O store's wait under the "
              "next tile), ws-prev (the kernel before both), ws-pair (pairing at every S), ws-wait "
              "(the store wait put back); new/prev = prev time / ws time")
        nan = float("nan")
        for label, causal, t, flops in scheds:
            t = {n: t.get(n, nan) for n in ("ws", "ws-prev", "ws-pair", "ws-wait", "cudnn", "FA2")}
            tf = {n: flops / v * 1e-6 for n, v in t.items()}
            print(f"  {label:<16}{'causal' if causal else 'full':<8} ws {tf['ws']:6.1f} ({t['ws']:7.1f} us)"
                  f"  prev {tf['ws-prev']:6.1f}  pair {tf['ws-pair']:6.1f}  wait {tf['ws-wait']:6.1f}"
                  f"  cudnn {tf['cudnn']:6.1f}  FA2 {tf['FA2']:6.1f}  new/prev {t['ws-prev'] / t['ws']:5.2f}"
                  f"  ws/cudnn {t['cudnn'] / t['ws']:5.2f}  ws/FA2 {t['FA2'] / t['ws']:5.2f}")
    if summary:
        print(f"cells at or above cudnn: {sum(r >= 1.0 for *_, r, _ in summary)}/{len(summary)}; "
              f"lowest ws/cudnn {min(r for *_, r, _ in summary):.2f}")


if __name__ == "__main__":
    sys.exit(main())
