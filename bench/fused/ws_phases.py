#!/usr/bin/env python3
"""Where the time of flash's ws kernel goes on short-S cells, from clock
stamps per CTA and tile (an ablation build: ATTNPROF_FLASH_WS_AB bit 2048,
WS_AB_STAMPS, runs the WS_STAMPS instances, bf16 D64 both tiles and D128
128 x 128, which write the stamps of each call to ATTNPROF_FLASH_WS_STAMPS;
flash_fwd_ws_kernel.cuh says what each word is).

Per cell and schedule (--ab: the WS_AB bits besides 2048; 0 the static
schedule, 1024 the dynamic one), after warm-up calls:
  us        CUDA-event median of --reps calls of the plain kernel (same AB bits,
            no stamps) and of the stamps instance (the stamps' own cost)
  Q first / later  the mean Q wait of each consumer's first tile and of
            its later ones (median too): the CTA's first loads against the
            steady state
  span      the last CTA's end less the first CTA's start (%globaltimer)
  busy      per CTA, its end less its start: mean, min / span; tail = span
            less busy, mean over CTAs (the schedule's imbalance plus the
            spread of CTA starts)
  per tile  means over every consumer's tiles, us: Q wait (loop top to Q
            landed), K0 wait (to the first K tile landed), S0 (the turn and
            the first S issued), loop (to the last P V done), epi (the
            epilogue: O out, store issued); and each as a share of CTA busy
  tensor    4 kBM kBN D per key tile / 4096 bf16 FLOP per SM clock (H100 /
            H200 dense wgmma): the tensor-core time of the tile work issued,
            masked keys included, as a share of busy clocks; loop/kt is the
            loop's clocks per key tile after the first, beside tc/kt, the
            tensor clocks of one key tile
Then per cell the step records (32-bit %clock of thread 0 of each consumer
and of the producer thread; kWsStepRecs in flash_fwd_ws_kernel.cuh), as
median and p90 clocks per phase over every consumer's tiles: the first key
tile, the later steps, the last step, the finish and the tile's head
(STEP_WORDS), then the first key tile and the second per consumer (c0,
c1), and the Q wait pinned on one side: when the producer issued that
tile's Q against when the consumer began to wait for it, and what the
producer waited for before (the Q buffer's empty barrier, freed by the
previous tile's first S), grouped by the previous tile's key tiles.
  python3 bench/fused/ws_phases.py --lib build-gpu/lib/libattnprof.so
"""
import argparse
import os
import statistics
import struct
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_setup import load_attnprof, median_us, parse_cell, raw_runner  # noqa: E402

CELLS = "8x16x1024x64c,16x32x1024x64c,16x32x1024x64,16x16x1024x128,16x16x1024x128c"


# The step records' words (flash_fwd_ws_kernel.cuh, WS_STAMPS): each phase
# is the clocks from one word to the next; "next" is the next record's word 0.
STEP_WORDS = {
    "first": ["K0 wait", "S issue", "S wait", "mask+max", "turn wait", "softmax", "to next"],
    "step": ["K/V wait", "issue", "S wait", "mask+max", "turn wait", "exps", "PV wait", "rescale"],
    "finish": ["V wait", "PV issue", "PV wait", "to epi"],
    "head": ["Q wait", "epilogue"],
}
KEY_RECS = 16  # kWsStepKeyRecs; record 16 the finish, 17 the head


def read_stamps(path):
    raw = open(path, "rb").read()
    magic, g, cons, bm, bn, d, ntiles, block = struct.unpack("<8i", raw[:32])
    if magic != 0x50545357:
        raise SystemExit(f"{path}: not a stamps file")
    end = 32 + g * 3 * block * 8
    words = np.frombuffer(raw[32:end], dtype=np.uint64).astype(np.int64).reshape(g, 3, block)
    st = dict(g=g, cons=cons, bm=bm, bn=bn, d=d, ntiles=ntiles, words=words, steps=None)
    if len(raw) > end:
        magic2, recs, nw, blocks = struct.unpack("<4i", raw[end:end + 16])
        if magic2 != 0x52535357:
            raise SystemExit(f"{path}: step records without their magic")
        st["steps"] = np.frombuffer(raw[end + 16:], dtype=np.uint32).reshape(g, blocks, ntiles, recs, nw)
    return st


def dclk(b, a):
    """b - a in clocks, the 32-bit counter's wrap undone (signed)."""
    return ((np.asarray(b, np.int64) - np.asarray(a, np.int64) + 2**31) % 2**32) - 2**31


