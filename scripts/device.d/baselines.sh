#!/usr/bin/env bash
# The S x S baselines on the device (naive, naive_inplace, math on CUDA) and
# the side-by-side with PyTorch; run by scripts/device-run.sh from the build
# folder with $1 = the output folder. Steps (BASELINES_STEPS, comma list,
# default "compare,host,torch"):
#   compare  attnprof compare --device cuda at the default GPU shape (8x16x1024x64
#            bf16 causal): GPU ops per forward, device/host time, top kernel
#   host     bench_host_overhead: host time per call from C (target 20 us),
#            then bench_host_ops: each API call of a naive/math forward alone
#   torch    bench/vs_torch.py at the same shape: ours vs PyTorch, ratios,
#            the two device-time targets
#   sweep    attnprof compare --sweep and vs_torch.py --sweep (the grid)
# Full outputs land in $1; the tail of each goes to stdout.
set -uo pipefail
out=${1:-/tmp/out}
steps=${BASELINES_STEPS:-compare,host,torch}
bin=./bin
export PYTHONPATH=$(cd .. && pwd)/python${PYTHONPATH:+:$PYTHONPATH}
export ATTNPROF_LIB=$(pwd)/lib/libattnprof.so PYTHONUNBUFFERED=1
# cuBLAS: the toolkit's if the loader finds it, else the one PyTorch's wheel carries.
if ldd "$ATTNPROF_LIB" | grep -q 'libcublas.*not found'; then
  nv=$(python3 -c 'import nvidia, os; p = list(nvidia.__path__)[0]
print(":".join(r for r, d, f in os.walk(p) if any(x.startswith("libcublas") for x in f)))' 2>/dev/null)
  export LD_LIBRARY_PATH=$nv:${LD_LIBRARY_PATH:-}
  echo "baselines.sh: cuBLAS from $nv"
fi
rc=0
if [[ $steps == *compare* ]]; then
  echo "== attnprof compare --device cuda"
  timeout 120 $bin/attnprof compare --device cuda --trace "$out/compare_trace.json" 2>&1 |
    tee "$out/compare.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *host* ]]; then
  echo "== bench_host_overhead, ATTNPROF_CUDA_GRAPHS=1 (graph replay, opt-in)"
  ATTNPROF_CUDA_GRAPHS=1 timeout 60 $bin/bench_host_overhead | tee "$out/host_overhead.txt"
  echo "== bench_host_overhead, ATTNPROF_CUDA_GRAPHS=0 (every op launched eagerly: the default)"
  ATTNPROF_CUDA_GRAPHS=0 timeout 60 $bin/bench_host_overhead | tee -a "$out/host_overhead.txt"
  echo "== bench_host_ops (per API call, idle and queued)"
  timeout 90 $bin/bench_host_ops > "$out/host_ops.txt" 2>&1
  grep -v '^    ' "$out/host_ops.txt" | tail -12
fi
if [[ $steps == *torch* ]]; then
  echo "== vs_torch.py"
  timeout 120 python3 ../bench/vs_torch.py 2>&1 | tee "$out/vs_torch.txt"
  [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
fi
if [[ $steps == *sweep* ]]; then
  echo "== attnprof compare --device cuda --sweep"
  timeout 150 $bin/attnprof compare --device cuda --sweep 2>&1 | tee "$out/compare_sweep.txt" |
    grep -v "^sweep:"
  echo "== vs_torch.py --sweep"
  timeout 200 python3 ../bench/vs_torch.py --sweep --iters 50 2>&1 |
    tee "$out/vs_torch_sweep.txt" | grep -v "^sweep point"
fi
exit $rc
