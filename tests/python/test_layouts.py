#!/usr/bin/env python3
"""The package's ctypes mirrors against the library's struct sizes
(attn_struct_size, attnprof/abi.h): they match and the package loads; a
mirror that differs, in memory or in a copy of the package's source, is
refused at load with the struct named; a library without the sizes is
refused too. Run by ctest with ATTNPROF_LIB set to the built library."""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import attnprof
from attnprof import _capi


def sizes_match():
    size = _capi.lib.attn_struct_size
    for name, code, cls in _capi.MIRRORS:
        assert size(code) == ctypes.sizeof(cls) > 0, (name, size(code), ctypes.sizeof(cls))
    assert size(len(_capi.MIRRORS)) == 0 and size(-1) == 0, "a value outside the enum gives 0"
    assert _capi.lib.attn_ctx_opts_default().size == ctypes.sizeof(_capi.CtxOpts)


def mirror_changed_is_refused():
    class Wider(ctypes.Structure):
        _fields_ = _capi.Tensor._fields_ + [("extra", ctypes.c_int64)]
    mirrors = [m if m[0] != "attn_tensor" else ("attn_tensor", m[1], Wider) for m in _capi.MIRRORS]
    try:
        _capi.check_layouts(_capi.lib, _capi.path, mirrors)
    except _capi.LayoutError as e:
        assert "attn_tensor" in str(e) and "attn_args" not in str(e), str(e)
    else:
        raise AssertionError("a wider attn_tensor mirror was taken")
    try:
        _capi.check_layouts(ctypes.CDLL(None), "this process")
    except _capi.LayoutError as e:
        assert "attn_struct_size" in str(e), str(e)
    else:
        raise AssertionError("a library without attn_struct_size was taken")


def import_refuses_a_changed_copy():
    """The check runs at import: a copy of the package whose attn_ctx_opts
    mirror lost its size field does not load."""
    src = os.path.dirname(os.path.abspath(attnprof.__file__))
    with tempfile.TemporaryDirectory() as d:
        pkg = os.path.join(d, "attnprof")
        shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("lib", "__pycache__"))
        path = os.path.join(pkg, "_capi.py")
        with open(path) as f:
            text = f.read()
        line = '    _fields_ = [("size", ctypes.c_size_t),  # set by attn_ctx_opts_default\n'
        assert line in text, "the attn_ctx_opts mirror's first line moved: update this test"
        with open(path, "w") as f:
            f.write(text.replace(line, "    _fields_ = [\n"))
        env = dict(os.environ, PYTHONPATH=d)
        p = subprocess.run([sys.executable, "-c", "import attnprof"], env=env, cwd=d,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0, "the changed copy imported"
        assert "LayoutError" in p.stderr and "attn_ctx_opts" in p.stderr, p.stderr[-2000:]


def main():
    sizes_match()
    mirror_changed_is_refused()
    import_refuses_a_changed_copy()
    print("layouts: the mirrors match the library; a changed mirror and a library without "
          "sizes are refused")


if __name__ == "__main__":
    main()
