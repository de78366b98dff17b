"""Medians of a rounds file of bench/trace_cost_rounds.sh: per mode the median
host us per launch, and the medians of its differences paired within a round
to plain and to the mode before it in the file's order (the ladder's step),
with their spread; then any other pair asked for (A:B, A minus B).
usage: trace_rounds_table.py ROUNDS.txt [A:B ...]"""
import statistics
import sys


def parse(path):
    """The modes in the file's order, and per round {mode: us} (a mode that
    printed nothing is left out of its round)."""
    order, rounds = [], []
    for line in open(path):
        words = line.split(":", 1)[1].split()
        order = order or words[::2]
        row = {}
        for mode, val in zip(words[::2], words[1::2]):
            try:
                row[mode] = float(val)
            except ValueError:
                pass
        rounds.append(row)
    return order, rounds


def paired(rounds, a, b):
    return [r[a] - r[b] for r in rounds if a in r and b in r]


def spread(d):
    return f"{statistics.median(d):+7.3f} [{min(d):+.3f} {max(d):+.3f}] n={len(d)}" if d else "-"


def main():
    order, rounds = parse(sys.argv[1])
    print(f"== {sys.argv[1]}: {len(rounds)} rounds; added = median of paired differences [min max]")
    print(f"{'mode':14s} {'median':>7s}  {'minus plain':34s} minus the mode before")
    for i, m in enumerate(order):
        vals = [r[m] for r in rounds if m in r]
        med = f"{statistics.median(vals):7.3f}" if vals else "      -"
        vs_plain = spread(paired(rounds, m, "plain")) if m != "plain" else ""
        step = f"{spread(paired(rounds, m, order[i - 1]))} (- {order[i - 1]})" if i else ""
        print(f"{m:14s} {med}  {vs_plain:34s} {step}")
    for pair in sys.argv[2:]:
        a, b = pair.split(":", 1)
        print(f"{a} minus {b}: {spread(paired(rounds, a, b))}")


if __name__ == "__main__":
    main()
