"""attnprof: a thin ctypes binding to libattnprof's attention API.

Tensors are passed as what the C API takes: a data pointer, a shape, strides
in elements, a dtype and a device, plus the CUDA stream to run on. Nothing
here copies data or depends on a framework; ``from_torch`` reads those facts
off anything shaped like a torch tensor (data_ptr(), shape, stride(), dtype,
device) without importing torch.

The library is found through $ATTNPROF_LIB (a path to libattnprof.so), then
the build folders of this checkout (build*/lib, the most recently built
first), then the loader's search path.

    import attnprof
    call = attnprof.Call(q, k, v, out, causal="top-left", stream=s)
    call("naive_inplace")          # raises attnprof.Error with the reason
    call.why_not("flash")          # None, or the reason it would refuse
"""

import ctypes
import glob
import os

__all__ = ["Error", "Call", "backends", "from_torch", "tensor", "dtype_code", "lib", "trim",
           "status_name"]

DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "bool": 3}
_TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
                 "torch.bool": "bool"}
CAUSAL = {None: 0, "none": 0, "top-left": 1, "bottom-right": 2}
MASK = {None: 0, "bool": 1, "additive": 2}
DEVICE_CPU = -1


class Tensor(ctypes.Structure):
    """attn_tensor: data, dtype, device, shape[4], strides[4] (elements)."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("device", ctypes.c_int),
                ("shape", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4)]


class Args(ctypes.Structure):
    """attn_args, field for field."""
    _fields_ = [("q", Tensor), ("k", Tensor), ("v", Tensor), ("out", Tensor),
                ("causal", ctypes.c_int), ("scale", ctypes.c_double),
                ("mask_kind", ctypes.c_int), ("mask", Tensor),
                ("lse", ctypes.c_void_p), ("stream", ctypes.c_void_p),
                ("seqs", ctypes.c_void_p)]


class BackendInfo(ctypes.Structure):
    """attn_backend_info."""
    _fields_ = [("backend", ctypes.c_int), ("name", ctypes.c_char_p), ("impl", ctypes.c_char_p),
                ("device_kind", ctypes.c_int), ("summary", ctypes.c_char_p)]


class Error(RuntimeError):
    """A refused or failed call: .status is the attn_status name, str() the reason."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _candidates():
    env = os.environ.get("ATTNPROF_LIB")
    if env:
        yield env
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Several build folders may exist: the most recently built first.
    found = glob.glob(os.path.join(root, "build*", "lib", "libattnprof.so"))
    for path in sorted(found, key=os.path.getmtime, reverse=True):
        yield path
    yield "libattnprof.so"


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise OSError("libattnprof.so not found; set ATTNPROF_LIB. Tried: " + "; ".join(errors))


def _bind(l):
    l.attn_forward.argtypes = [ctypes.c_int, ctypes.POINTER(Args)]
    l.attn_forward.restype = ctypes.c_int
    l.attn_why_not.argtypes = [ctypes.c_int, ctypes.POINTER(Args), ctypes.c_char_p, ctypes.c_size_t]
    l.attn_why_not.restype = ctypes.c_int
    l.attn_last_error.restype = ctypes.c_char_p
    l.attn_status_string.argtypes = [ctypes.c_int]
    l.attn_status_string.restype = ctypes.c_char_p
    l.attn_backend_from_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    l.attn_backend_from_name.restype = ctypes.c_int
    l.attn_backend_list.argtypes = [ctypes.POINTER(BackendInfo), ctypes.c_size_t]
    l.attn_backend_list.restype = ctypes.c_size_t
    l.attn_flops.argtypes = [ctypes.POINTER(Args)]
    l.attn_flops.restype = ctypes.c_double
    return l


lib = _bind(_load())


def status_name(st):
    """The attn_status message of a status code ("out of memory", ...)."""
    return lib.attn_status_string(st).decode()


def backend_code(name):
    code = ctypes.c_int()
    if lib.attn_backend_from_name(name.encode(), ctypes.byref(code)):
        raise Error("invalid argument", lib.attn_last_error().decode())
    return code.value


