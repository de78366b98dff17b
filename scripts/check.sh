#!/usr/bin/env bash
# The whole test suite: a release build (with the CUDA half when a toolkit is
# there: it must compile, and its GPU tests report themselves skipped without
# a GPU) and an ASan+UBSan build of the host code (CUDA off: nvcc takes no
# sanitizer flags and nothing of it runs here), each built with warnings as
# errors and tested with ctest. Before them, the guards: the getenv allow-list,
# no data in the tree, the format, README's table against bench/RESULTS.md and,
# where it exists, the include-layer check.
set -euo pipefail
cd "$(dirname "$0")/.."
# The guards first (seconds, no build): each prints what it found; all run
# before the first failure stops the script.
guards=(scripts/check_getenv.sh scripts/check_tree.sh scripts/check_format.sh
  "python3 scripts/results_table.py --check")
if [ -f scripts/check_layers.sh ]; then guards+=("bash scripts/check_layers.sh"); fi
failed=0
for g in "${guards[@]}"; do
  echo "== guard: $g"
  $g || failed=1
done
[ $failed = 0 ] || { echo "check: a guard failed (above)" >&2; exit 1; }
jobs=$(nproc)
for variant in release asan; do
  dir=build-check-$variant
  flags=()
  [ "$variant" = asan ] && flags=(-DATTNPROF_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNPROF_CUDA=OFF)
  echo "== $variant: configure, build, test"
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  grep 'attnprof:' "$dir.configure.log" || true
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
