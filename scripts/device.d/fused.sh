#!/usr/bin/env bash
# The fused backends (flash, efficient) on the device, run by
# scripts/device-run.sh from the build folder with $1 = the output folder:
#  1. bench_fused: every version over the sweep grid, checked, then timed;
#  2. fused_vs_torch.py: beside PyTorch's flash and efficient SDPA, one run
#     (with --mma-sync: flash's mma.sync kernel too, beside the wgmma one);
#  3. compute-sanitizer memcheck and racecheck over a small sweep
#     (test_fused_gpu with FUSED_TEST_QUICK=1);
#  4. ws (not in the default steps): flash's warp-specialized kernel beside
#     PyTorch's cuDNN and FA2 SDPA on the whole grid (ws_vs_torch.py, with the
#     D128 ablation and the tensor-core floor), then memcheck, racecheck and
#     synccheck over its quick sweep alone (FUSED_TEST_ONLY=ws).
#  5. tiles (not in the default steps; a build with
#     -DATTNPROF_FLASH_WS_ABLATION=ON): the ws sweep of test_fused_gpu in the
#     base and in FA3's tile shapes (ATTNPROF_FLASH_WS_TILE), side by side,
#     then ws_vs_torch.py --tiles (both shapes beside cuDNN and FA2).
#  6. ab (not in the default steps; an ablation build): test_fused_gpu's
#     flash sweep (every flash kernel against fp64), ws_vs_torch.py --ab (ws
#     before and after the snake schedule and the second Q buffer, beside
#     cuDNN and FA2, 3 rounds), the sweep AUTO's table comes from (as
#     validate.sh prints it), then synccheck and memcheck over the quick ws
#     sweep while the call is under AB_SAN_BEFORE seconds (default 150).
#  7. sched (not in the default steps; an ablation build): test_fused_gpu's
#     flash sweep beside racecheck, synccheck and memcheck over the quick ws
#     sweep (all four at once; SCHED_CHECK_TIMEOUT, default 75 s), then
#     ws_vs_torch.py --sched (ws beside the kernel before the paired causal
#     schedule and the deferred store wait, and each change alone, beside
#     cuDNN and FA2, 2 rounds; SCHED_BENCH_ARGS adds options, e.g. --tiles),
#     then the sweep AUTO's table comes from.
#  8. verify (not in the default steps): test_fused_gpu's flash sweep and
#     racecheck, synccheck and memcheck over the quick ws sweep, all at once
#     (VERIFY_TIMEOUT, default 75 s); with VERIFY_AB set (an ablation
#     build), the ws sweep and the three sanitizers again with
#     ATTNPROF_FLASH_WS_AB=$VERIFY_AB (a bench variant, e.g. 64: clusters;
#     several values, space-separated: each its own sweep and sanitizer
#     runs, all at once, outputs named _ab<value>).
#  9. versus (not in the default steps; an ablation build): ws_vs_torch.py
#     with VERSUS_ARGS (e.g. "--osmem --cluster --eager --tiles --rounds 4"),
#     VERSUS_TIMEOUT (default 90 s).
# 10. sweep (not in the default steps): the sweep AUTO's table comes from
#     (attnprof compare --sweep, as the ab and sched steps run it).
# 11. ncu (not in the default steps): Nsight Compute (--set full, warm L2,
#     free clocks) over ws_ncu.py's cells (NCU_ARGS: its options; NCU_TIMEOUT,
#     default 60 s) of the kernels NCU_KERNELS names (a regex, default
#     flash_fwd_ws; "flash_fwd_ws|sdpa" with NCU_ARGS --cudnn takes cuDNN's
#     too); its details, raw and per-SASS-instruction (source, gzipped) pages
#     come back as text, with ncu_compare.py's side-by-side digest of them;
#     NCU_KEEP_REP=1 brings the report itself back too (zstd).
# 12. phases (not in the default steps; an ablation build): ws_phases.py,
#     clock stamps per CTA and tile of the short-S cells (where the time
#     goes: tail, Q / K0 waits, first S, loop, epilogue; PHASES_ARGS, its
#     options; PHASES_TIMEOUT, default 60 s).
# FUSED_STEPS picks steps (default "sanitize,bench,torch"); FUSED_BENCH_ARGS
# passes options to bench_fused (default --versions). Under 5 minutes.
set -uo pipefail
out=${1:-/tmp/out}
mkdir -p "$out"
steps=${FUSED_STEPS:-sanitize,bench,torch}
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

