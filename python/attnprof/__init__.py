"""attnprof: attention through libattnprof's backends, from Python.

    import attnprof
    out = attnprof.sdpa(q, k, v, causal=True)          # numpy arrays or torch tensors
    attnprof.why_not(q, k, v, backend="flash")        # None, or why flash would refuse
    attnprof.backends()                               # what this build has, per device
    attnprof.compare(q, k, v)                         # every backend: time, error, [dicts]

q, k, v are [B, H, S, D] (k and v may have fewer heads: grouped-query
attention), as PyTorch's scaled_dot_product_attention takes them. numpy
arrays run on the CPU; torch tensors on their device (CUDA work goes on the
current stream). Inputs of the wrong kind raise TypeError, of the wrong
shape/dtype/value ValueError, naming what is accepted; a backend that
refuses the inputs raises attnprof.InputError (a ValueError and an
attnprof.Error) with its reason; other failures attnprof.Error (a
RuntimeError: out of memory, no device, a library error).

Every call runs on an engine handle (attn_ctx): engine=Engine(...) with
explicit options, or else this thread's own engine() (_engine.py).

The library: see _loader.py (never an AddressSanitizer build). The lower
level (Call, tensor, from_torch) passes raw pointers for benchmarks.
"""

import ctypes
import time

from . import _arrays, _capi, _engine
from ._capi import DEVICE_CPU, DTYPES, Args, Tensor, lib, status_name  # noqa: F401

__all__ = ["sdpa", "why_not", "backends", "compare", "Error", "InputError", "Engine", "engine",
           "Call", "from_torch", "tensor",
           "dtype_code", "lib", "trim", "status_name"]
__version__ = "0.1.0"

CAUSAL_ACCEPTED = "None, False, True, 'none', 'top-left' or 'bottom-right'"


