#!/usr/bin/env bash
# Context parallelism on the device (run by scripts/device-run.sh from the
# build folder, $1 = output folder). NCCL_NVLS_ENABLE=0 throughout: NVLink
# multicast stays off on the shared machines.
#  1. test_cp_gpu: merge kernel, one-rank ring/all-gather vs fp64 and flash,
#     a communicator made by NCCL and wrapped;
#  2. bench_cp: flash's rate on a ring step's block, the merge, one-rank cp
#     vs flash (the model's inputs, docs/context-parallel.md);
#  3. attnprof cp --gpus 1 with --check and --trace (launcher, per-rank
#     trace, merge, overlap table);
#  4. with 2 or more GPUs: compare --gpus 2 (both variants, checked at a
#     small S, timed at 128k and 256k) and a ring trace with its overlap table.
set -uo pipefail
out=${1:-/tmp/out}
export NCCL_NVLS_ENABLE=0
echo "== test_cp_gpu"; ./bin/test_cp_gpu 2>&1 | tee "$out/test_cp_gpu.txt"
echo "== bench_cp"; ./bin/bench_cp "${CP_BENCH_MAX_C:-32768}" 2>&1 | tee "$out/bench_cp.txt"
echo "== cp --gpus 1"
./bin/attnprof cp --gpus 1 --shape 1x8x4099x128 --kv-heads 2 --causal --check --iters 5 \
  --trace "$out/cp1" 2>&1 | tee "$out/cp1.txt"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "cp.sh: $gpus GPU(s): the two-GPU runs need the nvidia-h200-x2 kind"
  ./bin/attnprof cp --gpus 2 --shape 1x8x4096x128 --causal; echo "exit status $? (2 expected)"
  exit 0
fi
for c in "" "--causal"; do
  ./bin/attnprof compare --gpus 2 --shape 1x8x4098x128 --kv-heads 2 $c --check --iters 5
done 2>&1 | tee "$out/cp2_check.txt"
for s in 131072 262144; do
  ./bin/attnprof compare --gpus 2 --shape 1x32x${s}x128 --causal --iters 5
  ./bin/attnprof run --backend flash --device cuda --shape 1x32x${s}x128 --causal --no-check --iters 5
done 2>&1 | tee "$out/cp2_perf.txt"
./bin/attnprof cp --gpus 2 --variant ring --shape 1x32x131072x128 --causal --iters 3 \
  --trace "$out/cp2_trace" 2>&1 | tee "$out/cp2_trace.txt"
