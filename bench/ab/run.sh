#!/usr/bin/env bash
# ON THE DEVICE, from the repository root: the A/B of issue 29, old build
# (.old/ -> build-old/) beside the new one (this tree -> build-new/).
#   bash bench/ab/run.sh [STEP...]      (default: build grid serving)
# Steps, run in the order given:
#   build    bench/ab/build.sh: both builds at once, skipped where already built
#   grid     bench/ab/grid.py: the 31 cells + the blog shape, flash and cudnn vs
#            PyTorch cuDNN, one process per run (new, old, new2)
#   serving  bench/ab/grid.py --suite serving: decode B1/B16 x KV 1k/8k/32k,
#            paged and contiguous (attn_seqs), flash and cudnn vs PyTorch cuDNN,
#            CUDA-graph timed, one process per run (new, old, new2)
#   serving-cli  bench/ab/serving_cli.py (not in the defaults): the same
#            decode cells through each build's CLI (attnprof run), paged and
#            dense (Sq = 1), absolute CUDA-event times, one process per run
#   check    all at once (nothing is timed): ctest -L gpu (new build); the CLI's
#            fp64 check of every backend on small problems (check.py, both
#            builds); compute-sanitizer memcheck, racecheck and synccheck over
#            the quick sweeps of test_fused_gpu (flash ws, wgmma, mma_sync,
#            efficient) and test_seqs_gpu (decode), new build; then the same
#            sanitizers on the old build while time is left (AB_SAN_OLD=0: never,
#            1: beside the new build's)
# The whole call keeps under AB_BUDGET seconds (default 540): a step that no
# longer fits is skipped with a line saying so and how to run it again.
# Tables go to stdout and to $OUT/ab-summary.txt, all of them again at the end;
# logs and JSON (AB_WORK, default /tmp/ab) come back as $OUT/ab-logs.tgz.
# AB_GRID_ARGS, AB_SERVING_ARGS (both grid.py), AB_SERVING_CLI_ARGS, AB_CHECK_ARGS:
# more options for those scripts (e.g. AB_GRID_ARGS="--rounds 4 --reps 10"). AB_DRY=1: made-up timings and
# echoed commands, for trying this script without a GPU.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
steps=" ${*:-build grid serving} "
for s in $steps; do
  case $s in build | grid | serving | serving-cli | check) ;;
    *) echo "run.sh: '$s' is not a step: accepted are build, grid, serving, serving-cli, check"; exit 2 ;;
  esac
done
budget=${AB_BUDGET:-540}
export AB_WORK=${AB_WORK:-/tmp/ab}
out=${OUT:-$AB_WORK/out}
mkdir -p "$AB_WORK" "$out"
export AB_SUMMARY=$out/ab-summary.txt
: >"$AB_SUMMARY"
dry=${AB_DRY:-}
source bench/ab/env.sh
skipped=()
again=()
rc=0

left() { echo $((budget - SECONDS)); }
note() { echo "$*" | tee -a "$AB_SUMMARY"; }
smi() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
    --format=csv,noheader 2>/dev/null | head -n 1 || echo "no nvidia-smi"
}
# enough STEP SECONDS: whether the step still fits; says so when not.
enough() {
  if [ "$(left)" -lt "$2" ]; then
    note "$1: NOT RUN (time: $(left) s left of $budget, it needs about $2)"
    skipped+=("$1")
    again+=("${3:-$1}")
    return 1
  fi
}
# doit CMD...: runs it, or with AB_DRY prints it.
doit() {
  if [ -n "$dry" ]; then echo "dry: $*"; return 0; fi
  "$@"
}
bin_of() { find "$1" -type f -name "$2" -perm -u+x 2>/dev/null | head -n 1; }

note "== A/B $(date -u +%FT%TZ): steps${steps% }; budget $budget s; old $(cat .old/AB_COMMIT 2>/dev/null || echo '?')"
note "gpu: $(smi)"
note "torch: $(python3 -c 'import torch; print(torch.__version__, torch.backends.cudnn.version())' 2>/dev/null || echo none); nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none); cmake: $(cmake --version 2>/dev/null | head -n 1)"

if [[ $steps == *" build "* ]] && enough build 60; then
  echo "== build"
  if ! doit timeout "$(( $(left) - 10 ))" bash bench/ab/build.sh 2>&1 | tee -a "$AB_WORK/build.txt"; then
    rc=1
  fi
  grep -E "built in|skipped|FAILED|WARNING" "$AB_WORK/build.txt" 2>/dev/null >>"$AB_SUMMARY"
fi
# Each CLI must load its own build's library (the two share a soname).
for b in old new; do
  [ -x "build-$b/bin/attnprof" ] || { note "build-$b/bin/attnprof: missing"; continue; }
  l=$(ldd "build-$b/bin/attnprof" 2>/dev/null | awk '/libattnprof/ {print $3}')
  [ -n "$l" ] || continue # linked statically
  case $(readlink -f "$l") in
    "$(pwd -P)/build-$b/"*) ;;
    *) note "WARNING: build-$b/bin/attnprof loads '$l', not its own build's library"; rc=1 ;;
  esac
done