class Error(RuntimeError):
    """A refused or failed call: .status is the attn_status name, str() the reason."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class InputError(Error, ValueError):
    """Inputs the library refused (invalid, or not taken by that backend):
    both an attnprof.Error and a ValueError."""


def _raise(st):
    cls = InputError if st in (_capi.STATUS_INVALID_ARGUMENT, _capi.STATUS_UNSUPPORTED) else Error
    raise cls(status_name(st), _capi.last_error())


from ._engine import Engine, engine  # noqa: E402  (after Error: engines raise it)


def backend_code(name):
    if not isinstance(name, str):
        raise TypeError(f"backend: got {type(name).__name__}; accepted: a name, one of "
                        f"{', '.join(_names())}")
    code = ctypes.c_int()
    if lib.attn_backend_from_name(name.encode(), ctypes.byref(code)):
        raise ValueError(f"backend {name!r} is not known; accepted: {', '.join(_names())}")
    return code.value


def _names():
    return ["auto", "naive", "naive_inplace", "math", "efficient", "flash", "cudnn"]


def backends(device=None):
    """The implementations compiled in, in AUTO's order of preference, each
    backend once per device kind: [{'name', 'device', 'impl', 'summary'}];
    device 'cpu' or 'cuda' keeps one kind."""
    if device not in (None, "cpu", "cuda"):
        raise ValueError(f"device {device!r} is not accepted: None, 'cpu' or 'cuda'")
    infos = (_capi.BackendInfo * 64)()
    n = min(lib.attn_backend_list(infos, 64), 64)
    out, seen = [], set()
    for i in infos[:n]:
        kind = "cuda" if i.device_kind >= 0 else "cpu"
        if (device and device != kind) or (i.name, kind) in seen:
            continue
        seen.add((i.name, kind))
        out.append({"name": i.name.decode(), "device": kind, "impl": i.impl.decode(),
                    "summary": i.summary.decode()})
    return out


def _causal(causal):
    if causal is None or causal is False:
        return 0
    if causal is True:
        return 1
    if isinstance(causal, str) and causal in _capi.CAUSAL:
        return _capi.CAUSAL[causal]
    raise ValueError(f"causal={causal!r} is not accepted: {CAUSAL_ACCEPTED}")


def _scale(scale):
    if scale is None:
        return 0.0
    try:
        s = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"scale: got {type(scale).__name__}; accepted: None or a positive number")
    if not s > 0 or s == float("inf"):
        raise ValueError(f"scale={scale!r} is not accepted: None (1/sqrt(D)) or a positive number")
    return s


class _Problem:
    """q, k, v (and mask, out) converted once; .args is the C struct."""

    def __init__(self, q, k, v, causal, scale, mask, out=None, engine=None):
        self.engine = engine
        self.kind = _arrays.kind_of(q, "q")
        keep = []
        a = Args()
        for name, x in (("q", q), ("k", k), ("v", v)):
            obj, t = _arrays.as_tensor(x, name, self.kind)
            keep.append(obj)
            setattr(a, name, t)
        if out is None:
            out = _arrays.empty_like_q(keep[0], self.kind, int(a.v.shape[3]))
        self.out, a.out = _arrays.as_tensor(out, "out", self.kind)
        a.causal, a.scale = _causal(causal), _scale(scale)
        if mask is not None:
            obj, a.mask = _arrays.as_tensor(mask, "mask", self.kind, mask=True)
            a.mask_kind = _capi.MASK["bool" if a.mask.dtype == DTYPES["bool"] else "additive"]
            keep.append(obj)
        stream = _arrays.stream_of(keep[0], self.kind)
        a.stream = stream
        self.keep, self.args, self.ref = keep, a, ctypes.byref(a)

    def handle(self):
        return (self.engine or _engine.engine()).handle

    def run(self, code):
        st = lib.attn_forward(self.handle(), code, self.ref)
        if st:
            _raise(st)
        return self.out

    def why_not(self, code):
        buf = ctypes.create_string_buffer(1024)
        st = lib.attn_why_not(self.handle(), code, self.ref, buf, len(buf))
        return None if st == 0 else buf.value.decode()


def sdpa(q, k, v, *, backend="auto", causal=None, scale=None, mask=None, engine=None):
    """softmax(q k^T * scale + mask) v through one backend (default: the one
    AUTO picks). Returns a new array/tensor [B, H, Sq, Dv] of q's dtype and
    device. causal: None/False, True (= 'top-left', PyTorch's is_causal) or
    'bottom-right'; scale None means 1/sqrt(D); mask bool (True = attend) or
    additive, [Sq, Sk] or [B|1, H|1, Sq, Sk]; engine an Engine, or None for
    this thread's engine()."""
    code = backend_code(backend)
    return _Problem(q, k, v, causal, scale, mask, engine=engine).run(code)


def why_not(q, k, v, *, backend="auto", causal=None, scale=None, mask=None, engine=None):
    """None if `backend` takes these inputs, else its reason in words."""
    code = backend_code(backend)
    return _Problem(q, k, v, causal, scale, mask, engine=engine).why_not(code)


def _host_problem(p):
    """The same problem with host copies (the fp64 reference reads host memory)."""
    if p.kind == "numpy" or p.keep[0].device.type == "cpu":
        return p, None
    ins = [x.cpu() for x in p.keep[:3]]
    mask = p.keep[3].cpu() if len(p.keep) > 3 else None
    causal = {0: None, 1: "top-left", 2: "bottom-right"}[p.args.causal]
    host = _Problem(*ins, causal, p.args.scale or None, mask, out=p.out.cpu())
    return host, ins


def _reference(p):
    host, _ = _host_problem(p)
    n = 1
    for s in host.args.out.shape:
        n *= s
    ref = (ctypes.c_double * n)()
    st = lib.attn_reference_f64(host.ref, ref, None)
    if st:
        _raise(st)
    return ref


def _rel_err(p, ref):
    if p.kind == "torch" and p.keep[0].device.type == "cuda":
        import torch
        torch.cuda.synchronize(p.keep[0].device)
        host, _ = _host_problem(p)
        host.out.copy_(p.out.cpu())
        return lib.attn_rel_error(ctypes.byref(host.args.out), ref)
    return lib.attn_rel_error(ctypes.byref(p.args.out), ref)


def _sync(p):
    if p.kind == "torch" and p.keep[0].device.type == "cuda":
        import torch
        torch.cuda.synchronize(p.keep[0].device)


def compare(q, k, v, *, causal=None, scale=None, mask=None, backends=None, iters=10, warmup=2,
            check=True, engine=None):
    """Every backend of q's device (or the names given) on these inputs, as
    the compare table: one dict per backend with 'name', 'status' ('ok' or
    'refused'), 'why', 'time_us' (median of iters calls, wall clock, the
    device drained after each), 'time_us_min', 'time_us_max', 'gflops',
    'rel_err' (against the fp64 reference; None when check=False)."""
    if not isinstance(iters, int) or iters < 1:
        raise ValueError(f"iters={iters!r} is not accepted: a positive integer")
    p = _Problem(q, k, v, causal, scale, mask, engine=engine)
    device = "cpu" if p.args.q.device < 0 else "cuda"
    names = backends if backends is not None else [b["name"] for b in globals()["backends"](device)]
    ref = _reference(p) if check else None
    flops = lib.attn_flops(p.ref)
    rows = []
    for name in names:
        code = backend_code(name)
        why = p.why_not(code)
        if why is not None:
            rows.append({"name": name, "status": "refused", "why": why})
            continue
        for _ in range(warmup):
            p.run(code)
        _sync(p)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            p.run(code)
            _sync(p)
            times.append((time.perf_counter() - t0) * 1e6)
        times.sort()
        med = times[len(times) // 2] if len(times) % 2 else 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
        rows.append({"name": name, "status": "ok", "why": None, "time_us": med,
                     "time_us_min": times[0], "time_us_max": times[-1],
                     "gflops": flops / (med * 1e3), "rel_err": _rel_err(p, ref) if check else None})
    return rows


# ---- the lower level: raw pointers (bench/vs_torch.py) -------------------------

def dtype_code(name):
    return DTYPES[name]


def tensor(data_ptr, shape, strides, dtype, device):
    """An attn_tensor: shape [B, H, S, D] (masks [B|1, H|1, Sq, Sk]), strides
    in elements, dtype 'f32'|'f16'|'bf16'|'bool', device -1 (host) or a CUDA
    ordinal."""
    if len(shape) != 4 or len(strides) != 4:
        raise ValueError("attnprof tensors are 4-D: [B, H, S, D]")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not accepted: {', '.join(DTYPES)}")
    return _arrays._capi_tensor(data_ptr, shape, strides, dtype, device)


def from_torch(t):
    """Pointer, shape, strides, dtype and device of a torch tensor (4-D)."""
    return _arrays._torch_tensor(t, "tensor", mask=True)[1]


def _as_tensor(x):
    return x if isinstance(x, Tensor) else from_torch(x)


class Call:
    """One attention problem prepared once (the C struct is built here, so a
    call costs one ctypes call): q, k, v, out as Tensor or torch tensors;
    causal as sdpa's; scale 0 = 1/sqrt(D); mask with mask_kind
    'bool'|'additive'; lse a pointer to [B, Hq, Sq] fp32 (or a tensor);
    stream a cudaStream_t as an int (torch: stream.cuda_stream); engine an
    Engine, or None for the calling thread's engine()."""

    def __init__(self, q, k, v, out, causal=None, scale=0.0, mask=None, mask_kind=None,
                 lse=None, stream=0, engine=None):
        a = Args()
        a.q, a.k, a.v, a.out = (_as_tensor(x) for x in (q, k, v, out))
        a.causal, a.scale = _causal(causal), float(scale)
        if mask is not None:
            if mask_kind not in (None, "bool", "additive"):
                raise ValueError(f"mask_kind={mask_kind!r} is not accepted: 'bool' or 'additive'")
            a.mask, a.mask_kind = _as_tensor(mask), _capi.MASK[mask_kind or "bool"]
        a.lse = lse if isinstance(lse, int) or lse is None else lse.data_ptr()
        a.stream = stream or None
        self.args = a
        self.engine = engine
        self._ref = ctypes.byref(a)
        self._codes = {}

    def _handle(self):
        return (self.engine or _engine.engine()).handle

    def _code(self, backend):
        code = self._codes.get(backend)
        if code is None:
            code = self._codes[backend] = backend_code(backend)
        return code

    def __call__(self, backend="auto"):
        st = lib.attn_forward(self._handle(), self._code(backend), self._ref)
        if st:
            _raise(st)

    def raw(self, backend):
        """(function, handle, code, args): call function(handle, code, args)
        for the lowest per-call overhead, on the thread that called raw (the
        handle is its engine's); it returns the attn_status (0 = ok)."""
        return lib.attn_forward, self._handle(), self._code(backend), self._ref

    def why_not(self, backend):
        buf = ctypes.create_string_buffer(512)
        st = lib.attn_why_not(self._handle(), self._code(backend), self._ref, buf, len(buf))
        return None if st == 0 else buf.value.decode()

    def select(self):
        """(backend name AUTO picks, its log: one line per candidate)."""
        picked, log = ctypes.c_int(), ctypes.create_string_buffer(4096)
        st = lib.attn_select(self._handle(), self._ref, ctypes.byref(picked), log, len(log))
        if st:
            _raise(st)
        return lib.attn_backend_name(picked.value).decode(), log.value.decode()

    def flops(self):
        return lib.attn_flops(self._ref)


def trim():
    """Frees what this thread's engine keeps between calls (device scratch,
    workspaces, cached plans and graphs)."""
    _engine.engine().trim()
