"""What the two headless-Chromium tests of the HTML report share: finding
the browser, starting a clean work folder, and a check that prints what held."""
import os
import shutil

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def start(work):
    """The browser's path with a fresh work folder, or None after saying why it skips."""
    exe = browser()
    if not exe:
        print("SKIP: no chromium installed (scripts/install-deps.sh installs Debian's chromium)")
        return None
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return exe


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}")
