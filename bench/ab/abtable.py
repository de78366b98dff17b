"""What the A/B scripts share: the side-by-side table of old, new and the
control (new run again), its flags, and output to stdout and $OUT.

A figure here is a speed, larger is faster: for the grid, PyTorch cuDNN's
time over the backend's (measured in the same process); for the serving
rows, 1 / time. new/old is new's speed over old's, ctl is the control's
(new2) speed over new's. A row is flagged when |new/old - 1| exceeds the
tolerance (2%) and exceeds |ctl - 1|, the noise of the same build run twice.
"""
import json
import math
import os
import subprocess

TOL = 0.02


def ratio(a, b):
    """a / b, or nan when either is missing or b is zero."""
    if a is None or b is None or not b or any(math.isnan(x) for x in (a, b)):
        return float("nan")
    return a / b


def flag(new_old, ctl, tol=TOL):
    """'' (within), 'SLOWER' or 'faster' (past tol and past the control's
    noise), or '?' when a figure is missing."""
    if math.isnan(new_old):
        return "?"
    dev = abs(new_old - 1)
    noise = abs(ctl - 1) if not math.isnan(ctl) else 0.0
    if dev > tol and dev > noise:
        return "SLOWER" if new_old < 1 else "faster"
    return ""


def fmt(x, spec=".3f", width=6):
    return f"{'-':>{width}}" if x is None or (isinstance(x, float) and math.isnan(x)) \
        else f"{x:{width}{spec}}"


def geomean(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def side_by_side(rows, groups, title, key_width=22, times=False):
    """rows: [(key, {group: (old, new, new2)})], speeds, or times (us) with
    times=True (nan where missing). Returns the lines (one per row: per group
    old, new, new/old and ctl as speed ratios, flag; then a summary line per
    group) and the flagged rows."""
    head = f"{'cell':<{key_width}}"
    sub = f"{'':<{key_width}}"
    unit = " us" if times else ""
    w = 8 if times else 6
    for g in groups:
        head += f"| {g:<{2 * w + 24}}"
        sub += f"| {'old' + unit:>{w}} {'new' + unit:>{w}} {'new/old':>7} {'ctl':>6} {'':<6} "
    lines = [title, head.rstrip(), sub.rstrip()]
    flagged = []
    stats = {g: ([], []) for g in groups}
    for key, vals in rows:
        line = f"{key:<{key_width}}"
        for g in groups:
            old, new, new2 = vals.get(g, (float("nan"),) * 3)
            if times:
                no, ctl = ratio(old, new), ratio(new, new2)
            else:
                no, ctl = ratio(new, old), ratio(new2, new)
            f = flag(no, ctl)
            if f and f != "?":
                flagged.append((key, g, no, ctl, f))
            if not math.isnan(no):
                stats[g][0].append(no)
            if not math.isnan(ctl):
                stats[g][1].append(abs(ctl - 1))
            spec = ".1f" if times else ".3f"
            line += f"| {fmt(old, spec, w)} {fmt(new, spec, w)} {fmt(no, '.4f', 7)} " \
                    f"{fmt(ctl, '.4f')} {f:<6} "
        lines.append(line.rstrip())
    for g in groups:
        nos, ctls = stats[g]
        if not nos:
            lines.append(f"{g}: no cell measured in both builds")
            continue
        lines.append(f"{g}: new/old geomean {geomean(nos):.4f}, range {min(nos):.4f}-"
                     f"{max(nos):.4f} over {len(nos)} rows; control |ctl-1| median "
                     f"{sorted(ctls)[len(ctls) // 2] if ctls else float('nan'):.4f}, max "
                     f"{max(ctls) if ctls else float('nan'):.4f}; flagged "
                     f"{sum(1 for x in flagged if x[1] == g)}")
    return lines, flagged


def summary_path():
    """Where the tables are kept besides stdout: $AB_SUMMARY, else
    $OUT/ab-summary.txt when $OUT is set (the device tool brings back at most
    8 files: run.sh keeps every table in this one), else None."""
    if os.environ.get("AB_SUMMARY"):
        return os.environ["AB_SUMMARY"]
    return os.path.join(os.environ["OUT"], "ab-summary.txt") if os.environ.get("OUT") else None


def emit(lines):
    """Prints lines, and appends them to summary_path()."""
    text = "\n".join(lines) + "\n"
    print(text, end="", flush=True)
    path = summary_path()
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "a") as f:
            f.write(text)


def run_cli(cmd, timeout):
    """Runs a CLI command with --json: (rc, parsed JSON or None, last line of
    stderr or the reason it did not finish)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, None, f"timed out after {timeout:.0f} s"
    except OSError as e:
        return 127, None, str(e)
    err = [x for x in p.stderr.strip().splitlines() if x.strip()]
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        doc = None
    return p.returncode, doc, err[-1] if err else ""


def grouped_notes(title, notes, limit=6):
    """notes: (who, where, why) -> lines, one per distinct (who, why) with
    its count and first place: a refusal repeated over 12 cells is one line."""
    groups = {}
    for who, where, why in notes:
        groups.setdefault((who, why), []).append(where)
    out = []
    for (who, why), where in list(groups.items())[:limit]:
        out.append(f"{title}: {who} in {len(where)} ({where[0]}{', ...' if len(where) > 1 else ''}):"
                   f" {why}")
    if len(groups) > limit:
        out.append(f"{title}: {len(groups) - limit} more kinds (see the JSON)")
    return out
