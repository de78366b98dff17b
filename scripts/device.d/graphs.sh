#!/usr/bin/env bash
# Issue 16 on the device, from the build folder, $1 = output folder: CUDA
# graphs and child processes under attnprof trace (a plain CUDA program
# replaying a graph; a Python parent running it twice; torch.cuda.CUDAGraph
# replaying SDPA). Each check prints its figures and "all held" or FAILED.
set -uo pipefail
out=${1:-/tmp/out}
python3 ../tests/prof_gpu/check_graph_trace.py ./bin/attnprof ./bin/graph_prog \
  "$out/graphs" graph child torch
echo "exit status $?"