if [[ $steps == *" grid "* ]] && enough grid 120; then
  t=$(( ($(left) - 20) / 3 ))
  [ "$t" -gt 200 ] && t=200
  note "gpu before the grid: $(smi)"
  # shellcheck disable=SC2086
  python3 bench/ab/grid.py --timeout "$t" ${dry:+--dry-run} ${AB_GRID_ARGS:-} || rc=1
  note "gpu after the grid: $(smi)"
fi

if [[ $steps == *" serving "* ]] && enough serving 90; then
  t=$(( ($(left) - 15) / 3 ))
  [ "$t" -gt 150 ] && t=150
  # shellcheck disable=SC2086
  python3 bench/ab/grid.py --suite serving --timeout "$t" ${dry:+--dry-run} ${AB_SERVING_ARGS:-} || rc=1
  note "gpu after the serving table: $(smi)"
fi

if [[ $steps == *" serving-cli "* ]] && enough serving-cli 60; then
  # shellcheck disable=SC2086
  python3 bench/ab/serving_cli.py --budget "$(( $(left) - 25 ))" ${dry:+--dry-run} \
    ${AB_SERVING_CLI_ARGS:-} >"$AB_WORK/serving_cli.txt" 2>&1 || rc=1
  if grep -q '^== serving-cli' "$AB_WORK/serving_cli.txt"; then
    sed -n '/^== serving-cli/,$p' "$AB_WORK/serving_cli.txt"
  else
    note "serving-cli: no table; the end of its output:"
    tail -n 8 "$AB_WORK/serving_cli.txt" | tee -a "$AB_SUMMARY"
  fi
fi

# The sanitizers of one build over both quick sweeps, in the background; each
# log FILE gets FILE.rc with the exit status; their pids are added to $pids.
sanitize() {
  local build=$1 t=$2 cs tool fused seqs
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  fused=$(bin_of "build-$build" test_fused_gpu)
  seqs=$(bin_of "build-$build" test_seqs_gpu)
  for tool in memcheck racecheck synccheck; do
    if [ -n "$fused" ]; then
      (FUSED_TEST_QUICK=1 doit timeout "$t" "$cs" --tool "$tool" --error-exitcode 3 "$fused" \
         >"$AB_WORK/san_${build}_fused_$tool.txt" 2>&1
       echo $? >"$AB_WORK/san_${build}_fused_$tool.txt.rc") &
      pids="$pids $!"
    fi
    if [ -n "$seqs" ]; then
      (SEQS_TEST_QUICK=1 doit timeout "$t" "$cs" --tool "$tool" --error-exitcode 3 "$seqs" \
         >"$AB_WORK/san_${build}_seqs_$tool.txt" 2>&1
       echo $? >"$AB_WORK/san_${build}_seqs_$tool.txt.rc") &
      pids="$pids $!"
    fi
  done
  [ -n "$fused" ] || note "sanitizers: no test_fused_gpu under build-$build"
  [ -n "$seqs" ] || note "sanitizers: no test_seqs_gpu under build-$build"
}

if [[ $steps == *" check "* ]] && enough check 90; then
  t=$(( $(left) - 30 ))
  note "== check: ctest -L gpu (new), CLI fp64 sweep (old, new), sanitizers (new$([ "${AB_SAN_OLD:-auto}" = 1 ] && echo ', old')), all at once, $t s at most"
  rm -f "$AB_WORK"/san_* "$AB_WORK"/ctest_new.txt
  pids=""
  sanitize new "$t"
  [ "${AB_SAN_OLD:-auto}" = 1 ] && sanitize old "$t"
  (doit timeout "$t" ctest --test-dir build-new -L gpu -j 4 --timeout "$t" --output-on-failure \
     >"$AB_WORK/ctest_new.txt" 2>&1) &
  pids="$pids $!"
  if [ -n "$dry" ]; then
    echo "dry: python3 bench/ab/check.py --timeout $t ${AB_CHECK_ARGS:-}"
  else
    # shellcheck disable=SC2086
    timeout "$t" python3 bench/ab/check.py --jobs 2 --timeout "$((t / 3))" ${AB_CHECK_ARGS:-} || rc=1
  fi
  for p in $pids; do wait "$p"; done
  python3 bench/ab/logs.py ctest "$AB_WORK/ctest_new.txt" || rc=1
  python3 bench/ab/logs.py san "$AB_WORK"/san_*_*.txt || rc=1
  if [ "${AB_SAN_OLD:-auto}" = auto ]; then
    if enough "the old build's sanitizers" 100 check; then
      t=$(( $(left) - 15 ))
      note "== check: sanitizers on the old build, $t s at most"
      pids=""
      sanitize old "$t"
      for p in $pids; do wait "$p"; done
      python3 bench/ab/logs.py san "$AB_WORK"/san_old_*.txt || rc=1
    fi
  fi
fi

if [ ${#skipped[@]} -gt 0 ]; then
  note "== done in $SECONDS s (budget $budget); NOT RUN: ${skipped[*]}; again: bash bench/ab/run.sh build ${again[*]}"
else
  note "== done in $SECONDS s (budget $budget)"
fi
echo
echo "==================== recap (also in \$OUT/ab-summary.txt) ===================="
cat "$AB_SUMMARY"
tar -czf "$out/ab-logs.tgz" --exclude=./out -C "$AB_WORK" . 2>/dev/null
exit $rc
