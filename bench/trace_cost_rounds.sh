#!/usr/bin/env bash
# attnprof trace's cost beside torch.profiler, in ROUNDS alternating rounds
# (bench/TRACE_COST.md): this host moves 5-9 us per launch between processes,
# so each round runs every mode once, in an order rotated by round, and each
# round is printed with its "added" (minus the same round's plain). Run from
# the build folder (./bin). Usage: trace_cost_rounds.sh [WORKDIR]
#   ROUNDS (5), N_PY (10240), N_C (100000); PY_MODES (plain torch-cuda
#   torch-cpu-cuda attnprof: each torch.profiler process takes 20-35 s on the
#   H200 host, plain and attnprof about 5); EXTRA_API_MODES: also attnprof
#   under these ATTNPROF_CUPTI_API_MODE values (e.g. "kinds": the old way).
set -uo pipefail
out=${1:-/tmp/attnprof_rounds}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
rounds=${ROUNDS:-5} n_py=${N_PY:-10240} n_c=${N_C:-100000}
field() { sed -n "s/.*$1 \([0-9.]*\).*/\1/p" | tail -1; }

py_mode() { # mode round -> host us per launch
  local mode=$1 r=$2 log="$out/py_${1}_$2.log"
  case $mode in
  plain | torch-cuda | torch-cpu-cuda) python3 "$here/trace_overhead.py" "$mode" "$n_py" >"$log" 2>&1 ;;
  attnprof*)
    local api=${mode#attnprof}; api=${api#-}
    ATTNPROF_CUPTI_API_MODE=$api ./bin/attnprof trace --stream-only --out "$out/py_$mode.json" -- \
      python3 "$here/trace_overhead.py" plain "$n_py" >"$log" 2>&1
    [ "$r" = 1 ] && python3 "$here/trace_links.py" "$out/py_$mode.json" >"$out/links_py_$mode.txt" 2>&1
    rm -f "$out/py_$mode.json" ;;
  esac
  field host_us_per_launch <"$log"
}

c_mode() {
  local mode=$1 r=$2 log="$out/c_${1}_$2.log"
  if [ "$mode" = plain ]; then ./bin/trace_overhead_prog "$n_c" >"$log" 2>&1
  else
    local api=${mode#attnprof}; api=${api#-}
    ATTNPROF_CUPTI_API_MODE=$api ./bin/attnprof trace --stream-only --out "$out/c_$mode.json" -- \
      ./bin/trace_overhead_prog "$n_c" >"$log" 2>&1
    [ "$r" = 1 ] && python3 "$here/trace_links.py" "$out/c_$mode.json" >"$out/links_c_$mode.txt" 2>&1
    rm -f "$out/c_$mode.json"
  fi
  field host_us_per_launch <"$log"
}

run_rounds() { # loop-function label modes...
  local fn=$1 label=$2; shift 2
  local modes=("$@") n=$# r k
  echo "== $label: host us per launch, $rounds rounds (added = minus the same round's plain)"
  for ((r = 1; r <= rounds; r++)); do
    declare -A v=()
    for ((k = 0; k < n; k++)); do
      local m=${modes[$(((k + r - 1) % n))]}
      v[$m]=$($fn "$m" "$r")
    done
    local line="round $r:"
    for m in "${modes[@]}"; do
      line+=" $m ${v[$m]:-?}"
      [ "$m" != plain ] && line+=$(awk -v a="${v[$m]:-}" -v b="${v[plain]:-}" \
        'BEGIN { if (a != "" && b != "") printf " (%+.3f)", a - b }')
    done
    echo "$line" | tee -a "$out/rounds_$fn.txt"
    unset v
  done
  # medians of each mode and of its per-round added
  awk -v modes="${modes[*]}" '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { for (i = 3; i <= NF; i++) { if ($i ~ /^\(/) { gsub(/[()+]/, "", $i); add[$(i-2), ++na[$(i-2)]] = $i + 0 } else if ($(i+1) ~ /^[0-9.]+$/) val[$i, ++nv[$i]] = $(i+1) + 0 } }
    END { nm = split(modes, ms, " "); for (k = 1; k <= nm; k++) { m = ms[k]; delete x; delete y
      for (i = 1; i <= nv[m]; i++) x[i] = val[m, i]; for (i = 1; i <= na[m]; i++) y[i] = add[m, i]
      printf "median %-16s %7.3f", m, med(x, nv[m]); if (na[m]) printf "  added %+.3f", med(y, na[m]); printf "\n" } }' \
    "$out/rounds_$fn.txt"
}

rm -f "$out"/rounds_*.txt
extra=()
for a in ${EXTRA_API_MODES:-}; do extra+=("attnprof-$a"); done
read -ra py_modes <<<"${PY_MODES:-plain torch-cuda torch-cpu-cuda attnprof}"
run_rounds py_mode "PyTorch loop (x.add_(1), $n_py launches x5 per process)" "${py_modes[@]}" "${extra[@]}"
run_rounds c_mode "CUDA loop (empty kernel, $n_c launches)" plain attnprof "${extra[@]}"
echo "== launch links in round 1's traces"
for f in "$out"/links_*.txt; do echo "$(basename "$f" .txt): $(cat "$f")"; done
