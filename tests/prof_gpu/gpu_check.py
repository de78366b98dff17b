"""What the GPU checkers (check_graph_trace.py, check_ranks_trace.py) share:
a check that prints its line and stops the mode when it fails, the count of
GPUs, and running the modes one after another so that one failing mode does
not hide the others."""
import re
import subprocess


class Failed(Exception):
    pass


def check(cond, msg):
    print(("ok     " if cond else "FAILED ") + msg, flush=True)
    if not cond:
        raise Failed(msg)


def gpu_count():
    """GPUs nvidia-smi lists; 0 when it fails or is missing."""
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    except OSError:
        return 0
    return len(re.findall(r"^GPU \d+", p.stdout, re.M)) if p.returncode == 0 else 0


def run_modes(what, modes, run):
    """run(mode) for each mode; prints "<what> checks: all held" or what failed.
    Returns the exit status: 0, or 1 when a mode failed."""
    failed = []
    for m in modes:
        print(f"== {m}", flush=True)
        try:
            run(m)
        except Failed as e:
            failed.append(f"{m}: {e}")
        except Exception as e:  # a fault of the check itself must not hide the other modes
            print(f"FAILED {m}: {type(e).__name__}: {e}")
            failed.append(f"{m}: {type(e).__name__}: {e}")
    print(f"{what} checks:", "all held" if not failed else "FAILED: " + "; ".join(failed))
    return 1 if failed else 0
