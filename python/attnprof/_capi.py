"""The C API through ctypes: attn_tensor / attn_args field for field, the
functions the package calls, and one library-wide engine handle when the
library has one (attn_ctx_create), so callers use forward()/why_not() and
never care which form the C entry points take."""

import ctypes

from . import _loader

DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "bool": 3}
CAUSAL = {"none": 0, "top-left": 1, "bottom-right": 2}
MASK = {None: 0, "bool": 1, "additive": 2}
DEVICE_CPU = -1
STATUS_INVALID_ARGUMENT, STATUS_UNSUPPORTED = 1, 2


class Tensor(ctypes.Structure):
    """attn_tensor: data, dtype, device, shape[4], strides[4] (elements)."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("device", ctypes.c_int),
                ("shape", ctypes.c_int64 * 4), ("strides", ctypes.c_int64 * 4)]


class Args(ctypes.Structure):
    """attn_args, field for field."""
    _fields_ = [("q", Tensor), ("k", Tensor), ("v", Tensor), ("out", Tensor),
                ("causal", ctypes.c_int), ("scale", ctypes.c_double),
                ("mask_kind", ctypes.c_int), ("mask", Tensor),
                ("lse", ctypes.c_void_p), ("stream", ctypes.c_void_p)]


class BackendInfo(ctypes.Structure):
    """attn_backend_info."""
    _fields_ = [("backend", ctypes.c_int), ("name", ctypes.c_char_p), ("impl", ctypes.c_char_p),
                ("device_kind", ctypes.c_int), ("summary", ctypes.c_char_p)]


def _bind(l):
    A = ctypes.POINTER(Args)
    has_ctx = hasattr(l, "attn_ctx_create")
    pre = [ctypes.c_void_p] if has_ctx else []
    l.attn_forward.argtypes = pre + [ctypes.c_int, A]
    l.attn_forward.restype = ctypes.c_int
    l.attn_why_not.argtypes = pre + [ctypes.c_int, A, ctypes.c_char_p, ctypes.c_size_t]
    l.attn_why_not.restype = ctypes.c_int
    l.attn_last_error.restype = ctypes.c_char_p
    l.attn_status_string.argtypes = [ctypes.c_int]
    l.attn_status_string.restype = ctypes.c_char_p
    l.attn_backend_from_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    l.attn_backend_from_name.restype = ctypes.c_int
    l.attn_backend_list.argtypes = [ctypes.POINTER(BackendInfo), ctypes.c_size_t]
    l.attn_backend_list.restype = ctypes.c_size_t
    l.attn_flops.argtypes = [A]
    l.attn_flops.restype = ctypes.c_double
    l.attn_reference_f64.argtypes = [A, ctypes.POINTER(ctypes.c_double), ctypes.c_void_p]
    l.attn_reference_f64.restype = ctypes.c_int
    l.attn_rel_error.argtypes = [ctypes.POINTER(Tensor), ctypes.POINTER(ctypes.c_double)]
    l.attn_rel_error.restype = ctypes.c_double
    if has_ctx:
        l.attn_ctx_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        l.attn_ctx_create.restype = ctypes.c_int
        if hasattr(l, "attn_ctx_trim"):
            l.attn_ctx_trim.argtypes = [ctypes.c_void_p]
            l.attn_ctx_trim.restype = None
    return l


lib, path = _loader.load()
lib = _bind(lib)
_ctx = None


def ctx():
    """The engine handle every call of this package shares (None when the
    library predates handles). Created with the library's defaults."""
    global _ctx
    if _ctx is None and hasattr(lib, "attn_ctx_create"):
        h = ctypes.c_void_p()
        st = lib.attn_ctx_create(None, ctypes.byref(h))
        if st:
            raise RuntimeError("attn_ctx_create: " + lib.attn_last_error().decode())
        _ctx = h
    return _ctx


def forward_fn():
    """f(code, args_ref) -> status, bound to the shared handle if any."""
    c = ctx()
    if c is None:
        return lib.attn_forward
    f = lib.attn_forward
    return lambda code, ref: f(c, code, ref)


def forward(code, ref):
    c = ctx()
    return lib.attn_forward(code, ref) if c is None else lib.attn_forward(c, code, ref)


def why_not(code, ref, buf):
    c = ctx()
    if c is None:
        return lib.attn_why_not(code, ref, buf, len(buf))
    return lib.attn_why_not(c, code, ref, buf, len(buf))


def status_name(st):
    return lib.attn_status_string(st).decode()


def last_error():
    return lib.attn_last_error().decode()
