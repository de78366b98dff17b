"""What the benches beside PyTorch share (fused/fused_vs_torch.py,
fused/ws_vs_torch.py, serving/serving_vs_torch.py): CUDA-event timing of a
call on torch's stream, and attnprof's ctypes binding loaded from a given
library with each backend call wrapped as a no-argument function.

Each script puts this folder on sys.path and imports what it needs:
  sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
  from torch_setup import median_us, load_attnprof, raw_runner
"""
import argparse
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def median_us(fn, reps):
    """Median over reps calls of fn, in us: CUDA events around each call,
    after 3 warm-up calls; all events read after one synchronize."""
    for _ in range(3):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)


def parse_cell(text):
    """A cell as the benches name it, BxHxSxD with a trailing c when causal:
    (b, h, s, d, causal)."""
    causal = text.endswith("c")
    b, h, s, d = (int(x) for x in text.rstrip("c").split("x"))
    return b, h, s, d, causal


def load_attnprof(lib):
    """The attnprof binding (python/attnprof) on the library at `lib`: the
    binding loads ATTNPROF_LIB when imported, so the path is set first."""
    os.environ["ATTNPROF_LIB"] = lib
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import attnprof
    return attnprof


def ncu_driver_args(cells, calls, knob=None, knob_help=""):
    """The options every driver run under ncu takes: --lib, --cells (its
    default `cells`), --calls (default `calls`) and, when `knob` names an
    option, the comma list of one environment knob's values."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, help="libattnprof.so")
    ap.add_argument("--cells", default=cells, help="BxHxSxD[c], comma list (c: causal)")
    ap.add_argument("--calls", type=int, default=calls, help="calls per cell")
    if knob:
        ap.add_argument(knob, default="", help=knob_help)
    return ap


def each_knob(name, values):
    """Sets the environment variable `name` to each value of the comma list
    `values` in turn, printing it, and yields the value (the drivers run
    under ncu read such knobs per call); once, setting nothing, when empty."""
    for v in values.split(",") if values else [None]:
        if v is not None:
            os.environ[name] = v
            print(f"{name}={v}", flush=True)
        yield v


def raw_runner(attnprof, call, backend):
    """One attnprof.Call on `backend` as run(): raises RuntimeError with the
    library's reason on failure."""
    fn, handle, code, ref = call.raw(backend)

    def run():
        if fn(handle, code, ref):
            raise RuntimeError(attnprof.lib.attn_last_error().decode())
    run.call = call  # keeps the argument struct alive
    return run