def step_phases(st):
    """Per phase, the clocks of every consumer tile (see STEP_WORDS)."""
    sw, w, cons = st["steps"], st["words"], st["cons"]
    out = {(g, name): [] for g, names in STEP_WORDS.items() for name in names}
    for c in range(st["g"]):
        for cw in range(cons):
            n_t = min(int(w[c, cw, 4]), st["ntiles"])
            for t in range(n_t):
                rec = sw[c, cw, t]
                n = int(w[c, cw, 8 + 8 * t])  # key tiles of this tile
                hd, fin = rec[KEY_RECS + 1], rec[KEY_RECS]
                out[("head", "Q wait")].append(dclk(hd[1], hd[0]))
                out[("head", "epilogue")].append(dclk(hd[3], hd[2]))
                if n == 0:
                    continue
                if n > KEY_RECS:
                    continue  # steps past the records: not stamped
                nxt = lambda i: rec[i + 1][0] if i + 1 < n else fin[0]  # noqa: E731
                r0 = rec[0]
                # the first key tile and the second (step 1) also per consumer: on the
                # causal diagonal their rows see different parts of the first key tile
                for grp in ("first", f"first c{cw}"):
                    for k, name in enumerate(STEP_WORDS["first"][:6]):
                        out.setdefault((grp, name), []).append(dclk(r0[k + 1], r0[k]))
                    out.setdefault((grp, "to next"), []).append(dclk(nxt(0), r0[6]))
                for i in range(1, n):
                    r = rec[i]
                    for grp in ("last" if i == n - 1 else "step",) + ((f"step1 c{cw}",) if i == 1 else ()):
                        for k, name in enumerate(STEP_WORDS["step"][:7]):
                            out.setdefault((grp, name), []).append(dclk(r[k + 1], r[k]))
                        out.setdefault((grp, "rescale"), []).append(dclk(nxt(i), r[7]))
                        out.setdefault((grp, "total"), []).append(dclk(nxt(i), r[0]))
                for k, name in enumerate(STEP_WORDS["finish"][:3]):
                    out[("finish", name)].append(dclk(fin[k + 1], fin[k]))
                out[("finish", "to epi")].append(dclk(hd[2], fin[3]))
    return out


def q_explain(st):
    """The Q wait of each consumer tile after the first, against the producer's
    stamps of that tile (record 0 of block 3: 0 tile start, 1 the Q buffer's
    empty wait done, 2 Q issued, 7 key tiles), grouped by the previous tile's
    key tiles."""
    sw, w, cons = st["steps"], st["words"], st["cons"]
    rows = []
    for c in range(st["g"]):
        prod = sw[c, 3]
        for cw in range(cons):
            n_t = min(int(w[c, cw, 4]), st["ntiles"])
            for t in range(1, n_t):
                hd = sw[c, cw, t, KEY_RECS + 1]
                p = prod[t, 0]
                # the Q buffer of tile t was freed after tile t-1's first S by every consumer
                rel = max(int(sw[c, k, t - 1, 0, 2]) for k in range(cons))
                rows.append(dict(prev=int(prod[t - 1, 0, 7]), wait=dclk(hd[1], hd[0]),
                                 late=dclk(p[2], hd[0]), lat=dclk(hd[1], max(int(p[2]), int(hd[0]))),
                                 qe=dclk(p[1], p[0]), rel=dclk(p[1], rel), issue=dclk(p[2], p[1]),
                                 before=dclk(hd[0], p[0])))
    return rows


def pct(v, q):
    return float(np.percentile(np.asarray(v, float), q)) if len(v) else float("nan")


