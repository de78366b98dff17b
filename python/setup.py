"""Builds the wheel with libattnprof inside it (attnprof/lib/), so that
`pip install ./python` gives a package that needs nothing else set.

Where the library comes from, first that applies:
  ATTNPROF_LIB=/path/to/libattnprof.so   copy that build (no compiler run);
  ATTNPROF_NO_BUNDLE=1                   bundle nothing: the module then finds
                                         an installed library (see attnprof/_loader.py);
  otherwise                              build it with CMake from the checkout this
                                         folder sits in (CPU and, when a toolkit is
                                         found, CUDA; ATTNPROF_CUDA=OFF skips CUDA),
                                         never with the sanitizers.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "attnprof"))
import _loader  # noqa: E402  (stdlib only: reads ELF headers)


def cmake_build(work):
    build = os.path.join(work, "build")
    cuda = os.environ.get("ATTNPROF_CUDA", "AUTO")
    subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                           "-DATTNPROF_SANITIZE=OFF", "-DBUILD_TESTING=OFF", f"-DATTNPROF_CUDA={cuda}"])
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
        with tempfile.TemporaryDirectory() as work:
            src = os.environ.get("ATTNPROF_LIB") or cmake_build(work)
            if _loader.is_sanitized(src):
                raise SystemExit(f"{src} is an AddressSanitizer build: give a release build")
            real = os.path.realpath(src)
            # The loader asks for the soname; one real file under that name.
            shutil.copyfile(real, os.path.join(dest, "libattnprof.so.0"))
        for stale in glob.glob(os.path.join(dest, "libattnprof.so.0.*")):
            os.remove(stale)


setup(cmdclass={"build_py": BuildWithLibrary})
