#!/usr/bin/env bash
# Issue 16 part 4 on the device (kind nvidia-h200-x2), from the build folder,
# $1 = output folder: a 2-rank torchrun (all-reduce + SDPA per NVTX step)
# under attnprof trace, then merge and the per-rank summary, a rank that
# crashes, ranks that never reach NCCL (tests/prof_gpu/check_ranks_trace.py).
# With fewer than 2 GPUs it says it skipped and runs nothing.
set -uo pipefail
out=${1:-/tmp/out}
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on the lent machines
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${n:-0}" -lt 2 ]; then
  echo "ranks.sh: SKIPPED, 2 GPUs needed and nvidia-smi lists ${n:-0}"
  exit 0
fi
mkdir -p "$out/ranks"
python3 ../tests/prof_gpu/check_ranks_trace.py ./bin/attnprof "$out/ranks" ok crash nonccl
echo "exit status $?"
