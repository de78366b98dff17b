#!/usr/bin/env bash
# Run HERE after device-prep.sh when build + .deb exceed the 64 MiB the device
# tool carries: gathers the run-time libraries the device lacks into
# $BUILD/runlibs (no LAPACK, no .deb archives) and prints the carry list that
# holds only what runs there: bin, lib, the CTest files, runlibs. On the
# device, `source scripts/device-libs.sh` puts runlibs (and cuBLAS) on the
# loader path before scripts/device-run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-gpu}
src=.deb/root/usr/lib/x86_64-linux-gnu
dst=$build/runlibs
rm -rf "$dst" && mkdir -p "$dst"
for f in "$src"/openblas-pthread/libopenblas*.so* "$src"/libgfortran.so.5* "$src"/libjansson.so.4* \
         "$src"/libcmocka.so.0* "$src"/libyajl.so.2* "$src"/libprotobuf-c.so.1* "$src"/libquadmath.so.0*; do
  [ -e "$f" ] && cp -a "$f" "$dst/"
done
du -sb "$build"/bin "$build"/lib "$build"/tests "$build"/src "$build"/bench "$dst" | cat
printf 'carry: ["%s/bin", "%s/lib", "%s/tests", "%s/src", "%s/bench", "%s/CTestTestfile.cmake", "%s/runlibs"]\n' \
  "$build" "$build" "$build" "$build" "$build" "$build" "$build"
