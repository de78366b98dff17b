#!/usr/bin/env bash
# Serving attention on the device (docs/serving.md), run by
# scripts/device-run.sh from the build folder with $1 = the output folder:
#  1. compute-sanitizer memcheck and racecheck over test_seqs_gpu's quick set
#     (the split-KV decode kernel, its combine, the page gather);
#  2. serving_vs_torch.py: decode (paged over three table layouts, contiguous)
#     and packed prefill beside PyTorch's SDPA, GB/s against the D2D copy
#     bandwidth and the read roof (bench_read_bw) measured in the run.
# test_seqs_gpu itself runs in ctest -L gpu. Under 3 minutes.
set -uo pipefail
out=${1:-/tmp/out}
rc=0
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool (test_seqs_gpu, quick)"
  SEQS_TEST_QUICK=1 timeout 60 "$cs" --tool "$tool" --error-exitcode 9 ./bin/test_seqs_gpu \
    > "$out/serving_$tool.txt" 2>&1
  r=$?
  tail -3 "$out/serving_$tool.txt"
  [ $r -ne 0 ] && rc=1
done
echo "== serving_vs_torch.py"
PYTHONUNBUFFERED=1 timeout 200 python3 ../bench/serving/serving_vs_torch.py \
  --lib ./lib/libattnprof.so --read-bw ./bin/bench_read_bw | tee "$out/serving_vs_torch.txt"
[ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
exit $rc
