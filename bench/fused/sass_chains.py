#!/usr/bin/env python3
"""Dependency chains of the softmax in a kernel's SASS (cuobjdump -sass text).

Splits the listing into basic blocks (branches and their targets), keeps the blocks
holding at least --min-ex2 MUFU.EX2 (a tile's softmax: one per S element),
and prints per block: instructions, FMNMX / FADD / FFMA / MUFU.EX2 counts,
the longest chain of dependent FMNMX and of dependent FADD (register
def-use, the chain broken by any other opcode), the longest def-use chain of
any instructions, and how many instructions sit between each MUFU.EX2 and
the instruction that wrote its input (min / median / how many at 0), and the
block's stall cycles (the sum of the control bits' stall counts: one warp's
issue cycles without the scoreboard waits of MUFU, SHFL and memory).
Registers are followed by name (R, P, UR); a 64-bit pair's high half and
memory are not, which is enough for the softmax's 32-bit arithmetic.

  cuobjdump -sass x.cu.o > x.sass; python3 bench/fused/sass_chains.py x.sass
"""
import argparse
import re
import statistics

INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)\s*([^;]*);")
REG = re.compile(r"\b(U?R\d+|U?P\d)\b")
NO_DEST = ("ST", "BAR", "BRA", "EXIT", "RED", "ATOM", "SYNCS", "WARPGROUP", "HGMMA", "BSYNC",
           "BSSY", "NOP", "MEMBAR", "FENCE", "CCTL", "UTMA", "ARRIVES", "RET", "CALL", "WARPSYNC")


def stall_of(line):
    """The stall count (cycles before the next issue) of an instruction's
    control bits: bits 41-44 of the encoding's high word (its second line)."""
    m = re.search(r"/\* 0x([0-9a-f]{16}) \*/\s*$", line)
    return (int(m.group(1), 16) >> 41) & 0xF if m else 0


def blocks(lines):
    """Basic blocks: split after each branch and before each branch target
    (cuobjdump prints no labels: targets are the addresses BRA names)."""
    targets = set(re.findall(r"BRA[^;]*?0x([0-9a-f]+)\s*;", "\n".join(lines)))
    cur = []
    for k, line in enumerate(lines):
        a = re.search(r"/\*([0-9a-f]{4,})\*/", line)
        if a and a.group(1).lstrip("0") in {x.lstrip("0") for x in targets} and cur:
            yield cur
            cur = []
        m = INSN.search(line)
        if not m:
            continue
        stall = stall_of(lines[k + 1]) if k + 1 < len(lines) else 0
        pred, op, args = m.groups()
        regs = REG.findall(args)
        has_dest = regs and not op.startswith(NO_DEST) and args.strip().startswith(regs[0])
        dests = [regs[0]] if has_dest else []
        if op.startswith(("FSETP", "ISETP")) and len(regs) > 1 and regs[1].startswith("P"):
            dests = regs[:2]
        srcs = [r for r in regs if r not in dests or args.count(r) > 1]
        if pred:
            srcs.append(pred.strip().lstrip("@!"))
        cur.append((op, dests, srcs, stall))
        if op.startswith(("BRA", "EXIT", "RET")):
            yield cur
            cur = []
    if cur:
        yield cur


def analyse(block):
    chain = {"FMNMX": {}, "FADD": {}}
    longest = {"FMNMX": 0, "FADD": 0}
    depth, writer, gaps = {}, {}, []
    best = 0
    for i, (op, dests, srcs, _) in enumerate(block):
        base = op.split(".")[0]
        d = 1 + max((depth.get(r, 0) for r in srcs), default=0)
        best = max(best, d)
        if op == "MUFU.EX2":
            w = [writer[r] for r in srcs if r in writer]
            if w:
                gaps.append(i - max(w) - 1)
        for k in chain:
            c = 1 + max((chain[k].get(r, 0) for r in srcs), default=0) if base == k else 0
            longest[k] = max(longest[k], c)
            for r in dests:
                chain[k][r] = c
        for r in dests:
            depth[r], writer[r] = d, i
    count = lambda name: sum(op.split(".")[0] == name for op, *_ in block)
    return dict(n=len(block), fmnmx=count("FMNMX"), fadd=count("FADD"), ffma=count("FFMA"),
                ex2=sum(op == "MUFU.EX2" for op, *_ in block), max_chain=longest["FMNMX"],
                stalls=sum(x[3] for x in block),
                sum_chain=longest["FADD"], any_chain=best, gaps=gaps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sass")
    ap.add_argument("--min-ex2", type=int, default=16)
    opt = ap.parse_args()
    for k, b in enumerate(blocks(open(opt.sass).read().splitlines())):
        a = analyse(b)
        if a["ex2"] < opt.min_ex2:
            continue
        g = a["gaps"]
        print(f"block {k}: {a['n']} insns, {a['stalls']} stall cycles, FMNMX {a['fmnmx']}, FADD {a['fadd']}, FFMA {a['ffma']}, "
              f"EX2 {a['ex2']}; chains: FMNMX {a['max_chain']}, FADD {a['sum_chain']}, "
              f"any {a['any_chain']}; EX2 after its input's writer: min {min(g)}, median "
              f"{statistics.median(g):g}, right after {sum(x == 0 for x in g)}")


if __name__ == "__main__":
    main()