# The given compute-sanitizer tools over the quick ws sweep, each started
# only while the call is under $1 seconds.
ws_sanitize() {
  local before=$1 tool r
  shift
  for tool in "$@"; do
    [ "$SECONDS" -lt "$before" ] || { echo "$tool: not run (time)"; continue; }
    FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout 60 "$cs" --tool "$tool" --error-exitcode 3 \
      ./bin/test_fused_gpu >"$out/san_ws_$tool.txt" 2>&1
    r=$?; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$out/san_ws_$tool.txt" | tail -2
    echo "ws $tool exit status $r"; [ $r -ne 0 ] && rc=1
  done
}
if [[ $steps == *bench* ]]; then
  echo "== bench_fused ${FUSED_BENCH_ARGS:---versions}"
  # shellcheck disable=SC2086
  timeout 100 ./bin/bench_fused ${FUSED_BENCH_ARGS:---versions} | tee "$out/bench_fused.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *torch* ]]; then
  echo "== fused_vs_torch.py"
  PYTHONUNBUFFERED=1 timeout 120 python3 ../bench/fused/fused_vs_torch.py \
    --lib ./lib/libattnprof.so ${FUSED_TORCH_ARGS:---mma-sync} | tee "$out/fused_vs_torch.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *sanitize* ]]; then
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
if [[ $steps == *ws* ]]; then
  echo "== ws_vs_torch.py"
  PYTHONUNBUFFERED=1 timeout 150 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so \
    --reps 10 --ablation --floor | tee "$out/ws_vs_torch.txt"
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
if [[ $steps == *tiles* ]]; then
  for tile in base fa3; do
    ATTNPROF_FLASH_WS_TILE=$tile FUSED_TEST_ONLY=ws timeout "${FUSED_TEST_TIMEOUT:-60}" \
      ./bin/test_fused_gpu >"$out/test_ws_$tile.txt" 2>&1 &
  done
  for tile in base fa3; do
    wait -n
    r=$?
    [ $r -ne 0 ] && rc=1
  done
  for tile in base fa3; do
    echo "== test_fused_gpu, ws sweep, tile $tile"
    grep -E "FAIL|passed|failed|SKIP" "$out/test_ws_$tile.txt" | tail -8
  done
  echo "== ws_vs_torch.py --tiles"
  PYTHONUNBUFFERED=1 timeout "${FUSED_BENCH_TIMEOUT:-120}" python3 ../bench/fused/ws_vs_torch.py \
    --lib ./lib/libattnprof.so --reps 10 --tiles --no-wgmma | tee "$out/ws_tiles.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *ab* ]]; then
  echo "== test_fused_gpu, flash kernels"
  FUSED_TEST_ONLY=flash timeout 90 ./bin/test_fused_gpu >"$out/test_flash.txt" 2>&1 || rc=1
  grep -E "FAIL|passed|failed|SKIP" "$out/test_flash.txt" | tail -8
  echo "== ws_vs_torch.py --ab"
  PYTHONUNBUFFERED=1 timeout 150 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so \
    --reps 10 --rounds 3 --ab --no-wgmma >"$out/ws_ab.txt" 2>&1 || rc=1
  sed -n '/^ab:/,$p' "$out/ws_ab.txt"; grep -E "FAIL|refused|Error" "$out/ws_ab.txt" | head -5
  sweep_table
  ws_sanitize "${AB_SAN_BEFORE:-150}" synccheck memcheck
