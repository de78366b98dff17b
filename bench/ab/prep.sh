#!/usr/bin/env bash
# Run HERE (not on the device), from anywhere in the checkout, before the A/B
# calls: puts the old build's source beside the tree as .old/ (git archive of
# AB_OLD_COMMIT, default 91a2132, without bench/results) and downloads the
# Debian packages the device lacks to build (OpenBLAS, jansson, yajl,
# protobuf-c, cmocka, zlib headers, pkgconf) into .deb/ab/. Both are ignored by
# git; the device call carries them: carry [".old", ".deb/ab"].
# Idempotent: an existing .old/ or .deb/ab/*.deb is kept (AB_FRESH=1 redoes both).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
commit=${AB_OLD_COMMIT:-91a2132}
if [ -n "${AB_FRESH:-}" ]; then rm -rf .old .deb/ab; fi
if [ ! -e .old/CMakeLists.txt ]; then
  mkdir -p .old
  git archive --format=tar "$commit" | tar -x -C .old --exclude='bench/results'
  echo "$commit" >.old/AB_COMMIT
fi
mkdir -p .deb/ab
if ! ls .deb/ab/*.deb >/dev/null 2>&1; then
  (cd .deb/ab && apt-get download -q \
    libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5 \
    libquadmath0 libjansson-dev libjansson4 libyajl-dev libyajl2 libprotobuf-c-dev \
    libprotobuf-c1 libcmocka-dev libcmocka0 zlib1g-dev pkgconf pkgconf-bin libpkgconf3 \
    >/dev/null 2>&1) || { echo "prep.sh: apt-get download failed (apt-get update first?)"; exit 1; }
fi
[ -d .old/bench/results ] && echo "prep.sh: WARNING: .old/bench/results is there ($(du -sh .old/bench/results | cut -f1)): the device carries 64 MiB at most"
grep -qxF '/.old/' .gitignore || echo "prep.sh: note: .gitignore does not name /.old/; add it to .git/info/exclude"
echo "old tree: .old ($(cat .old/AB_COMMIT 2>/dev/null || echo '?'), $(du -sh .old | cut -f1))"
echo "packages: .deb/ab ($(find .deb/ab -maxdepth 1 -name "*.deb" | wc -l) files, $(du -sh .deb/ab | cut -f1))"
echo "tracked tree: $(git ls-files -z | du -ch --files0-from=- 2>/dev/null | tail -1 | cut -f1)"
echo 'carry: [".old", ".deb/ab"]'
