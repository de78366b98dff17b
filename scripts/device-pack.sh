#!/usr/bin/env bash
# Run HERE after device-prep.sh: packs what runs on the device (the build's
# bin, lib, CTest files, the run-time libraries gathered by device-slim.sh)
# into .carry/gpu.tar.zst, with a zstd binary beside it. The test binaries
# link the library statically and are alike, so a long-window zstd makes
# 250 MB into about 19 (level 19: the tree and the carry together stay under
# the device tool's 64 MiB). Call the device tool with carry [".carry"] and a
# command that begins with
#   .carry/zstd -dq --long=30 -c .carry/gpu.tar.zst | tar -xf - &&
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-gpu}
BUILD=$build bash scripts/device-slim.sh >/dev/null
mkdir -p .carry
cp "$(command -v zstd)" .carry/zstd
tar -cf - "$build"/bin "$build"/lib "$build"/tests "$build"/src "$build"/bench \
  "$build"/CTestTestfile.cmake "$build"/runlibs |
  zstd -T0 --long=30 -19 -q -f -o .carry/gpu.tar.zst
du -sh .carry | cat
