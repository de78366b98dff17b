#!/usr/bin/env python3
"""One line per log of the A/B checks (run.sh's check step): ctest's closing
lines, and each compute-sanitizer run's summary with its test's own count.

  python3 bench/ab/logs.py ctest FILE          # ctest -L gpu output
  python3 bench/ab/logs.py san FILE...         # compute-sanitizer outputs
Prints the lines and appends them to the summary (abtable.summary_path);
exit 1 when any log shows a failure, an error or no summary at all.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abtable  # noqa: E402

CTEST_TOTAL = re.compile(r"(\d+)% tests passed(?:, (\d+) tests? failed)? out of (\d+)")
CTEST_ROW = re.compile(r"^\s*\d+ - (\S+) \((\w[^)]*)\)")
ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RACES = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
TEST_COUNT = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed", re.M)


def parse_ctest(text):
    """{'passed_pct', 'failed', 'total', 'failed_tests', 'not_run', 'ok'}; ok
    is False without a closing line (ctest killed) or with any failure."""
    m = None
    for m in CTEST_TOTAL.finditer(text):
        pass
    res = {"failed_tests": [], "not_run": [], "ok": False}
    section = None
    for line in text.splitlines():
        if line.startswith("The following tests FAILED"):
            section = "failed_tests"
        elif line.startswith("The following tests did not run"):
            section = "not_run"
        elif section and CTEST_ROW.match(line):
            name, why = CTEST_ROW.match(line).groups()
            res[section].append(f"{name} ({why})")
        elif section and line.strip() and not line.startswith((" ", "\t")):
            section = None
    if m:
        res.update(passed_pct=int(m.group(1)), failed=int(m.group(2) or 0), total=int(m.group(3)))
        res["ok"] = res["failed"] == 0
    return res


def ctest_line(name, text):
    r = parse_ctest(text)
    if "total" not in r:
        return f"{name}: NO SUMMARY (ctest stopped or did not start)", False
    line = f"{name}: {r['total'] - r['failed']}/{r['total']} passed"
    if r["failed_tests"]:
        line += "; FAILED: " + ", ".join(r["failed_tests"])
    if r["not_run"]:
        line += "; not run: " + ", ".join(r["not_run"])
    return line, r["ok"]


def parse_sanitizer(text):
    """{'errors', 'hazards', 'warnings', 'passed', 'failed', 'skipped',
    'app_error'}: None where the log has no such line."""
    res = {"errors": None, "hazards": None, "warnings": None, "passed": None, "failed": None,
           "skipped": bool(re.search(r"^(SKIP|skipped)", text, re.M)),
           "app_error": "Target application returned an error" in text}
    m = RACES.search(text)
    if m:
        res["hazards"], res["errors"], res["warnings"] = (int(x) for x in m.groups())
    else:
        m = ERRORS.search(text)
        if m:
            res["errors"] = int(m.group(1))
    counts = TEST_COUNT.findall(text)
    if counts:
        res["passed"], res["failed"] = (int(x) for x in counts[-1])
    return res


def san_line(name, text, rc=None):
    r = parse_sanitizer(text)
    ok = r["errors"] == 0 and not r["app_error"] and not r["failed"] and not r["skipped"] \
        and (rc in (None, 0))
    parts = []
    if r["errors"] is None:
        parts.append("NO SANITIZER SUMMARY (timed out or did not start)")
    elif r["hazards"] is not None:
        parts.append(f"{r['hazards']} hazards ({r['errors']} errors, {r['warnings']} warnings)")
    else:
        parts.append(f"{r['errors']} errors")
    if r["passed"] is not None:
        parts.append(f"test {r['passed']} passed, {r['failed']} failed")
    if r["skipped"]:
        parts.append("SKIPPED")
    if r["app_error"]:
        parts.append("the test returned an error")
    if rc not in (None, 0):
        parts.append(f"exit {rc}")
    return f"{name}: {'ok' if ok else 'PROBLEM'}: " + "; ".join(parts), ok


def rc_of(path):
    """The exit status run.sh wrote beside a log (FILE.rc), if any."""
    try:
        with open(path + ".rc") as f:
            return int(f.read().strip() or "0")
    except (OSError, ValueError):
        return None


def main(argv):
    if len(argv) < 2 or argv[0] not in ("ctest", "san"):
        print("usage: logs.py ctest FILE | logs.py san FILE...", file=sys.stderr)
        return 2
    lines, ok = [], True
    for path in argv[1:]:
        name = os.path.basename(path).rsplit(".", 1)[0]
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError as e:
            lines.append(f"{name}: NOT RUN ({e.strerror})")
            ok = False
            continue
        line, good = (ctest_line if argv[0] == "ctest" else
                      lambda n, t: san_line(n, t, rc_of(path)))(name, text)
        lines.append(line)
        ok = ok and good
    abtable.emit(lines)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
