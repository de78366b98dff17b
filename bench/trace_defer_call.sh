#!/usr/bin/env bash
# The tenth pass's device call (91a2132:bench/TRACE_COST.md, "Writing during the run"),
# from build-gpu/, $1 = the output folder: the GPU tests of the tracer, one
# deferred CUDA-loop trace with its buffer counts and launch links, then five
# alternating rounds of both loops with attnprof-defer beside attnprof.
set -uo pipefail
out=${1:-/tmp/out}
t0=$SECONDS
ctest -R "test_cupti_sync|test_cupti_planted|test_trace_cli|trace_graphs|test_cupti_defer" \
  --timeout 60 --output-on-failure >"$out/ctest.txt" 2>&1
tail -12 "$out/ctest.txt"
echo "== deferred CUDA loop (ATTNPROF_BENCH=1 ATTNPROF_CUPTI_DEFER=1024), $((SECONDS - t0)) s in"
ATTNPROF_BENCH=1 ATTNPROF_CUPTI_DEFER=1024 timeout 20 ./bin/attnprof trace --stream-only \
  --out /dev/shm/defer.json -- ./bin/trace_overhead_prog 50000 2>&1 | grep -E "attnprof|host_us"
python3 ../bench/trace_links.py /dev/shm/defer.json
rm -f /dev/shm/defer.json
sync
echo "== rounds, $((SECONDS - t0)) s in"
ROUNDS=5 BUDGET_S=${BUDGET_S:-188} TRACE_DIR=/dev/shm N_PY=5120 N_C=50000 \
  PY_MODES="plain floor-kernel nowrite attnprof attnprof-defer torch-cuda" \
  C_MODES="plain floor-kernel attnprof attnprof-defer" \
  PAIRS="nowrite:floor-kernel attnprof:floor-kernel attnprof-defer:floor-kernel attnprof-defer:attnprof attnprof-defer:nowrite torch-cuda:attnprof" \
  bash ../bench/trace_cost_rounds.sh /tmp/r
cp /tmp/r/rounds_*.txt /tmp/r/times.txt "$out/" 2>/dev/null
tar -czf "$out/logs.tar.gz" -C /tmp/r . 2>/dev/null
echo "== done, $((SECONDS - t0)) s"
