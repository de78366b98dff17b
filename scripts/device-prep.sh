#!/usr/bin/env bash
# Run HERE before a device call: builds the GPU build (build-gpu, sm_90 only)
# and gathers the run-time libraries the device machine lacks (OpenBLAS,
# jansson, cmocka) as Debian packages unpacked under .deb/root. Then call the
# device tool with carry ["build-gpu", ".deb"] and the command
#   bash scripts/device-run.sh [ctest -R regex]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deb
if [ ! -e .deb/root/usr/lib/x86_64-linux-gnu/libprotobuf-c.so.1 ]; then
  (cd .deb && apt-get download libopenblas0-pthread libgfortran5 libjansson4 libcmocka0 libyajl2 libprotobuf-c1 >/dev/null)
  for f in .deb/*.deb; do dpkg -x "$f" .deb/root; done
fi
build=${BUILD:-build-gpu}
# With the benches: scripts/device.d runs them (they build only on request).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNPROF_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DATTNPROF_BENCH=ON "$@" >/dev/null
cmake --build "$build"
du -sh "$build" .deb | cat
