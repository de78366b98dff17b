#!/usr/bin/env python3
"""Issue 14, item 5: after scripts/check.sh a checkout holds a release and
an ASan build; `import attnprof` from the checkout must load the release
one even when the ASan one is newer, and refuse an explicit ASan path with
the reason instead of aborting. The ASan library here is a stand-in built
with -fsanitize=address (loading it without the runtime preloaded aborts).
usage: test_loader.py RELEASE_LIBATTNPROF SOURCE_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

release, src = sys.argv[1], sys.argv[2]


def main():
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(os.path.join(src, "python", "attnprof"), os.path.join(d, "python", "attnprof"),
                        ignore=shutil.ignore_patterns("lib", "__pycache__"))
        old = os.path.join(d, "build-release", "lib")
        new = os.path.join(d, "build-check-asan", "lib")
        os.makedirs(old), os.makedirs(new)
        shutil.copyfile(release, os.path.join(old, "libattnprof.so"))
        c = os.path.join(d, "stub.c")
        with open(c, "w") as f:
            f.write("int attn_stub(void) { return 0; }\n")
        asan = os.path.join(new, "libattnprof.so")
        subprocess.check_call(["cc", "-shared", "-fPIC", "-fsanitize=address", "-o", asan, c])
        now = time.time()
        os.utime(asan, (now + 60, now + 60))  # the newest build, as after check.sh
        env = {k: v for k, v in os.environ.items()
               if k not in ("ATTNPROF_LIB", "LD_PRELOAD", "PYTHONPATH")}
        env["PYTHONPATH"] = os.path.join(d, "python")
        code = "import attnprof, sys; print(attnprof._capi.path)"
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           cwd=d)
        assert p.returncode == 0, f"import attnprof failed ({p.returncode}): {p.stderr[-2000:]}"
        assert "build-release" in p.stdout, f"loaded {p.stdout.strip()}, not the release build"
        env["ATTNPROF_LIB"] = asan
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           cwd=d)
        assert p.returncode == 1 and "AddressSanitizer build" in p.stderr, p.stderr[-2000:]
    print("loader: the release build is picked over a newer ASan build; an explicit ASan path "
          "is refused with the reason")


if __name__ == "__main__":
    main()
