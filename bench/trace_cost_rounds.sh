#!/usr/bin/env bash
# attnprof trace's cost process against process (91a2132:bench/TRACE_COST.md): this
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
#   BRACKET   loops (e.g. "c") whose round ends with a second plain process:
#             the round's plain is then the mean of plain-a (its place in the
#             rotation) and plain-b (last), both printed, so a round the
#             host's speed moved under shows it (91a2132:bench/TRACE_COST.md, eighth
#             pass: this host's speed shifts in spells of seconds)
#   SEQ       instead of rounds, a sequence of steps, each LOOP:MODE:COUNT[:DIR]
#             (COUNT processes back to back, traces under DIR), "sync" or
#             "sleepN"; one line per process in seq.txt with the host's state
#             before it (dirty and writeback kB, free MB) and what moved while
#             it ran (CPU steal and iowait ticks, page faults, THP fallbacks,
#             compaction stalls): the search for what persists between
#             processes (91a2132:bench/TRACE_COST.md, eighth pass)
# Modes: plain; torch-cuda, torch-cpu-cuda (PyTorch loop); attnprof (the
# shipped default, sync records from the sync calls' callbacks); the shipped
# collector under attnprof trace's documented options: attnprof-allapi
# (ATTNPROF_CUPTI_API=all: every call, through the RUNTIME/DRIVER kinds),
# attnprof-synckind (ATTNPROF_CUPTI_SYNC=kind: CUPTI's SYNCHRONIZATION kind),
# attnprof-synccb (ATTNPROF_CUPTI_SYNC=callback), attnprof-defer
# (ATTNPROF_CUPTI_DEFER=DEFER_MB, default 1024: buffers converted and written
# at the end, not during the run); floor-load, floor-kernel
# (libbench_cupti_floor.so injected alone, not attnprof).
set -uo pipefail
out=${1:-/tmp/attnprof_rounds}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-7} n_py=${N_PY:-10240} n_c=${N_C:-100000} budget=${BUDGET_S:-0}
read -ra pin <<<"${PIN:-}"
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" | tail -1; }

modes_ok() {
  local m
  for m in "$@"; do
    case $m in
    plain | torch-cuda | torch-cpu-cuda | floor-load | floor-kernel | attnprof | attnprof-allapi | \
      attnprof-synccb | attnprof-synckind | attnprof-defer) ;;
    *) echo "trace_cost_rounds.sh: unknown mode '$m' (the modes are in the header)" >&2; exit 2 ;;
    esac
  done
}

# loop mode round [dir]: runs one process, prints its host us per launch
run_mode() {
  local loop=$1 mode=$2 r=$3 log="$out/${1}_${2}_$3.log" trace="${4:-${TRACE_DIR:-$out}}/${1}_$2.json"
  local prog=(python3 "$here/trace_overhead.py" plain "$n_py") env=()
  [ "$loop" = c ] && prog=(./bin/trace_overhead_prog "$n_c")
  case $mode in
  plain) ;;
  torch-*) prog=(python3 "$here/trace_overhead.py" "$mode" "$n_py") ;;
  floor-*) env=("CUDA_INJECTION64_PATH=$PWD/lib/libbench_cupti_floor.so" "ATTNPROF_FLOOR=${mode#floor-}") ;;
  *)
    case $mode in
    attnprof) ;;
    attnprof-allapi) env=(ATTNPROF_CUPTI_API=all) ;;
    attnprof-synccb) env=(ATTNPROF_CUPTI_SYNC=callback) ;;
    attnprof-synckind) env=(ATTNPROF_CUPTI_SYNC=kind) ;;
    attnprof-defer) env=("ATTNPROF_CUPTI_DEFER=${DEFER_MB:-1024}") ;;
    esac
    prog=(./bin/attnprof trace --stream-only --out "$trace" -- "${prog[@]}") ;;
  esac
  local t0=$EPOCHREALTIME
  env "${env[@]}" "${pin[@]}" "${prog[@]}" >"$log" 2>&1
  echo "$loop $mode round $r exit $? start $t0 wall_s $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')" >>"$out/times.txt"
  if [[ $mode == attnprof* ]] && [ "$r" = 1 ]; then
    python3 "$here/trace_links.py" "$trace" >"$out/links_${loop}_$mode.txt" 2>&1
  fi
  rm -f "$trace"
  field host_us_per_launch <"$log"
}

