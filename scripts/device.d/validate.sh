#!/usr/bin/env bash
# The session's validation steps beyond ctest, run by scripts/device-run.sh
# from the build folder with $1 = the output folder (DEVICE_D=validate):
#  1. compute-sanitizer memcheck, racecheck and synccheck over flash's ws
#     kernel (test_fused_gpu's quick ws sweep) and memcheck and racecheck over
#     the serving kernels (test_seqs_gpu's quick set; VALIDATE_SEQS_TOOLS=""
#     skips them);
#  2. attnprof compare --sweep --json: the grid AUTO's table is generated from
#     (scripts/gen_auto_table.py), kept as $1/sweep.json.
set -uo pipefail
out=${1:-/tmp/out}
rc=0
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer --tool $tool (flash ws, quick sweep)"
  FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout 90 "$cs" --tool "$tool" --error-exitcode 3 \
    ./bin/test_fused_gpu >"/tmp/san_ws_$tool.txt" 2>&1
  r=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|SKIP" "/tmp/san_ws_$tool.txt" | tail -3
  echo "ws $tool exit status $r"; [ $r -ne 0 ] && rc=1
done
for tool in ${VALIDATE_SEQS_TOOLS-memcheck racecheck}; do
  echo "== compute-sanitizer --tool $tool (serving kernels, quick)"
  SEQS_TEST_QUICK=1 timeout 60 "$cs" --tool "$tool" --error-exitcode 9 ./bin/test_seqs_gpu \
    >"/tmp/san_seqs_$tool.txt" 2>&1
  r=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "/tmp/san_seqs_$tool.txt" | tail -3
  echo "seqs $tool exit status $r"; [ $r -ne 0 ] && rc=1
done
echo "== attnprof compare --device cuda --sweep --json"
timeout 200 ./bin/attnprof compare --device cuda --sweep --json >"$out/sweep.json" 2>/dev/null || rc=1
timeout 200 python3 - "$out/sweep.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["points"]:
    row = " ".join(f'{b["name"]}={b.get("tflops", 0):.0f}' for b in p["backends"])
    print(f'D={p["D"]} S={p["S"]} causal={p["causal"]}: {row}')
PY
exit $rc
