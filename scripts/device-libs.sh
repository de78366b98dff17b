# Source ON THE DEVICE, from the repository root, before device-run.sh when
# the build was carried slim (scripts/device-slim.sh): the gathered run-time
# libraries, and cuBLAS from the CUDA toolkit or, failing that, PyTorch's wheel.
build=${BUILD:-build-gpu}
export LD_LIBRARY_PATH=$PWD/$build/runlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
attnprof_have_cublas() {
  ldconfig -p | grep -q 'libcublas.so.13' && return 0
  local d IFS=:
  for d in $LD_LIBRARY_PATH; do [ -e "$d/libcublas.so.13" ] && return 0; done
  return 1
}
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  attnprof_have_cublas || { [ -e "$d/libcublas.so.13" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; }
done
if ! attnprof_have_cublas; then
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c 'import nvidia, os; p = list(nvidia.__path__)[0]
print(":".join(r for r, d, f in os.walk(p) if "libcublas.so.13" in f))' 2>/dev/null)
fi
export LD_LIBRARY_PATH