def backends(device="cuda"):
    """The implementations compiled in for 'cuda' or 'cpu', in the table's
    order, each backend once: [{'name', 'impl', 'summary'}]."""
    infos = (BackendInfo * 64)()
    n = min(lib.attn_backend_list(infos, 64), 64)
    out, seen = [], set()
    for i in infos[:n]:
        on_gpu = i.device_kind >= 0
        if (device == "cuda") != on_gpu or i.name in seen:
            continue
        seen.add(i.name)
        out.append({"name": i.name.decode(), "impl": i.impl.decode(), "summary": i.summary.decode()})
    return out


def dtype_code(name):
    return DTYPES[name]


def tensor(data_ptr, shape, strides, dtype, device):
    """An attn_tensor: shape [B, H, S, D] (masks [B|1, H|1, Sq, Sk]), strides
    in elements, dtype 'f32'|'f16'|'bf16'|'bool', device -1 (host) or a CUDA
    ordinal."""
    if len(shape) != 4 or len(strides) != 4:
        raise ValueError("attnprof tensors are 4-D: [B, H, S, D]")
    t = Tensor()
    t.data, t.dtype, t.device = data_ptr, DTYPES[dtype], device
    t.shape[:] = list(shape)
    t.strides[:] = list(strides)
    return t


def from_torch(t):
    """Pointer, shape, strides, dtype and device of a torch tensor (4-D)."""
    dev = t.device
    index = -1 if dev.type == "cpu" else (dev.index if dev.index is not None else 0)
    return tensor(t.data_ptr(), tuple(t.shape), tuple(t.stride()), _TORCH_DTYPES[str(t.dtype)], index)


def _as_tensor(x):
    return x if isinstance(x, Tensor) else from_torch(x)


class Call:
    """One attention problem prepared once (the C struct is built here, so a
    call costs one ctypes call): q, k, v, out as Tensor or torch tensors;
    causal None|'top-left'|'bottom-right'; scale 0 = 1/sqrt(D); mask with
    mask_kind 'bool'|'additive'; lse a pointer to [B, Hq, Sq] fp32 (or a
    tensor); stream a cudaStream_t as an int (torch: stream.cuda_stream)."""

    def __init__(self, q, k, v, out, causal=None, scale=0.0, mask=None, mask_kind=None,
                 lse=None, stream=0):
        a = Args()
        a.q, a.k, a.v, a.out = (_as_tensor(x) for x in (q, k, v, out))
        a.causal, a.scale = CAUSAL[causal], float(scale)
        if mask is not None:
            a.mask, a.mask_kind = _as_tensor(mask), MASK[mask_kind or "bool"]
        a.lse = lse if isinstance(lse, int) or lse is None else lse.data_ptr()
        a.stream = stream or None
        self.args = a
        self._ref = ctypes.byref(a)
        self._codes = {}

    def _code(self, backend):
        code = self._codes.get(backend)
        if code is None:
            code = self._codes[backend] = backend_code(backend)
        return code

    def __call__(self, backend="auto"):
        st = lib.attn_forward(self._code(backend), self._ref)
        if st:
            raise Error(status_name(st), lib.attn_last_error().decode())

    def raw(self, backend):
        """(function, code, args): call function(code, args) for the lowest
        per-call overhead; it returns the attn_status (0 = ok)."""
        return lib.attn_forward, self._code(backend), self._ref

    def why_not(self, backend):
        buf = ctypes.create_string_buffer(512)
        st = lib.attn_why_not(self._code(backend), self._ref, buf, len(buf))
        return None if st == 0 else buf.value.decode()

    def flops(self):
        return lib.attn_flops(self._ref)


def trim():
    """Frees the device memory the S x S backends keep between calls on this
    thread (a no-op in builds without CUDA)."""
    fn = getattr(lib, "attn_cuda_trim", None)
    if fn is not None:
        fn()
