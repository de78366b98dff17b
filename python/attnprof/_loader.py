"""Finding libattnprof.so, never an ASan build (issue 14, item 5).

Order: $ATTNPROF_LIB (a path: the caller's explicit choice), the copy pip put
next to this package (attnprof/lib/), the library an install tree gives
(pkg-config's libdir, then the loader's search path), and last the build
folders of a source checkout (build*/lib, newest first). A library built
with AddressSanitizer aborts a Python that did not preload the ASan runtime,
so such a file is skipped everywhere and refused, with the reason, when it
was named explicitly.
"""

import ctypes
import glob
import os
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("libattnprof.so.0", "libattnprof.so")


def needed_libraries(path):
    """DT_NEEDED entries of an ELF64 little-endian shared object ([] when the
    file is not one): read from the dynamic section, without loading it."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return []
            shoff, = struct.unpack_from("<Q", head, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
            f.seek(shoff)
            sections = [struct.unpack_from("<IIQQQQIIQQ", f.read(shentsize)) for _ in range(shnum)]
            out = []
            for s in sections:
                if s[1] != 6:  # SHT_DYNAMIC
                    continue
                strtab = sections[s[6]]  # sh_link: the string table
                f.seek(s[4])
                dyn = f.read(s[5])
                f.seek(strtab[4])
                strs = f.read(strtab[5])
                for off in range(0, len(dyn) - 15, 16):
                    tag, val = struct.unpack_from("<qQ", dyn, off)
                    if tag == 1:  # DT_NEEDED
                        out.append(strs[val:strs.index(b"\0", val)].decode())
            return out
    except (OSError, struct.error, ValueError, IndexError):
        return []


def is_sanitized(path):
    """True when the library links the ASan runtime."""
    return any(n.startswith(("libasan", "libclang_rt.asan")) for n in needed_libraries(path))


def asan_preloaded():
    return "asan" in os.environ.get("LD_PRELOAD", "")


def _bundled():
    for name in NAMES:
        p = os.path.join(HERE, "lib", name)
        if os.path.exists(p):
            yield p


def _installed():
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "attnprof"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        libdir = ""
    if libdir:
        for name in NAMES:
            p = os.path.join(libdir, name)
            if os.path.exists(p):
                yield p
    for d in ("/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib/x86_64-linux-gnu"):
        p = os.path.join(d, NAMES[0])
        if os.path.exists(p):
            yield p


def _checkout():
    root = os.path.dirname(os.path.dirname(HERE))
    found = glob.glob(os.path.join(root, "build*", "lib", "libattnprof.so"))
    for path in sorted(found, key=os.path.getmtime, reverse=True):
        yield path


def candidates():
    yield from _bundled()
    yield from _installed()
    yield NAMES[0]  # the loader's own search path (LD_LIBRARY_PATH, ld.so.cache)
    yield from _checkout()


def load():
    """The loaded library (ctypes.CDLL); OSError saying what was tried."""
    env = os.environ.get("ATTNPROF_LIB")
    if env:
        if is_sanitized(env) and not asan_preloaded():
            raise OSError(f"ATTNPROF_LIB={env} is an AddressSanitizer build: preload the ASan "
                          "runtime (LD_PRELOAD=$(cc -print-file-name=libasan.so)) or point "
                          "ATTNPROF_LIB at a release build")
        return ctypes.CDLL(env), env
    tried = []
    for path in candidates():
        if os.path.sep in path and is_sanitized(path):
            tried.append(f"{path}: an AddressSanitizer build, skipped")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append(f"{path}: {e}")
    raise OSError("libattnprof not found: pip install the package (it builds or bundles the "
                  "library), install it (cmake --install), or set ATTNPROF_LIB to its path. "
                  "Tried: " + "; ".join(tried))
