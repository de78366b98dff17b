"""attnprof: a thin ctypes binding to libattnprof's attention API.

Tensors are passed as what the C API takes: a data pointer, a shape, strides
in elements, a dtype and a device, plus the CUDA stream to run on. Nothing
here copies data or depends on a framework; ``from_torch`` reads those facts
off anything shaped like a torch tensor (data_ptr(), shape, stride(), dtype,
device) without importing torch.

The library is found through $ATTNPROF_LIB (a path to libattnprof.so), then
the build folders of this checkout (build*/lib, the most recently built
first), then the loader's search path.

Every call runs on an engine handle (attn_ctx): an Engine made with explicit
options, or else this thread's own engine (engine(), one per thread as the C
API's thread rule asks, made from the defaults and the ATTNPROF_* variables
that attn_ctx_opts_from_env reads).

    import attnprof
    call = attnprof.Call(q, k, v, out, causal="top-left", stream=s)
    call("naive_inplace")          # raises attnprof.Error with the reason
    call.why_not("flash")          # None, or the reason it would refuse
    e = attnprof.Engine(cuda_graphs=True, flash_kernel="mma_sync")
    attnprof.Call(q, k, v, out, engine=e)("flash"); e.stats()
"""

import ctypes
import glob
import os
import threading

__all__ = ["Error", "Call", "Engine", "engine", "backends", "from_torch", "tensor", "dtype_code",
           "lib", "trim", "status_name"]

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


