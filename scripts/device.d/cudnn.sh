#!/usr/bin/env bash
# The cudnn backend on the device (run by scripts/device-run.sh from the build
# folder, $1 = output folder):
#  1. bench_cudnn_host (host cost per call from C, the first call, device
#     time over the grid) with the cuDNN the loader finds (the system's), then
#     with PyTorch's own cuDNN through ATTNPROF_CUDNN_LIB;
#  2. bench/vs_torch.py --only cudnn --sweep: ours and PyTorch's cuDNN SDPA on
#     the same tensors in one process, ours on PyTorch's library (the same
#     one), device and host ratios.
# Keep under a few minutes.
set -uo pipefail
out=${1:-/tmp/out}
unset CUDNN_LOGLEVEL_DBG CUDNN_LOGDEST_DBG # timings without cuDNN's own logging
bin=./bin/bench_cudnn_host
[ -x "$bin" ] || { echo "cudnn.sh: $bin was not built (no cuDNN headers at build time)"; exit 0; }
ls -l /usr/lib/x86_64-linux-gnu/libcudnn_graph.so* 2>/dev/null
echo "== bench_cudnn_host, the library the loader finds"
$bin | tee "$out/cudnn_c_default.txt"
# PyTorch's wheel keeps cuDNN and its helpers (nvrtc, cublasLt) under nvidia/*/lib.
nv=$(python3 -c 'import nvidia, os; p = list(nvidia.__path__)[0]
print(":".join(os.path.join(p, d, "lib") for d in sorted(os.listdir(p))
               if os.path.isdir(os.path.join(p, d, "lib"))))' 2>/dev/null || true)
tlib=$(tr ':' '\n' <<<"$nv" | grep '/cudnn/lib$' || true)
if [ -z "$tlib" ] || [ ! -e "$tlib/libcudnn_graph.so.9" ]; then
  echo "cudnn.sh: PyTorch's cuDNN not found; vs_torch.py skipped"
  exit 0
fi
echo "== bench_cudnn_host, PyTorch's cuDNN in $tlib"
LD_LIBRARY_PATH="$nv:${LD_LIBRARY_PATH:-}" ATTNPROF_CUDNN_LIB="$tlib/libcudnn_graph.so.9" \
  $bin | tee "$out/cudnn_c_torchlib.txt"
echo "== bench/vs_torch.py --only cudnn --sweep (ours on PyTorch's cuDNN)"
PYTHONUNBUFFERED=1 ATTNPROF_LIB="$PWD/lib/libattnprof.so" \
  ATTNPROF_CUDNN_LIB="$tlib/libcudnn_graph.so.9" \
  python3 ../bench/vs_torch.py --only cudnn --sweep --json "$out/vs_torch_cudnn.json" \
  | tee "$out/vs_torch_cudnn.txt"
