#!/usr/bin/env bash
# The fused backends (flash, efficient) on the device, run by
# scripts/device-run.sh from the build folder with $1 = the output folder:
#  bench     bench_fused: every flash kernel a handle can force, and efficient,
#            over the sweep grid, checked against fp64, then timed;
#  torch     fused_vs_torch.py: beside PyTorch's flash and efficient SDPA
#            (with --mma-sync: flash's mma.sync kernel too);
#  sanitize  compute-sanitizer memcheck and racecheck over a small sweep
#            (test_fused_gpu with FUSED_TEST_QUICK=1);
#  ws        flash's warp-specialized kernel beside PyTorch's cuDNN and FA2 on
#            the whole grid (ws_vs_torch.py), then memcheck, racecheck and
#            synccheck over its quick sweep (FUSED_TEST_ONLY=ws);
#  verify    test_fused_gpu's flash sweep beside racecheck, synccheck and
#            memcheck over the quick ws sweep, all at once (VERIFY_TIMEOUT,
#            default 75 s);
#  versus    ws_vs_torch.py with VERSUS_ARGS (the headline grid:
#            "--control --rounds 3"; bench/RESULTS.md), VERSUS_TIMEOUT
#            (default 90 s);
#  sweep     the sweep AUTO's table comes from (attnprof compare --sweep;
#            scripts/gen_auto_table.py reads it);
#  ncu       Nsight Compute (--set full, warm L2, free clocks) over
#            ws_ncu.py's cells (NCU_ARGS; NCU_TIMEOUT, default 60 s) of the
#            kernels NCU_KERNELS names (a regex, default flash_fwd_ws;
#            "flash_fwd_ws|sdpa" with NCU_ARGS --cudnn takes cuDNN's too);
#            details, raw and SASS source pages come back as text with
#            ncu_compare.py's digest; NCU_KEEP_REP=1 the report too (zstd).
# FUSED_STEPS picks steps, comma-separated (default "sanitize,bench,torch");
# FUSED_BENCH_ARGS passes options to bench_fused (default --kernels).
# Under 5 minutes. Raw outputs stay in $1, out of git (bench/RESULTS.md keeps
# the headline figures).
set -uo pipefail
out=${1:-/tmp/out}
mkdir -p "$out"
steps=",${FUSED_STEPS:-sanitize,bench,torch},"
rc=0
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

# compare's sweep (what scripts/gen_auto_table.py reads) as JSON, and a
# one-line-per-point digest of it.
sweep_table() {
  echo "== attnprof compare --device cuda --sweep --json"
  timeout 150 ./bin/attnprof compare --device cuda --sweep --json >"$out/sweep.json" 2>/dev/null || rc=1
  python3 - "$out/sweep.json" <<'PY' | tee "$out/sweep.txt"
import json, sys
for p in json.load(open(sys.argv[1]))["points"]:
    row = " ".join(f'{b["name"]}={b.get("tflops", 0):.0f}' for b in p["backends"])
    print(f'D={p["D"]} S={p["S"]} causal={p["causal"]}: {row}')
PY
}

if [[ $steps == *,bench,* ]]; then
  echo "== bench_fused ${FUSED_BENCH_ARGS:---kernels}"
  # shellcheck disable=SC2086
  timeout 100 ./bin/bench_fused ${FUSED_BENCH_ARGS:---kernels} | tee "$out/bench_fused.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *,torch,* ]]; then
  echo "== fused_vs_torch.py"
  PYTHONUNBUFFERED=1 timeout 120 python3 ../bench/fused/fused_vs_torch.py \
    --lib ./lib/libattnprof.so ${FUSED_TORCH_ARGS:---mma-sync} | tee "$out/fused_vs_torch.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *,sanitize,* ]]; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool (test_fused_gpu, quick)"
    FUSED_TEST_QUICK=1 timeout "${FUSED_SAN_TIMEOUT:-100}" "$cs" --tool "$tool" --error-exitcode 3 \
      ./bin/test_fused_gpu >"$out/sanitize_$tool.txt" 2>&1
    r=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|Error|SKIP" "$out/sanitize_$tool.txt" | tail -6
    echo "$tool exit status $r"
    [ $r -ne 0 ] && rc=1
  done
