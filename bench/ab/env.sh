# shellcheck shell=bash
# Sourced on the device from the repository root (build.sh and run.sh do it).
# When bench/ab/prep.sh carried Debian packages (.deb/ab/*.deb: OpenBLAS,
# jansson, yajl, protobuf-c, cmocka, zlib headers, pkgconf), unpacks them once
# under AB_DEB_DIR (default /tmp/ab-deb: outside the carried folder, never
# into /) and points pkg-config, the compiler, the linker and the loader at
# them. Sets AB_CMAKE_ARGS for the configure step. Without .deb/ab the
# machine's own packages are used.
AB_REPO=$PWD
AB_DEB=$AB_REPO/.deb/ab
AB_DIR=${AB_DEB_DIR:-/tmp/ab-deb}
AB_ROOT=$AB_DIR/root
AB_CMAKE_ARGS=()

# dpkg -x, or the ar archive read by Python where dpkg is missing.
ab_unpack() {
  local f=$1 dst=$2
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$f" "$dst"
    return
  fi
  python3 - "$f" "$dst" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n", "not an ar archive"
off = 8
while off < len(data):
    name = data[off:off + 16].decode().strip().rstrip("/")
    size = int(data[off + 48:off + 58].decode().strip())
    body = data[off + 60:off + 60 + size]
    if name.startswith("data.tar"):
        t = tarfile.open(fileobj=io.BytesIO(body))
        try:
            t.extractall(sys.argv[2], filter="fully_trusted")  # absolute links (libz.so)
        except TypeError:
            t.extractall(sys.argv[2])
    off += 60 + size + (size & 1)
PY
}

if ls "$AB_DEB"/*.deb >/dev/null 2>&1; then
  ab_lib=$AB_ROOT/usr/lib/x86_64-linux-gnu
  if [ ! -e "$AB_ROOT/.unpacked" ]; then
    mkdir -p "$AB_ROOT"
    for f in "$AB_DEB"/*.deb; do ab_unpack "$f" "$AB_ROOT" || echo "env.sh: could not unpack $f"; done
    # zlib1g-dev's libz.so points at the packaging machine's libz.so.1.x: point it here.
    sysz=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$sysz" ] && ln -sf "$(readlink -f "$sysz")" "$ab_lib/libz.so"
    touch "$AB_ROOT/.unpacked"
  fi
  mkdir -p "$AB_DIR/bin"
  cat >"$AB_DIR/bin/pkg-config" <<EOF
#!/bin/sh
# pkgconf from .deb/ab, reading only the carried packages' .pc files.
export LD_LIBRARY_PATH=$ab_lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PKG_CONFIG_SYSROOT_DIR=$AB_ROOT
export PKG_CONFIG_LIBDIR=$ab_lib/pkgconfig:$ab_lib/openblas-pthread/pkgconfig:$AB_ROOT/usr/share/pkgconfig
exec $AB_ROOT/usr/bin/pkgconf "\$@"
EOF
  chmod +x "$AB_DIR/bin/pkg-config"
  AB_CMAKE_ARGS+=("-DPKG_CONFIG_EXECUTABLE=$AB_DIR/bin/pkg-config")
  if [ ! -e /usr/include/zlib.h ]; then
    AB_CMAKE_ARGS+=("-DZLIB_INCLUDE_DIR=$AB_ROOT/usr/include" "-DZLIB_LIBRARY=$ab_lib/libz.so")
  fi
  # Headers included by path from layers that do not link the package
  # (<yajl/...>, <jansson.h>), and the libraries' own dependencies at link time.
  export CPATH=$AB_ROOT/usr/include${CPATH:+:$CPATH}
  export LIBRARY_PATH=$ab_lib:$ab_lib/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}
  export LD_LIBRARY_PATH=$ab_lib:$ab_lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# cuDNN: the toolkit's, else PyTorch's wheel (headers, and libcudnn.so for
# find_library; the library itself is opened at run time by soname).
ab_cudnn_hints() {
  local d
  for d in /usr/local/cuda/include /usr/include /usr/include/x86_64-linux-gnu; do
    [ -e "$d/cudnn_graph.h" ] && return 0
  done
  d=$(python3 -c 'import nvidia.cudnn, os; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null) || return 0
  [ -e "$d/include/cudnn_graph.h" ] || return 0
  mkdir -p "$AB_DIR/cudnn"
  ln -sf "$d/lib/libcudnn.so.9" "$AB_DIR/cudnn/libcudnn.so"
  AB_CMAKE_ARGS+=("-DCUDNN_INCLUDE_DIR=$d/include" "-DCUDNN_LIBRARY=$AB_DIR/cudnn/libcudnn.so")
  export LD_LIBRARY_PATH=$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "env.sh: cuDNN from PyTorch's wheel ($d)"
}
ab_cudnn_hints
export PATH=/usr/local/cuda/bin:$PATH
