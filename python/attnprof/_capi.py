"""The C API through ctypes: attn_tensor / attn_args / attn_ctx_opts field
for field, and the functions the package calls. Each mirror is checked
against the size the library reports (attn_struct_size, attnprof/abi.h) when
the package loads: a library built from other headers is refused with the
sizes that differ. Engines (attn_ctx handles) live in _engine.py."""

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
                ("lse", ctypes.c_void_p), ("stream", ctypes.c_void_p),
                ("seqs", ctypes.c_void_p)]  # attn_seqs *: NULL, the dense case


class CtxOpts(ctypes.Structure):
    """attn_ctx_opts, field for field (ctypes pads as the C compiler does)."""
    _fields_ = [("size", ctypes.c_size_t),  # set by attn_ctx_opts_default
                ("workspace_limit", ctypes.c_size_t), ("cache_capacity", ctypes.c_size_t),
                ("cuda_graphs", ctypes.c_int), ("flash_kernel", ctypes.c_int),
                ("cudnn_graph", ctypes.c_int), ("cpu_threads", ctypes.c_int),
                ("cpu_isa", ctypes.c_char_p), ("locked", ctypes.c_int)]


class CtxStats(ctypes.Structure):
    """attn_ctx_stats."""
    _fields_ = [("cache_entries", ctypes.c_size_t), ("cache_capacity", ctypes.c_size_t),
                ("cache_hits", ctypes.c_uint64), ("cache_misses", ctypes.c_uint64),
                ("cache_evictions", ctypes.c_uint64), ("workspace_bytes", ctypes.c_size_t),
                ("workspace_limit", ctypes.c_size_t)]


FLASH_KERNELS = {"auto": 0, "mma_sync": 1, "wgmma": 2, "ws": 3}
CUDNN_GRAPHS = {"auto": 0, "composite": 1, "node": 2}


class BackendInfo(ctypes.Structure):
    """attn_backend_info."""
    _fields_ = [("backend", ctypes.c_int), ("name", ctypes.c_char_p), ("impl", ctypes.c_char_p),
                ("device_kind", ctypes.c_int), ("summary", ctypes.c_char_p)]


# Each mirror and the attn_struct value (attnprof/abi.h) the library reports its size by.
MIRRORS = [("attn_tensor", 0, Tensor), ("attn_args", 1, Args), ("attn_ctx_opts", 2, CtxOpts),
           ("attn_ctx_stats", 3, CtxStats), ("attn_backend_info", 4, BackendInfo)]


class LayoutError(ImportError):
    """The ctypes mirrors do not match the library's structs."""


def check_layouts(l, where, mirrors=None):
    """Raises LayoutError naming every mirror whose size differs from the
    library's (or when the library reports none)."""
    try:
        size = l.attn_struct_size
    except AttributeError:
        raise LayoutError(f"attnprof: the library at {where} reports no struct sizes "
                          "(attn_struct_size): it is older than this package; rebuild or "
                          "reinstall them together") from None
    size.argtypes, size.restype = [ctypes.c_int], ctypes.c_size_t
    bad = [f"{name}: {ctypes.sizeof(cls)} bytes here, {size(code)} in the library"
           for name, code, cls in (mirrors or MIRRORS) if ctypes.sizeof(cls) != size(code)]
    if bad:
        raise LayoutError(f"attnprof: this package's struct mirrors do not match the library at "
                          f"{where} ({'; '.join(bad)}): rebuild or reinstall them together")


def _bind(l):
    A, ctx = ctypes.POINTER(Args), ctypes.c_void_p
    l.attn_forward.argtypes = [ctx, ctypes.c_int, A]
    l.attn_forward.restype = ctypes.c_int
    l.attn_why_not.argtypes = [ctx, ctypes.c_int, A, ctypes.c_char_p, ctypes.c_size_t]
    l.attn_why_not.restype = ctypes.c_int
    l.attn_select.argtypes = [ctx, A, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                              ctypes.c_size_t]
    l.attn_select.restype = ctypes.c_int
    l.attn_ctx_opts_default.argtypes = []
    l.attn_ctx_opts_default.restype = CtxOpts
    l.attn_ctx_opts_from_env.argtypes = [ctypes.POINTER(CtxOpts)]
    l.attn_ctx_opts_from_env.restype = ctypes.c_int
    l.attn_ctx_create.argtypes = [ctypes.POINTER(CtxOpts), ctypes.POINTER(ctx)]
    l.attn_ctx_create.restype = ctypes.c_int
    l.attn_ctx_destroy.argtypes = [ctx]
    l.attn_ctx_destroy.restype = None
    l.attn_ctx_options.argtypes = [ctx]
    l.attn_ctx_options.restype = ctypes.POINTER(CtxOpts)
    l.attn_ctx_stats_get.argtypes = [ctx, ctypes.POINTER(CtxStats)]
    l.attn_ctx_stats_get.restype = None
    l.attn_ctx_trim.argtypes = [ctx]
    l.attn_ctx_trim.restype = None
    l.attn_backend_name.argtypes = [ctypes.c_int]
    l.attn_backend_name.restype = ctypes.c_char_p
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
    return l


lib, path = _loader.load()
check_layouts(lib, path)
lib = _bind(lib)


def status_name(st):
    return lib.attn_status_string(st).decode()


def last_error():
    return lib.attn_last_error().decode()
