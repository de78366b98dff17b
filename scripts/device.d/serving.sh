#!/usr/bin/env bash
# Serving attention on the device (docs/serving.md), run by
# scripts/device-run.sh from the build folder with $1 = the output folder:
#  sanitize  compute-sanitizer memcheck and racecheck over test_seqs_gpu's
#            quick set (the split-KV decode kernel, its combine, the gather);
#  grid      attnprof compare --serving (the paged decode grid, device time);
#  table     serving_vs_torch.py --table: contiguous decode against each of
#            PyTorch's SDPA backends, both sides timed by CUDA-graph replay,
#            with what 1.5x needs and the floor (lib/libbench_floor.so);
#  bench     serving_vs_torch.py: decode (paged over three table layouts,
#            contiguous) and packed prefill beside PyTorch's SDPA, GB/s
#            against the D2D copy and the read roof (bench_read_bw).
# SERVING_STEPS picks some of them (default: all four, in that order).
# test_seqs_gpu itself runs in ctest -L gpu. Under 5 minutes.
set -uo pipefail
out=${1:-/tmp/out}
steps=" ${SERVING_STEPS:-sanitize grid table bench} "
rc=0
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
bench=../bench/serving/serving_vs_torch.py
if [[ $steps == *" sanitize "* ]]; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool (test_seqs_gpu, quick)"
    SEQS_TEST_QUICK=1 timeout 60 "$cs" --tool "$tool" --error-exitcode 9 ./bin/test_seqs_gpu \
      > "$out/serving_$tool.txt" 2>&1
    r=$?
    tail -3 "$out/serving_$tool.txt"
    [ $r -ne 0 ] && rc=1
  done
fi
if [[ $steps == *" grid "* ]]; then
  echo "== attnprof compare --device cuda --serving"
  timeout 90 stdbuf -oL ./bin/attnprof compare --device cuda --serving > "$out/serving_grid.txt" \
    2> "$out/serving_grid.err"
  [ $? -ne 0 ] && rc=1
  grep -E "^ +(1|16) +32/8 +(1024|32768|131072) +16 (flash|cudnn) " "$out/serving_grid.txt"
fi
if [[ $steps == *" table "* ]]; then
  echo "== serving_vs_torch.py --table"
  PYTHONUNBUFFERED=1 timeout 90 python3 "$bench" --lib ./lib/libattnprof.so --table \
    | tee "$out/serving_table.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *" bench "* ]]; then
  echo "== serving_vs_torch.py"
  PYTHONUNBUFFERED=1 timeout 200 python3 "$bench" --lib ./lib/libattnprof.so \
    --read-bw ./bin/bench_read_bw | tee "$out/serving_vs_torch.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
exit $rc
