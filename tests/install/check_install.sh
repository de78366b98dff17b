#!/usr/bin/env bash
# Installs the build into a temporary prefix, moves the prefix elsewhere (so
# nothing may name the path it was installed to), then checks what a user of
# the install tree gets: the command runs without LD_LIBRARY_PATH (install
# RPATH), attnprof.pc points at the moved prefix and declares its private
# requirements, and two consumers of the library, one built through
# pkg-config and one through find_package(attnprof), build and run.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/installed" >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
mv "$tmp/installed" "$tmp/moved"
P=$tmp/moved
unset LD_LIBRARY_PATH

# The command finds libattnprof.so.0 through its RPATH.
"$P/bin/attnprof" version >"$tmp/backends.txt" 2>&1 || { cat "$tmp/backends.txt"; fail "installed attnprof does not run"; }
echo "installed attnprof runs"
# attnprof trace (CUDA builds) finds its helpers in the moved tree: the
# injection library in lib/, attnprof_spawn in libexec/attnprof/.
if [ -e "$P/lib/libattnprof_inject.so" ]; then
  out=$(cd "$tmp" && "$P/bin/attnprof" trace --out "$tmp/t.json" -- true 2>&1) || { echo "$out"; fail "installed trace failed"; }
  echo "$out" | grep -Eq "its peak memory [0-7]\.[0-9] MiB" || { echo "$out"; fail "trace -- true: no small peak of its own"; }
  echo "installed trace runs, with the program's own peak"
fi

# pkg-config: relocatable prefix, private requirements declared.
pc=$(find "$P" -name attnprof.pc)
[ -n "$pc" ] || fail "no attnprof.pc installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
prefix=$(pkg-config --variable=prefix attnprof)
[ "$(realpath "$prefix")" = "$(realpath "$P")" ] || fail "attnprof.pc says prefix=$prefix, not the moved $P"
pkg-config --print-requires-private attnprof | grep -q openblas || fail "attnprof.pc lacks Requires.private openblas"
pkg-config --static --libs attnprof | grep -q -- -lopenblas || fail "pkg-config --static does not resolve the private requirements"
libdir=$(pkg-config --variable=libdir attnprof)
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
cc -std=c11 -o "$tmp/pc_consumer" "$src/tests/install/consumer/consumer.c" \
  $(pkg-config --cflags --libs attnprof) -lm -Wl,-rpath,"$libdir"
"$tmp/pc_consumer" || fail "the pkg-config consumer failed"

# find_package: the exported target, and the version file refuses 99.
cmake -S "$src/tests/install/consumer" -B "$tmp/cm" -G Ninja -DCMAKE_PREFIX_PATH="$P" \
  >"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package(attnprof) consumer did not configure"; }
cmake --build "$tmp/cm" >"$tmp/cmb.log" 2>&1 || { cat "$tmp/cmb.log"; fail "find_package consumer did not build"; }
"$tmp/cm/consumer" || fail "the find_package consumer failed"
mkdir -p "$tmp/v99"
printf 'cmake_minimum_required(VERSION 3.24)\nproject(v LANGUAGES C)\nfind_package(attnprof 99 REQUIRED)\n' >"$tmp/v99/CMakeLists.txt"
if cmake -S "$tmp/v99" -B "$tmp/v99/b" -DCMAKE_PREFIX_PATH="$P" >/dev/null 2>&1; then
  fail "find_package(attnprof 99) was accepted: no version check"
fi
echo "check_install: all passed"