fi
if [[ $steps == *sched* ]]; then
  # Correctness first, all at once (nothing here is timed): the flash sweep
  # against fp64 and the three sanitizers over the quick ws sweep.
  t=${SCHED_CHECK_TIMEOUT:-75}
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
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$out/san_ws_$tool.txt" | tail -3
  done
  echo "== ws_vs_torch.py --sched ($SECONDS s in)"
  PYTHONUNBUFFERED=1 timeout "${SCHED_BENCH_TIMEOUT:-90}" python3 ../bench/fused/ws_vs_torch.py \
    --lib ./lib/libattnprof.so --reps 10 --rounds 2 --sched ${SCHED_BENCH_ARGS:-} --no-wgmma \
    >"$out/ws_sched.txt" 2>&1 || rc=1
  sed -n '/^\(tiles\|sched\):/,$p' "$out/ws_sched.txt"
  grep -E "FAIL|refused|Error" "$out/ws_sched.txt" | head -5
  echo "($SECONDS s in)"
  sweep_table
fi
if [[ $steps == *verify* ]]; then
  t=${VERIFY_TIMEOUT:-75}
  FUSED_TEST_ONLY=flash timeout "$t" ./bin/test_fused_gpu >"$out/test_flash.txt" 2>&1 &
  pids=$!
  runs="-"
  [ -n "${VERIFY_AB:-}" ] && runs="- $VERIFY_AB"
  for v in $runs; do
    sfx=""; [ "$v" != - ] && sfx="_ab$v"
    if [ "$v" != - ]; then
      ATTNPROF_FLASH_WS_AB=$v FUSED_TEST_ONLY=ws timeout "$t" ./bin/test_fused_gpu \
        >"$out/test_ws$sfx.txt" 2>&1 &
      pids="$pids $!"
    fi
    for tool in racecheck synccheck memcheck; do
      ATTNPROF_FLASH_WS_AB=${v#-} FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout "$t" "$cs" --tool "$tool" \
        --error-exitcode 3 ./bin/test_fused_gpu >"$out/san_ws_$tool$sfx.txt" 2>&1 &
      pids="$pids $!"
    done
  done
  for pid in $pids; do wait "$pid" || rc=1; done
  echo "== test_fused_gpu, flash kernels"
  grep -E "FAIL|passed|failed|SKIP" "$out/test_flash.txt" | tail -8
  for f in "$out"/test_ws_ab*.txt "$out"/san_ws_*.txt; do
    [ -f "$f" ] || continue
    echo "== $(basename "$f" .txt)"
    grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$f" | tail -4
  done
  echo "($SECONDS s in)"
fi
if [[ $steps == *versus* ]]; then
  echo "== ws_vs_torch.py ${VERSUS_ARGS:-} ($SECONDS s in)"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "${VERSUS_TIMEOUT:-90}" python3 ../bench/fused/ws_vs_torch.py \
    --lib ./lib/libattnprof.so --reps 10 --no-wgmma ${VERSUS_ARGS:-} >"$out/ws_versus.txt" 2>&1 || rc=1
  sed -n '/^\(osmem\|cluster\|eager\|tree\|other\|dyn\|control\|tiles\|summary\):/,$p' "$out/ws_versus.txt"
  grep -E "FAIL|refused|Error" "$out/ws_versus.txt" | head -5
  echo "($SECONDS s in)"
fi
if [[ $steps == *sweep* ]]; then
  sweep_table
fi
if [[ $steps == *phases* ]]; then
  echo "== ws_phases.py ${PHASES_ARGS:-} ($SECONDS s in)"
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 timeout "${PHASES_TIMEOUT:-60}" python3 ../bench/fused/ws_phases.py \
    --lib ./lib/libattnprof.so --out "$out" ${PHASES_ARGS:-} 2>&1 | tee "$out/ws_phases.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
  echo "($SECONDS s in)"
fi
if [[ $steps == *ncu* ]]; then
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
