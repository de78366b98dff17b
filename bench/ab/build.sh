#!/usr/bin/env bash
# ON THE DEVICE, from the repository root: builds the old tree (.old/, from
# bench/ab/prep.sh) in build-old/ and this tree in build-new/, both at once,
# Release with CUDA on and the project's default CMAKE_CUDA_ARCHITECTURES
# (AB_CUDA_ARCH overrides it), warnings not fatal (another compiler than CI's).
#   bash bench/ab/build.sh [old] [new]        (default: both)
# old: the library, the CLI and the two GPU tests the sanitizers run (its bench
# targets are always on in that tree and are not built); new: everything its
# configure builds with ATTNPROF_BENCH=OFF (the library, the CLI, the tests
# ctest -L gpu runs; the bench targets stay behind that option). Idempotent: a build folder whose
# stamp matches its sources' checksum is skipped without running ninja; a
# folder configured from another source path is configured anew.
# Each build's log: $AB_WORK/build-NAME.log (AB_WORK default /tmp/ab). Exit 1
# when a build failed. AB_JOBS: ninja -j per build (default 16).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
source bench/ab/env.sh
work=${AB_WORK:-/tmp/ab}
mkdir -p "$work"
jobs=${AB_JOBS:-16}
want=${*:-old new}

# A checksum of what the build reads (CMake files, sources, headers, tests).
fingerprint() {
  (cd "$1" && find CMakeLists.txt cmake src include tests python -type f \
     \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.txt' \
        -o -name '*.cmake' -o -name '*.in' -o -name '*.py' \) 2>/dev/null | LC_ALL=C sort |
     xargs -d '\n' md5sum | md5sum | cut -c1-16)
}

build_one() {
  local name=$1 src=$2 dir=$3 targets=$4 log=$work/build-$1.log
  local fp t0 rc
  fp=$(fingerprint "$src")
  if [ -e "$dir/.ab-stamp" ] && [ "$(cat "$dir/.ab-stamp")" = "$fp" ]; then
    echo "$name: $dir already built from these sources ($fp): skipped"
    return 0
  fi
  if [ -e "$dir/CMakeCache.txt" ] &&
     ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$(cd "$src" && pwd)" "$dir/CMakeCache.txt"; then
    echo "$name: $dir was configured from another source path: configured anew"
    rm -rf "$dir"
  fi
  t0=$SECONDS
  local arch=()
  [ -n "${AB_CUDA_ARCH:-}" ] && arch=("-DCMAKE_CUDA_ARCHITECTURES=$AB_CUDA_ARCH")
  if [ ! -e "$dir/build.ninja" ]; then
    # shellcheck disable=SC2086
    cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNPROF_CUDA=ON \
      -DATTNPROF_WERROR=OFF -DBUILD_TESTING=ON "${arch[@]}" "${AB_CMAKE_ARGS[@]}" \
      ${AB_TREE_ARGS:-} ${AB_EXTRA_CMAKE_ARGS:-} >"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
      echo "$name: configure FAILED (rc $rc); the end of $log:"
      tail -n 25 "$log"
      return 1
    fi
  fi
  local cudnn
  cudnn=$(grep -E '^CUDNN_(INCLUDE_DIR|LIBRARY):' "$dir/CMakeCache.txt" | grep -c NOTFOUND)
  [ "$cudnn" != 0 ] && echo "$name: WARNING: cuDNN not found at configure: no cudnn backend in this build"
  echo "$name: configured in $((SECONDS - t0)) s; building ${targets:-all} (-j$jobs)"
  local t1=$SECONDS lines
  lines=$(wc -l <"$log")
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "$jobs" ${targets:+--target $targets} >>"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ -n "$targets" ] &&
     tail -n +"$((lines + 1))" "$log" | grep -q "unknown target"; then
    echo "$name: a target of '$targets' is unknown there; building everything"
    cmake --build "$dir" -j "$jobs" >>"$log" 2>&1
    rc=$?
  fi
  if [ $rc -ne 0 ]; then
    echo "$name: build FAILED after $((SECONDS - t1)) s (rc $rc); the errors in $log:"
    tail -n +"$((lines + 1))" "$log" | grep -E "error|Error|FAILED" | head -n 20
    return 1
  fi
  echo "$fp" >"$dir/.ab-stamp"
  echo "$name: built in $((SECONDS - t1)) s ($((SECONDS - t0)) s with configure); $(tail -n +"$((lines + 1))" "$log" | grep -c '^\[') steps"
}

pids=()
names=()
for w in $want; do
  case $w in
    old)
      [ -e .old/CMakeLists.txt ] || { echo "old: no .old/ here (run bench/ab/prep.sh here and carry .old)"; exit 1; }
      build_one old .old build-old "attnprof attnprof_cli test_fused_gpu test_seqs_gpu" &
      ;;
    new) AB_TREE_ARGS="-DATTNPROF_BENCH=OFF" build_one new . build-new "" & ;;
    *) echo "build.sh: '$w' is not a build: accepted are old, new"; exit 2 ;;
  esac
  pids+=($!)
  names+=("$w")
done
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || rc=1
done
[ $rc -eq 0 ] && echo "builds ready: $want ($SECONDS s)" || echo "build.sh: a build failed ($SECONDS s)"
exit $rc