# loop round modes...: one round of one loop, its line appended to rounds_LOOP.txt
run_round() {
  local loop=$1 r=$2; shift 2
  local modes=("$@") n=$# k m order=() line="round $r:"
  declare -A v=()
  for ((k = 0; k < n; k++)); do order+=("${modes[$(((k + r - 1) % n))]}"); done
  # the second plain at the end of the round farther from the first
  if [[ " ${BRACKET:-} " == *" $loop "* && " ${modes[*]} " == *" plain "* ]]; then
    for ((k = 0; k < n; k++)); do [ "${order[k]}" = plain ] && break; done
    if ((2 * k < n)); then order+=(plain-b); else order=(plain-b "${order[@]}"); fi
    modes+=(plain-a plain-b)
  fi
  for m in "${order[@]}"; do
    if [ "$m" = plain-b ]; then v[$m]=$(run_mode "$loop" plain "${r}b")
    else v[$m]=$(run_mode "$loop" "$m" "$r"); fi
  done
  if [ -n "${v[plain-b]+set}" ]; then
    v[plain-a]=${v[plain]:-}
    v[plain]=$(awk -v a="${v[plain-a]}" -v b="${v[plain-b]}" \
      'BEGIN { if (a == "" || b == "") print a b; else printf "%.3f", (a + b) / 2 }')
  fi
  for m in "${modes[@]}"; do line+=" $m ${v[$m]:-?}"; done
  echo "$loop $line" | tee -a "$out/rounds_$loop.txt"
}

# The host's state: dirty kB, writeback kB, free MB, then the cumulative
# counters whose difference over a process seq.txt prints.
host_state() {
  awk '/^Dirty:/ { d = $2 } /^Writeback:/ { w = $2 } /^MemFree:/ { f = int($2 / 1024) }
       END { printf "%d %d %d", d, w, f }' /proc/meminfo
  awk '/^cpu / { printf " %d %d", $9, $6 }' /proc/stat
  awk '$1 ~ /^(pgfault|thp_fault_fallback|compact_stall|pgpgout)$/ { v[$1] = $2 }
       END { printf " %d %d %d %d", v["pgfault"], v["thp_fault_fallback"], v["compact_stall"], v["pgpgout"] }' /proc/vmstat
}

# SEQ's steps, one process at a time (see the header)
run_seq() {
  local k=0 step loop mode count dir i a b us sus t0 t1
  echo "# k loop mode dir host_us sustained_us wall_s start_epoch end_epoch dirty_kB writeback_kB" \
    "free_MB dirty_after_kB writeback_after_kB | steal_ticks iowait_ticks pgfault thp_fallback compact_stall pgpgout" >"$out/seq.txt"
  for step in $SEQ; do
    case $step in
    sync) sync; echo "# sync" >>"$out/seq.txt"; continue ;;
    sleep*) sleep "${step#sleep}"; echo "# $step" >>"$out/seq.txt"; continue ;;
    esac
    IFS=: read -r loop mode count dir <<<"$step"
    modes_ok "$mode"
    case ${dir:-} in shm) dir=/dev/shm ;; tmp) dir=/tmp ;; "") dir=${TRACE_DIR:-$out} ;; esac
    for ((i = 0; i < count; i++)); do
      k=$((k + 1))
      read -ra a <<<"$(host_state)"
      t0=$EPOCHREALTIME
      us=$(run_mode "$loop" "$mode" "s$k" "$dir")
      t1=$EPOCHREALTIME
      read -ra b <<<"$(host_state)"
      sus=$(field sustained_us <"$out/${loop}_${mode}_s$k.log")
      printf '%d %s %s %s %s %s %.2f %s %s %d %d %d %d %d | %d %d %d %d %d %d\n' "$k" "$loop" "$mode" \
        "$dir" "${us:-?}" "${sus:--}" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$t0" "$t1" "${a[0]}" "${a[1]}" \
        "${a[2]}" "${b[0]}" "${b[1]}" $((b[3] - a[3])) $((b[4] - a[4])) $((b[5] - a[5])) $((b[6] - a[6])) \
        $((b[7] - a[7])) $((b[8] - a[8])) | tee -a "$out/seq.txt"
    done
  done
}

rm -f "$out"/rounds_*.txt "$out/times.txt"
if [ -n "${SEQ:-}" ]; then
  run_seq
  exit 0
fi
read -ra py_modes <<<"${PY_MODES-plain torch-cuda torch-cpu-cuda attnprof}"
read -ra c_modes <<<"${C_MODES-plain attnprof}"
modes_ok "${py_modes[@]}" "${c_modes[@]}"
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
echo "== floor records (cupti_floor's own count)"
grep -h "cupti_floor" "$out"/*floor-kernel_1.log 2>/dev/null
exit 0
