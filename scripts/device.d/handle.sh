#!/usr/bin/env bash
# The engine handle on the device, run by scripts/device-run.sh from the build
# folder with $1 = the output folder: the library's exported symbols, and the
# graph mode's trace (cudaGraphLaunch plus the kernels it ran, attributed to
# attn_fwd) beside the eager one for naive, naive_inplace and math.
set -uo pipefail
out=${1:-/tmp/out}
rc=0
echo "== exported symbols not attn_/prof_ (none expected)"
nm -D --defined-only lib/libattnprof.so | awk '{print $3}' | grep -v '^attn_\|^prof_' | head
echo "exported: $(nm -D --defined-only lib/libattnprof.so | wc -l)"
for b in naive naive_inplace math; do
  for mode in eager graphs; do
    flag=; [ $mode = graphs ] && flag=--cuda-graphs
    timeout 60 ./bin/attnprof run --device cuda --backend $b $flag --iters 10 \
      --trace "/tmp/${b}_$mode.json" >"/tmp/run_${b}_$mode.txt" 2>&1 || rc=1
    echo "== $b $mode"
    grep -E "^$b |launch|kernel|memcpy|memset|error" "/tmp/run_${b}_$mode.txt" | head -8
    timeout 60 ./bin/attnprof summary "/tmp/${b}_$mode.json" --range attn_fwd 2>&1 | head -12
  done
done
exit $rc
