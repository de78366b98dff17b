#!/usr/bin/env bash
# Run ON THE DEVICE (see device-prep.sh): GPU tests and benches of the build
# made here, logs under $OUT. Arguments pass to ctest (e.g. -R cupti).
# BUILD names the build folder (default build-gpu); DEVICE_D a glob of the
# scripts/device.d/*.sh to run (default all; "none" for none).
set -uo pipefail
root=$(pwd)
out=${OUT:-/tmp/out}
mkdir -p "$out"
# The build dir holds absolute paths of this checkout's machine.
if [ ! -e /work/main ]; then mkdir -p /work && ln -s "$root" /work/main; fi
libdir=$root/.deb/root/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$libdir:$libdir/openblas-pthread:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
build=${BUILD:-build-gpu}
cd "/work/main/$build"
ctest -L gpu --output-on-failure "$@" 2>&1 | tee "$out/ctest-gpu.log"
for b in ../scripts/device.d/${DEVICE_D:-*}.sh; do
  [ -f "$b" ] || continue
  name=$(basename "$b" .sh)
  echo "== $name"
  timeout 300 bash "$b" "$out" 2>&1 | tee "$out/$name.log"
done
