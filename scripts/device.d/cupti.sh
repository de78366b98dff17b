#!/usr/bin/env bash
# Issue 3 on the device, from the build folder, $1 = output folder:
# 1. attnprof trace on a PyTorch script running SDPA with the flash and cuDNN
#    backends inside NVTX ranges, its summary, and the "done when" check;
# 2. the tracing cost and memory bound (bench/trace_overhead.sh).
# CUPTI_STEPS (default "trace,cost") drops the cost step when it lacks "cost".
set -uo pipefail
out=${1:-/tmp/out}
src=..
echo "== attnprof trace -- python3 torch_sdpa_nvtx.py"
./bin/attnprof trace --out "$out/sdpa_trace.json" -- python3 $src/tests/prof_gpu/torch_sdpa_nvtx.py
echo "exit status $?"
./bin/attnprof summary "$out/sdpa_trace.json" --range sdpa_flash --json >/tmp/sdpa_flash.json
./bin/attnprof summary "$out/sdpa_trace.json" --range sdpa_cudnn --json >/tmp/sdpa_cudnn.json
python3 $src/tests/prof_gpu/check_sdpa_trace.py "$out/sdpa_trace.json" /tmp/sdpa_flash.json /tmp/sdpa_cudnn.json
[[ ${CUPTI_STEPS:-trace,cost} == *cost* ]] || exit 0
echo "== tracing cost"
bash $src/bench/trace_overhead.sh /tmp/attnprof_bench
tail -5 /tmp/attnprof_bench/bench_stderr.log 2>/dev/null
