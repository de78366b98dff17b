#!/usr/bin/env bash
# pip install of the package into a fresh virtual environment, then
# check_package.py there, away from the checkout. The wheel bundles the
# library this build made (ATTNPROF_LIB); the venv sees the system's
# site-packages only for numpy. pip's build isolation fetches setuptools.
# Usage: test_package.sh PYTHON LIBRARY SOURCE_DIR
set -euo pipefail
python=$1
lib=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv --system-site-packages "$tmp/venv"
ATTNPROF_LIB=$lib "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "$src/python" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
cd "$tmp"
env -u PYTHONPATH -u ATTNPROF_LIB "$tmp/venv/bin/python" "$src/tests/python/check_package.py" "$tmp/venv"