def print_steps(cell, ab, st, mhz):
    ph = step_phases(st)
    print(f"steps {cell} ab {ab}: clocks per phase, median / p90 (n) over consumer tiles; {mhz:.0f} MHz")
    per_cons = sorted({k[0] for k in ph if " c" in k[0]})
    for grp in ["head", "first", "step", "last", "finish"] + per_cons:
        names = [k[1] for k in ph if k[0] == grp]
        cells = [f"{nm} {pct(ph[(grp, nm)], 50):.0f}/{pct(ph[(grp, nm)], 90):.0f}" for nm in names
                 if ph[(grp, nm)]]
        cnt = len(ph[(grp, names[0])]) if names else 0
        print(f"  {grp:<7}({cnt:>5}): " + ", ".join(cells))
    rows = q_explain(st)
    print(f"qwait {cell} ab {ab}: clocks, median / p90 over tiles after each consumer's first;"
          " late = Q issued less the consumer's wait start (> 0: issued after it began),"
          " lat = landed less max(issue, wait start), qe = producer's wait for the Q buffer,"
          " rel = that wait's end less the previous tile's last first-S issue, before = wait start"
          " less the producer's tile start")
    for lo, hi in ((0, 2), (3, 5), (6, 1 << 30)):
        sel = [r for r in rows if lo <= r["prev"] <= hi]
        if not sel:
            continue
        col = lambda k: [r[k] for r in sel]  # noqa: E731
        after = sum(1 for r in sel if r["late"] > 0) / len(sel)
        print(f"  prev n {lo}-{hi if hi < 99 else 'up'} ({len(sel)} tiles): wait {pct(col('wait'), 50):.0f}/"
              f"{pct(col('wait'), 90):.0f}, Q issued after the wait began in {100 * after:.0f} %,"
              f" late {pct(col('late'), 50):.0f}/{pct(col('late'), 90):.0f}, lat {pct(col('lat'), 50):.0f}/"
              f"{pct(col('lat'), 90):.0f}, qe {pct(col('qe'), 50):.0f}/{pct(col('qe'), 90):.0f},"
              f" rel {pct(col('rel'), 50):.0f}, issue {pct(col('issue'), 50):.0f},"
              f" before {pct(col('before'), 50):.0f}/{pct(col('before'), 90):.0f}")


