#!/usr/bin/env bash
# The whole test suite: a release build and an ASan+UBSan build, each built with
# warnings as errors and tested with ctest. GPU tests (label "gpu") report
# themselves skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
for variant in release asan; do
  dir=build-check-$variant
  flags=()
  [ "$variant" = asan ] && flags=(-DATTNPROF_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
  echo "== $variant: configure, build, test"
  cmake -S . -B "$dir" -G Ninja "${flags[@]}" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
  grep 'attnprof:' "$dir.configure.log" || true
  cmake --build "$dir" -j "$jobs"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
done
