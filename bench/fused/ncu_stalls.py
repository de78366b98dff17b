#!/usr/bin/env python3
"""Warp-stall samples of flash's ws kernel per part of the kernel, from
Nsight Compute's source page (`ncu -i REPORT --page source --csv
--print-source sass`, as scripts/device.d/fused.sh step ncu writes it).

Each SASS instruction's samples go to one class: the wgmma issue (HGMMA),
the waits for a warpgroup's own wgmma (WARPGROUP.DEPBAR, by how many groups
may stay in flight), the named barriers (BAR: the ping-pong turns and the
epilogue's sync), the mbarrier waits (SYNCS.PHASECHK) split by the barrier
they poll: a full barrier (Q, K or V landed: consumers) or an empty one (a
slot free again: the producer), the producer's other code (from its
setmaxnreg.dec to its EXIT) and the consumers' other code (softmax, mask,
rescale, epilogue, bookkeeping). Then the opcodes with the most samples.
A warp held at a named barrier is sampled at the instructions after the BAR
(stall reason "barrier"), so "barrier" samples outside the DEPBAR waits are
counted to the named barriers. The barrier kind comes from the low 6 bits of the instruction's immediate
offset, the layout of ws_bars (fused/hopper/pipeline.cuh): 0x00 Q full, 0x08
Q empty, 0x20 K full, 0x28 K empty, 0x30 V full, 0x38 V empty.

  python3 bench/fused/ncu_stalls.py ncu_source.csv
"""
import collections
import csv
import io
import re
import sys

FULL = {0x00: "Q full", 0x20: "K full", 0x30: "V full"}
EMPTY = {0x08: "Q empty", 0x28: "K empty", 0x38: "V empty"}
BAR = "named barrier (BAR: turns, epilogue)"


def kernels(path):
    """(kernel name, rows, header) per kernel of the source page."""
    cur = None
    for line in open(path).read().split("\n"):
        if line.startswith('"Kernel Name"'):
            if cur:
                yield cur
            cur = [line]
        elif cur is not None and line.strip():
            cur.append(line)
    if cur:
        yield cur


def classify(sass, in_producer):
    if "HGMMA" in sass:
        return "wgmma issue (HGMMA)"
    if "WARPGROUP.DEPBAR" in sass:
        return f"own wgmma wait (DEPBAR, {sass.split()[-1]} left in flight)"
    if "WARPGROUP.ARRIVE" in sass:
        return "wgmma fence (WARPGROUP.ARRIVE)"
    if re.search(r"\bBAR\.(SYNC|ARV)", sass):
        return BAR
    if "SYNCS.PHASECHK" in sass:
        m = re.search(r"0x([0-9a-f]+)\]", sass)
        low = int(m.group(1), 16) & 0x3F if m else -1
        if low in FULL:
            return f"consumer mbarrier wait ({FULL[low]})"
        if low in EMPTY:
            return f"producer mbarrier wait ({EMPTY[low]})"
        return "mbarrier wait (unknown barrier)"
    if sass.startswith("EXIT"):
        return "EXIT"
    return "producer other" if in_producer else "consumer other"


def main():
    for block in kernels(sys.argv[1]):
        name = block[0].split(",", 1)[1].strip().strip(",").strip('"')
        rows = list(csv.reader(io.StringIO("\n".join(block[1:]))))
        hdr, rows = rows[0], rows[1:]
        ix = {h: i for i, h in enumerate(hdr)}
        reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
        by_class = collections.defaultdict(collections.Counter)
        by_op = collections.defaultdict(collections.Counter)
        total, in_producer = 0, False
        for r in rows:
            sass = r[ix["Source"]].strip()
            if "USETMAXREG.DEALLOC" in sass:
                in_producer = True
            body = sass.split(None, 1)[1] if sass.startswith("@") else sass
            n = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
            total += n
            c = classify(body, in_producer)
            at_bar = 0 if c.startswith("own wgmma wait") else int(r[ix["stall_barrier"]] or 0)
            if at_bar:  # held at a named barrier issued just before
                by_class[BAR]["all"] += at_bar
                by_class[BAR]["barrier"] += at_bar
            for agg, k in ((by_class[c], at_bar), (by_op[body.split(".")[0].split()[0]], 0)):
                agg["all"] += n - k
                for h in reasons:
                    agg[h[6:]] += int(r[ix[h]] or 0) - (k if h == "stall_barrier" else 0)
            if in_producer and body.startswith("EXIT"):
                in_producer = False
        print(f"\n{name}: {total} samples")
        for title, agg, top in (("by part", by_class, 99), ("by opcode", by_op, 12)):
            print(f"  {title}:")
            for c, ctr in sorted(agg.items(), key=lambda kv: -kv[1]["all"])[:top]:
                if not ctr["all"]:
                    continue
                why = ", ".join(f"{h} {v}" for h, v in ctr.most_common(7) if h != "all" and v)
                print(f"    {c:<46}{ctr['all']:8d} {100 * ctr['all'] / max(total, 1):5.1f} %  {why}")


if __name__ == "__main__":
    main()
