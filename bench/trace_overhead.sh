#!/usr/bin/env bash
# attnprof trace's cost, on the device (scripts/device.d/cupti.sh runs it from
# the build folder): host time added per launch, side by side with
# torch.profiler on the same PyTorch loop; the same for a plain CUDA loop; a
# million launches traced in bounded memory (the program's peak memory at
# 100k and 1M launches) and the export rate. Usage: trace_overhead.sh
# [WORKDIR] (traces and logs go there and are removed; the table to stdout).
set -uo pipefail
out=${1:-/tmp/attnprof_bench}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=./bin
n_py=${N_PY:-10240}

field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" | tail -1; }
added() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b != "") printf "%+.3f", a - b; }'; }

echo "== PyTorch loop: x.add_(1) on one element, $n_py launches in bursts of 256, median of 5"
echo "   (host us to issue one launch; added = minus plain)"
base=$(python3 "$here/trace_overhead.py" plain $n_py 2>>"$out/bench_stderr.log" | tee -a "$out/py.log" | field host_us_per_launch)
echo "py plain             $base"
for mode in torch-cuda torch-cpu-cuda; do
  v=$(python3 "$here/trace_overhead.py" $mode $n_py 2>>"$out/bench_stderr.log" | tee -a "$out/py.log" | field host_us_per_launch)
  echo "py $mode $(printf %*s $((16 - ${#mode})) '')$v  added $(added "$v" "$base")"
done
v=$($bin/attnprof trace --stream-only --out "$out/py_traced.json" -- \
      python3 "$here/trace_overhead.py" plain $n_py 2>>"$out/bench_stderr.log" | tee "$out/py_traced.log" | field host_us_per_launch)
echo "py attnprof-trace    $v  added $(added "$v" "$base")"
grep -E "export|peak" "$out/py_traced.log" | sed 's/^/   /'
grep -E "host_us" "$out/py.log" "$out/py_traced.log" | sed 's/^/   raw: /'
rm -f "$out/py_traced.json"

echo "== CUDA loop: empty <<<1,32>>> kernel (host us per launch in bursts; sustained us per launch)"
for n in 100000 1000000; do
  plain=$($bin/trace_overhead_prog $n)
  $bin/attnprof trace --stream-only --out "$out/c_traced_$n.json" -- $bin/trace_overhead_prog $n \
    >"$out/c_traced_$n.log" 2>&1
  p=$(echo "$plain" | field host_us_per_launch); t=$(field host_us_per_launch <"$out/c_traced_$n.log")
  echo "c n=$n plain $p traced $t added $(added "$t" "$p"); sustained plain $(echo "$plain" | field sustained_us) traced $(field sustained_us <"$out/c_traced_$n.log")"
  grep -E "peak memory|export|trace:" "$out/c_traced_$n.log" | sed 's/^/   /'
  ls -l "$out/c_traced_$n.json" | awk '{printf "   trace file %.1f MB\n", $5/1e6}'
  rm -f "$out/c_traced_$n.json"
done
echo "== every API call recorded (--all-api), CUDA loop n=100000"
$bin/attnprof trace --all-api --stream-only --out "$out/c_all.json" -- $bin/trace_overhead_prog 100000 \
  >"$out/c_all.log" 2>&1
echo "c all-api n=100000 traced $(field host_us_per_launch <"$out/c_all.log") sustained $(field sustained_us <"$out/c_all.log")"
rm -f "$out/c_all.json"