def phases(st):
    """The summary figures of one stamps file (see the module's docstring)."""
    w, g, cons = st["words"], st["g"], st["cons"]
    tc_kt = 4 * st["bm"] * st["bn"] * st["d"] / 4096  # tensor clocks per key tile
    starts, ends, busy_clk, ns_clk, tiles = [], [], [], [], []
    ph = {k: [] for k in ("q", "k0", "s0", "loop", "epi")}
    ph_sum = {k: 0.0 for k in ph}
    tensor_clk, loop_kt, truncated = 0.0, [], False
    q_first, q_rest = [], []  # the Q wait of each consumer's first tile, and of the others
    for c in range(g):
        blk = w[c, :cons]
        gt0, clk0, gt1, clk1, nt = (blk[:, i] for i in range(5))
        starts.append(gt0.min())
        ends.append(gt1.max())
        rate = (gt1 - gt0) / np.maximum(clk1 - clk0, 1)  # ns per clock, per consumer
        ns_clk.append(float(rate.mean()))
        busy_clk.append(float((clk1 - clk0).max()))
        tiles.append(int(nt[0]))
        truncated |= int(nt.max()) > st["ntiles"]
        for cw in range(cons):
            n_t = min(int(nt[cw]), st["ntiles"])
            rec = blk[cw, 8:8 + 8 * n_t].reshape(n_t, 8)
            kt, t1, t2, t3, t4, t5, t6 = (rec[:, i] for i in range(7))
            # a tile with no key tile stamps neither K0, S0 nor its loop
            t3, t4, t5 = (np.where(kt > 0, x, t2) for x in (t3, t4, t5))
            parts = {"q": t2 - t1, "k0": t3 - t2, "s0": t4 - t3, "loop": t5 - t4, "epi": t6 - t5}
            for k, v in parts.items():
                ph[k] += list(v * rate[cw])
                ph_sum[k] += float(v.sum() * rate[cw])
            q_first += list(parts["q"][:1] * rate[cw])
            q_rest += list(parts["q"][1:] * rate[cw])
            if cw == 0:
                tensor_clk += float(kt.sum()) * tc_kt
            more = kt > 1
            loop_kt += list((t5 - t4)[more] / (kt[more] - 1))
    starts, ends = np.array(starts, float), np.array(ends, float)
    span = ends.max() - starts.min()
    busy = ends - starts
    busy_total = float(busy.sum()) * cons  # consumer-ns: the phases' denominator
    return {
        "span_us": span / 1e3, "busy_mean_us": busy.mean() / 1e3, "busy_min_frac": busy.min() / span,
        "busy_mean_frac": busy.mean() / span, "tail_us": (span - busy).mean() / 1e3,
        "start_spread_us": (starts.max() - starts.min()) / 1e3,
        "end_spread_us": (ends.max() - ends.min()) / 1e3,
        "tiles_min": min(tiles), "tiles_max": max(tiles), "truncated": truncated,
        "mhz": 1e3 / statistics.mean(ns_clk),
        **{f"{k}_us": statistics.mean(v) / 1e3 if v else 0.0 for k, v in ph.items()},
        **{f"{k}_share": ph_sum[k] / busy_total for k in ph},
        "tensor_share": tensor_clk / float(sum(busy_clk)),
        "loop_kt_clk": statistics.median(loop_kt) if loop_kt else 0.0, "tc_kt_clk": tc_kt,
        "q_first_us": statistics.mean(q_first) / 1e3 if q_first else 0.0,
        "q_rest_us": statistics.mean(q_rest) / 1e3 if q_rest else 0.0,
        "q_rest_med_us": statistics.median(q_rest) / 1e3 if q_rest else 0.0,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--cells", default=CELLS)
    ap.add_argument("--ab", default="0,1024", help="WS_AB bits besides the stamps' 2048, comma list")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default="", help="folder for the raw stamps (npz)")
    opt = ap.parse_args()
    attnprof = load_attnprof(opt.lib)
    eng = attnprof.Engine(flash_kernel="ws")
    path = os.path.join(tempfile.mkdtemp(), "stamps.bin")
    print(f"device: {torch.cuda.get_device_name()}; bf16 BHSD; us: median of {opt.reps} calls")
    hdr = (f"{'cell':<17}{'ab':>5}{'us':>7}{'us(st)':>7}{'span':>7}{'busy':>7}{'min/sp':>7}"
           f"{'tail':>6}{'endsp':>6}{'tiles':>7}{'MHz':>6} | {'Q':>5}{'K0':>5}{'S0':>5}{'loop':>6}"
           f"{'epi':>5} | {'Q%':>5}{'K0%':>5}{'S0%':>5}{'loop%':>6}{'epi%':>5}{'tc%':>6}"
           f"{'loop/kt':>8}{'tc/kt':>6}")
    print(hdr)
    raw = {}
    torch.manual_seed(0)
    for cell in opt.cells.split(","):
        b, h, s, d, causal = parse_cell(cell)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        call = attnprof.Call(q, k, v, o, causal="top-left" if causal else None, engine=eng)
        for ab in (int(x) for x in opt.ab.split(",")):
            def knobs(val):
                def set_env():
                    os.environ["ATTNPROF_FLASH_WS_AB"] = str(val)
                return set_env
            plain = raw_runner(attnprof, call, "flash", knobs(ab))
            stamped = raw_runner(attnprof, call, "flash", knobs(ab | 2048))
            os.environ.pop("ATTNPROF_FLASH_WS_STAMPS", None)
            us = median_us(plain, opt.reps)
            us_st = median_us(stamped, opt.reps)
            os.environ["ATTNPROF_FLASH_WS_STAMPS"] = path
            stamped()
            torch.cuda.synchronize()
            os.environ.pop("ATTNPROF_FLASH_WS_STAMPS")
            st = read_stamps(path)
            raw[f"{cell}_ab{ab}"] = st["words"]
            r = phases(st)
            print(f"{cell:<17}{ab:>5}{us:7.1f}{us_st:7.1f}{r['span_us']:7.1f}{r['busy_mean_us']:7.1f}"
                  f"{r['busy_min_frac']:7.3f}{r['tail_us']:6.1f}{r['end_spread_us']:6.1f}"
                  f"{r['tiles_min']:>4}-{r['tiles_max']:<2}{r['mhz']:6.0f} | {r['q_us']:5.2f}{r['k0_us']:5.2f}"
                  f"{r['s0_us']:5.2f}{r['loop_us']:6.2f}{r['epi_us']:5.2f} | {100 * r['q_share']:5.1f}"
                  f"{100 * r['k0_share']:5.1f}{100 * r['s0_share']:5.1f}{100 * r['loop_share']:6.1f}"
                  f"{100 * r['epi_share']:5.1f}{100 * r['tensor_share']:6.1f}{r['loop_kt_clk']:8.0f}"
                  f"{r['tc_kt_clk']:6.0f}  Q first {r['q_first_us']:.2f} later {r['q_rest_us']:.2f}"
                  f" (median {r['q_rest_med_us']:.2f})"
                  f"{'  (tiles past 64 not stamped)' if r['truncated'] else ''}", flush=True)
            if st["steps"] is not None:
                print_steps(cell, ab, st, r["mhz"])
                raw[f"{cell}_ab{ab}_steps"] = st["steps"]
            if opt.out:  # after each cell: a later failure keeps what was measured
                np.savez_compressed(os.path.join(opt.out, "ws_stamps.npz"), **raw)
        del q, k, v, o


if __name__ == "__main__":
    sys.exit(main())