fi
if [[ $steps == *,ws,* ]]; then
  echo "== ws_vs_torch.py"
  PYTHONUNBUFFERED=1 timeout 150 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so \
    --reps 10 | tee "$out/ws_vs_torch.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
  for tool in memcheck racecheck synccheck; do
    echo "== compute-sanitizer --tool $tool (test_fused_gpu, ws sweep, quick)"
    FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout "${FUSED_SAN_TIMEOUT:-100}" "$cs" --tool "$tool" \
      --error-exitcode 3 ./bin/test_fused_gpu >"$out/sanitize_ws_$tool.txt" 2>&1
    r=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|SKIP" "$out/sanitize_ws_$tool.txt" | tail -4
    echo "$tool exit status $r"
    [ $r -ne 0 ] && rc=1
  done
fi
if [[ $steps == *,verify,* ]]; then
  t=${VERIFY_TIMEOUT:-75}
  FUSED_TEST_ONLY=flash timeout "$t" ./bin/test_fused_gpu >"$out/test_flash.txt" 2>&1 &
  pids=$!
  for tool in racecheck synccheck memcheck; do
    FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout "$t" "$cs" --tool "$tool" --error-exitcode 3 \
      ./bin/test_fused_gpu >"$out/san_ws_$tool.txt" 2>&1 &
    pids="$pids $!"
  done
  for pid in $pids; do wait "$pid" || rc=1; done
  echo "== test_fused_gpu, flash kernels"
  grep -E "FAIL|passed|failed|SKIP" "$out/test_flash.txt" | tail -8
  for tool in racecheck synccheck memcheck; do
    echo "== compute-sanitizer --tool $tool (ws sweep, quick)"
    grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$out/san_ws_$tool.txt" | tail -4
  done
  echo "($SECONDS s in)"
fi
if [[ $steps == *,versus,* ]]; then
  echo "== ws_vs_torch.py ${VERSUS_ARGS:-} ($SECONDS s in)"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "${VERSUS_TIMEOUT:-90}" python3 ../bench/fused/ws_vs_torch.py \
    --lib ./lib/libattnprof.so --reps 10 --no-wgmma ${VERSUS_ARGS:-} >"$out/ws_versus.txt" 2>&1 || rc=1
  sed -n '/^\(control\|summary\):/,$p' "$out/ws_versus.txt"
  grep -E "FAIL|refused|Error" "$out/ws_versus.txt" | head -5
  echo "($SECONDS s in)"
fi
if [[ $steps == *,sweep,* ]]; then
  sweep_table
fi
if [[ $steps == *,ncu,* ]]; then
  nc=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  rep=/tmp/ws_ncu
  echo "== ncu --set full over ws_ncu.py ${NCU_ARGS:-} ($SECONDS s in)"
  # shellcheck disable=SC2086
  timeout "${NCU_TIMEOUT:-60}" "$nc" --set full --import-source yes --cache-control none \
    --clock-control none -k "regex:${NCU_KERNELS:-flash_fwd_ws}" -f -o "$rep" python3 \
    ../bench/fused/ws_ncu.py --lib ./lib/libattnprof.so --order "$out/ncu_order.txt" ${NCU_ARGS:-} \
    >"$out/ncu_run.txt" 2>&1 || rc=1
  grep -vE "^==PROF== Profiling" "$out/ncu_run.txt" | tail -12
  "$nc" -i "$rep.ncu-rep" --page details >"$out/ncu_details.txt" 2>&1 || rc=1
  "$nc" -i "$rep.ncu-rep" --page raw --csv >"$out/ncu_raw.csv" 2>&1 || rc=1
  "$nc" -i "$rep.ncu-rep" --page source --csv --print-source sass >"$out/ncu_source.csv" 2>&1 || rc=1
  python3 ../bench/fused/ncu_compare.py "$out/ncu_raw.csv" "$out/ncu_source.csv" \
    --order "$out/ncu_order.txt" >"$out/ncu_compare.txt" 2>&1 || rc=1
  gzip -f "$out/ncu_source.csv"
  [ -n "${NCU_KEEP_REP:-}" ] && { "${ZSTD:-zstd}" -q -T0 -10 -f "$rep.ncu-rep" -o "$out/ncu_rep.ncu-rep.zst" || rc=1; }
  ls -la "$out"/ncu_* | awk '{print $5, $9}'
  echo "($SECONDS s in)"
fi
exit $rc