class CtxOpts(ctypes.Structure):
    """attn_ctx_opts, field for field (ctypes pads as the C compiler does)."""
    _fields_ = [("workspace_limit", ctypes.c_size_t), ("cache_capacity", ctypes.c_size_t),
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
    ctx = ctypes.c_void_p
    l.attn_forward.argtypes = [ctx, ctypes.c_int, ctypes.POINTER(Args)]
    l.attn_forward.restype = ctypes.c_int
    l.attn_why_not.argtypes = [ctx, ctypes.c_int, ctypes.POINTER(Args), ctypes.c_char_p,
                               ctypes.c_size_t]
    l.attn_why_not.restype = ctypes.c_int
    l.attn_select.argtypes = [ctx, ctypes.POINTER(Args), ctypes.POINTER(ctypes.c_int),
                              ctypes.c_char_p, ctypes.c_size_t]
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
    l.attn_flops.argtypes = [ctypes.POINTER(Args)]
    l.attn_flops.restype = ctypes.c_double
    return l


lib = _bind(_load())


def _check(st):
    if st:
        raise Error(status_name(st), lib.attn_last_error().decode())


class Engine:
    """An engine handle (attn_ctx) with its options: workspace_limit (device
    bytes, 0 none), cache_capacity (entries, 0 the default 64), cuda_graphs,
    flash_kernel 'auto'|'mma_sync'|'wgmma'|'ws', cudnn_graph
    'auto'|'composite'|'node', cpu_threads (0 OpenMP's default), cpu_isa
    None|'auto'|'portable'|'avx2'|'avx512', locked (calls from several threads
    take turns). from_env: start from the ATTNPROF_* variables, as the CLI
    does. An Engine is used by one thread at a time unless locked=True."""

    def __init__(self, workspace_limit=0, cache_capacity=0, cuda_graphs=False,
                 flash_kernel="auto", cudnn_graph="auto", cpu_threads=0, cpu_isa=None,
                 locked=False, from_env=False):
        self.handle = None  # set once attn_ctx_create succeeds
        o = lib.attn_ctx_opts_default()
        if from_env:
            _check(lib.attn_ctx_opts_from_env(ctypes.byref(o)))
        if workspace_limit:
            o.workspace_limit = workspace_limit
        if cache_capacity:
            o.cache_capacity = cache_capacity
        if cuda_graphs:
            o.cuda_graphs = 1
        if flash_kernel != "auto":
            o.flash_kernel = _choice(FLASH_KERNELS, flash_kernel, "flash_kernel")
        if cudnn_graph != "auto":
            o.cudnn_graph = _choice(CUDNN_GRAPHS, cudnn_graph, "cudnn_graph")
        if cpu_threads:
            o.cpu_threads = cpu_threads
        if cpu_isa is not None:
            o.cpu_isa = cpu_isa.encode()
        if locked:
            o.locked = 1
        handle = ctypes.c_void_p()
        _check(lib.attn_ctx_create(ctypes.byref(o), ctypes.byref(handle)))
        self.handle = handle.value
        self._destroy = lib.attn_ctx_destroy  # still reachable at interpreter exit

    def options(self):
        """The options the handle holds, as a dict."""
        o = lib.attn_ctx_options(self.handle).contents
        isa = o.cpu_isa.decode() if o.cpu_isa else None
        kernels = {v: k for k, v in FLASH_KERNELS.items()}
        graphs = {v: k for k, v in CUDNN_GRAPHS.items()}
        return {"workspace_limit": o.workspace_limit, "cache_capacity": o.cache_capacity,
                "cuda_graphs": bool(o.cuda_graphs), "flash_kernel": kernels[o.flash_kernel],
                "cudnn_graph": graphs[o.cudnn_graph], "cpu_threads": o.cpu_threads,
                "cpu_isa": isa, "locked": bool(o.locked)}

    def stats(self):
        """Cache entries, capacity, hits, misses, evictions; workspace bytes and limit."""
        st = CtxStats()
        lib.attn_ctx_stats_get(self.handle, ctypes.byref(st))
        return {name: getattr(st, name) for name, _ in CtxStats._fields_}

    def trim(self):
        """Frees scratch, workspaces and cached entries (after waiting for the device)."""
        lib.attn_ctx_trim(self.handle)

    def close(self):
        if self.handle:
            self._destroy(self.handle)
            self.handle = None

    def __del__(self):
        self.close()


def _choice(table, name, what):
    if name not in table:
        raise Error("invalid argument", "%s %r: accepted are %s" % (what, name, ", ".join(table)))
    return table[name]


_local = threading.local()


def engine():
    """This thread's engine: made on first use from the defaults and the
    ATTNPROF_* variables (attn_ctx_opts_from_env), kept for the thread."""
    e = getattr(_local, "engine", None)
    if e is None:
        e = _local.engine = Engine(from_env=True)
    return e


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
    tensor); stream a cudaStream_t as an int (torch: stream.cuda_stream);
    engine an Engine, or None for the calling thread's engine()."""

    def __init__(self, q, k, v, out, causal=None, scale=0.0, mask=None, mask_kind=None,
                 lse=None, stream=0, engine=None):
        a = Args()
        a.q, a.k, a.v, a.out = (_as_tensor(x) for x in (q, k, v, out))
        a.causal, a.scale = CAUSAL[causal], float(scale)
        if mask is not None:
            a.mask, a.mask_kind = _as_tensor(mask), MASK[mask_kind or "bool"]
        a.lse = lse if isinstance(lse, int) or lse is None else lse.data_ptr()
        a.stream = stream or None
        self.args = a
        self.engine = engine
        self._ref = ctypes.byref(a)
        self._codes = {}

    def _handle(self):
        return (self.engine or engine()).handle

    def _code(self, backend):
        code = self._codes.get(backend)
        if code is None:
            code = self._codes[backend] = backend_code(backend)
        return code

    def __call__(self, backend="auto"):
        _check(lib.attn_forward(self._handle(), self._code(backend), self._ref))

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
        _check(lib.attn_select(self._handle(), self._ref, ctypes.byref(picked), log, len(log)))
        return lib.attn_backend_name(picked.value).decode(), log.value.decode()

    def flops(self):
        return lib.attn_flops(self._ref)


def trim():
    """Frees what this thread's engine keeps between calls (device scratch,
    workspaces, cached plans and graphs)."""
    engine().trim()
