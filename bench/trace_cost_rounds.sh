#!/usr/bin/env bash
# attnprof trace's cost process against process (bench/TRACE_COST.md): this
# host moves 5-9 us per launch between processes, so each round runs every
# mode once, in an order rotated by round, the PyTorch loop's modes then the
# CUDA loop's; every round is printed, then per mode the median and the median
# of its paired differences (trace_rounds_table.py). Run from the build
# folder (./bin, ./lib). Usage: trace_cost_rounds.sh [WORKDIR]
#   ROUNDS (7); N_PY (10240, x5 per process); N_C (100000)
#   PY_MODES (plain torch-cuda torch-cpu-cuda attnprof), C_MODES (plain attnprof)
#   TRACE_DIR where the traces go (WORKDIR; each is removed after its process)
#   PIN       a prefix for every process, e.g. "taskset -c 4-7" (the same for all)
#   BUDGET_S  no round starts that would end (at the last round's pace)
#             after this many seconds (0: no limit)
#   PAIRS     more paired differences for the tables, A:B = A minus B
#             (a pair whose modes a loop lacks prints "-")
# Modes: plain; torch-cuda, torch-cpu-cuda (PyTorch loop); attnprof (the
# default); attnprof-API (ATTNPROF_CUPTI_API_MODE=API, e.g. kinds); none,
# kernel, nowrite, maskM (attnprof trace started with ATTNPROF_BENCH_START=0,
# 1, 99 = the default's parts, records neither converted nor written, M);
# floor-load, floor-kernel (libbench_cupti_floor.so injected alone).
set -uo pipefail
out=${1:-/tmp/attnprof_rounds}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-7} n_py=${N_PY:-10240} n_c=${N_C:-100000} budget=${BUDGET_S:-0}
read -ra pin <<<"${PIN:-}"
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" | tail -1; }

# loop mode round: runs one process, prints its host us per launch
run_mode() {
  local loop=$1 mode=$2 r=$3 log="$out/${1}_${2}_$3.log" trace="${TRACE_DIR:-$out}/${1}_$2.json"
  local prog=(python3 "$here/trace_overhead.py" plain "$n_py") env=()
  [ "$loop" = c ] && prog=(./bin/trace_overhead_prog "$n_c")
  case $mode in
  plain) ;;
  torch-*) prog=(python3 "$here/trace_overhead.py" "$mode" "$n_py") ;;
  floor-*) env=("CUDA_INJECTION64_PATH=$PWD/lib/libbench_cupti_floor.so" "ATTNPROF_FLOOR=${mode#floor-}") ;;
  *)
    case $mode in
    none) env=(ATTNPROF_BENCH=1 ATTNPROF_BENCH_START=0) ;;
    kernel) env=(ATTNPROF_BENCH=1 ATTNPROF_BENCH_START=1) ;;
    nowrite) env=(ATTNPROF_BENCH=1 ATTNPROF_BENCH_START=99) ;;
    mask*) env=(ATTNPROF_BENCH=1 "ATTNPROF_BENCH_START=${mode#mask}") ;;
    attnprof-*) env=("ATTNPROF_CUPTI_API_MODE=${mode#attnprof-}") ;;
    esac
    prog=(./bin/attnprof trace --stream-only --out "$trace" -- "${prog[@]}") ;;
  esac
  local t0=$EPOCHREALTIME
  env "${env[@]}" "${pin[@]}" "${prog[@]}" >"$log" 2>&1
  echo "$loop $mode round $r exit $? wall_s $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')" >>"$out/times.txt"
  if [ "$mode" = attnprof ] && [ "$r" = 1 ]; then
    python3 "$here/trace_links.py" "$trace" >"$out/links_${loop}_$mode.txt" 2>&1
  fi
  rm -f "$trace"
  field host_us_per_launch <"$log"
}

# loop round modes...: one round of one loop, its line appended to rounds_LOOP.txt
run_round() {
  local loop=$1 r=$2; shift 2
  local modes=("$@") n=$# k line="round $r:"
  declare -A v=()
  for ((k = 0; k < n; k++)); do
    local m=${modes[$(((k + r - 1) % n))]}
    v[$m]=$(run_mode "$loop" "$m" "$r")
  done
  for m in "${modes[@]}"; do line+=" $m ${v[$m]:-?}"; done
  echo "$loop $line" | tee -a "$out/rounds_$loop.txt"
}

rm -f "$out"/rounds_*.txt "$out/times.txt"
read -ra py_modes <<<"${PY_MODES-plain torch-cuda torch-cpu-cuda attnprof}"
read -ra c_modes <<<"${C_MODES-plain attnprof}"
echo "== host us per launch; PyTorch loop $n_py launches x5 per process, CUDA loop $n_c;" \
  "pinned: ${PIN:-no}"
start=$SECONDS last=0
for ((r = 1; r <= rounds; r++)); do
  if ((budget > 0 && SECONDS - start + last > budget)); then
    echo "== a round takes ${last} s: the budget of ${budget} s ends here, after $((r - 1)) rounds"
    break
  fi
  t=$SECONDS
  ((${#py_modes[@]})) && run_round py "$r" "${py_modes[@]}"
  ((${#c_modes[@]})) && run_round c "$r" "${c_modes[@]}"
  last=$((SECONDS - t))
done
read -ra pairs <<<"${PAIRS:-}"
for loop in py c; do
  [ -s "$out/rounds_$loop.txt" ] && python3 "$here/trace_rounds_table.py" "$out/rounds_$loop.txt" "${pairs[@]}"
done
echo "== launch links in round 1's traces"
for f in "$out"/links_*.txt; do [ -e "$f" ] && echo "$(basename "$f" .txt): $(cat "$f")"; done
echo "== CUPTI buffers completed on the thread that started CUDA (modes with ATTNPROF_BENCH=1)"
grep -H "attnprof bench:" "$out"/*_1.log 2>/dev/null | sed "s|^$out/||"
echo "== floor records (cupti_floor's own count)"
grep -h "cupti_floor" "$out"/*floor-kernel_1.log 2>/dev/null
exit 0
