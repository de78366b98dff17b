"""Builds the wheel with libattnprof inside it (attnprof/lib/), so that
`pip install ./python` gives a package that needs nothing else set.

Where the library comes from, first that applies:
  ATTNPROF_LIB=/path/to/libattnprof.so   copy that build (no compiler run);
  ATTNPROF_NO_BUNDLE=1                   bundle nothing: the module then finds
                                         an installed library (see attnprof/_loader.py);
  build/ of the checkout, when the README's first command configured it as a
                                         release build without sanitizers (and
                                         ATTNPROF_CUDA is not set): brought up to
                                         date there (`cmake --build build --target
                                         attnprof`), seconds when it is;
  otherwise                              build it with CMake from the checkout this
                                         folder sits in, in build-python/ there (kept,
                                         so a second install only rebuilds what
                                         changed): CPU and, when a toolkit is found,
                                         CUDA (ATTNPROF_CUDA=OFF skips CUDA), never
                                         with the sanitizers.
Either build makes the library target alone (no command, tests or benches),
with Ninja when it is installed, on every core.
"""

import glob
import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "attnprof"))
import _loader  # noqa: E402  (stdlib only: reads ELF headers)


def cache_value(build, name):
    """A variable of an existing CMake build folder's cache, or None."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key.split(":")[0] == name:
                    return value
    except OSError:
        pass
    return None


def reusable(build):
    """The checkout's own release build, configured from this checkout."""
    home = cache_value(build, "CMAKE_HOME_DIRECTORY")
    return (home is not None and os.path.realpath(home) == os.path.realpath(ROOT)
            and "ATTNPROF_CUDA" not in os.environ
            and cache_value(build, "CMAKE_BUILD_TYPE") == "Release"
            and cache_value(build, "ATTNPROF_SANITIZE") in ("OFF", None)
            and cache_value(build, "ATTNPROF_FUZZ") in ("OFF", None))


def cmake_build():
    build = os.path.join(ROOT, "build")
    if not reusable(build):
        build = os.path.join(ROOT, "build-python")
        cuda = os.environ.get("ATTNPROF_CUDA", "AUTO")
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     "-DATTNPROF_SANITIZE=OFF", "-DBUILD_TESTING=OFF", "-DATTNPROF_BENCH=OFF",
                     f"-DATTNPROF_CUDA={cuda}"]
        if shutil.which("ninja") and cache_value(build, "CMAKE_GENERATOR") in ("Ninja", None):
            configure += ["-G", "Ninja"]
        subprocess.check_call(configure)
    subprocess.check_call(["cmake", "--build", build, "--target", "attnprof", "-j",
                           str(os.cpu_count() or 2)])
    return os.path.join(build, "lib", "libattnprof.so")


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        if os.environ.get("ATTNPROF_NO_BUNDLE"):
            return
        dest = os.path.join(self.build_lib, "attnprof", "lib")
        os.makedirs(dest, exist_ok=True)
        src = os.environ.get("ATTNPROF_LIB") or cmake_build()
        if _loader.is_sanitized(src):
            raise SystemExit(f"{src} is an AddressSanitizer build: give a release build")
        real = os.path.realpath(src)
        # The loader asks for the soname; one real file under that name.
        shutil.copyfile(real, os.path.join(dest, "libattnprof.so.0"))
        for stale in glob.glob(os.path.join(dest, "libattnprof.so.0.*")):
            os.remove(stale)


setup(cmdclass={"build_py": BuildWithLibrary})
