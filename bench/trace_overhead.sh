#!/usr/bin/env bash
# attnprof trace's cost, on the device (scripts/device.d/cupti.sh runs it from
# the build folder): host time added per launch, side by side with
# torch.profiler on the same PyTorch loop; the same for a plain CUDA loop; a
# million launches traced in bounded memory (the program's peak memory at
# 100k and 1M launches), and the export rate. Usage: trace_overhead.sh
# [WORKDIR] (traces and logs go there and are removed; the table goes to stdout).
set -uo pipefail
out=${1:-/tmp/attnprof_bench}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=./bin
n_py=${N_PY:-20000}

us() { sed -n 's/.*host_us_per_launch \([0-9.]*\).*/\1/p' | tail -1; }

echo "== PyTorch loop, x.add_(1) on one element, $n_py launches (host us per launch)"
for mode in plain torch-cuda torch-cpu-cuda; do
  v=$(python3 "$here/trace_overhead.py" $mode $n_py 2>>"$out/bench_stderr.log" | us)
  echo "py $mode $v"
done
v=$($bin/attnprof trace --stream-only --out "$out/py_traced.json" -- \
      python3 "$here/trace_overhead.py" plain $n_py 2>>"$out/bench_stderr.log" | tee "$out/py_traced.log" | us)
echo "py attnprof-trace $v"
rm -f "$out/py_traced.json"
grep -E "export|peak" "$out/py_traced.log" | sed 's/^/  /'

echo "== CUDA loop, empty <<<1,32>>> kernel (host us per launch)"
for n in 100000 1000000; do
  v=$($bin/trace_overhead_prog $n | us)
  echo "c plain n=$n $v"
  $bin/attnprof trace --stream-only --out "$out/c_traced_$n.json" -- $bin/trace_overhead_prog $n \
    >"$out/c_traced_$n.log" 2>&1
  echo "c attnprof-trace n=$n $(us <"$out/c_traced_$n.log")"
  grep -E "peak memory|export|trace:" "$out/c_traced_$n.log" | sed 's/^/  /'
  ls -l "$out/c_traced_$n.json" | awk '{printf "  trace file %.1f MB\n", $5/1e6}'
  rm -f "$out/c_traced_$n.json"
done
echo "== all API calls recorded (--all-api), CUDA loop n=100000"
$bin/attnprof trace --all-api --stream-only --out "$out/c_all.json" -- $bin/trace_overhead_prog 100000 \
  >"$out/c_all.log" 2>&1
echo "c attnprof-trace-all-api n=100000 $(us <"$out/c_all.log")"
rm -f "$out/c_all.json"
