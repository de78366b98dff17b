"""Engine handles (attn_ctx): an Engine made with explicit options, or this
thread's own engine (engine(), one per thread as the C API's thread rule
asks, made from the defaults and the ATTNPROF_* variables that
attn_ctx_opts_from_env reads)."""

import ctypes
import threading

from ._capi import CUDNN_GRAPHS, FLASH_KERNELS, CtxStats, lib


def _check(st, make_error):
    if st:
        raise make_error(st)


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
        from . import _raise
        self.handle = None  # set once attn_ctx_create succeeds
        o = lib.attn_ctx_opts_default()
        if from_env and lib.attn_ctx_opts_from_env(ctypes.byref(o)):
            _raise(1)
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
        st = lib.attn_ctx_create(ctypes.byref(o), ctypes.byref(handle))
        if st:
            _raise(st)
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
        from . import InputError
        raise InputError("invalid argument",
                         "%s %r: accepted are %s" % (what, name, ", ".join(table)))
    return table[name]


_local = threading.local()


def engine():
    """This thread's engine: made on first use from the defaults and the
    ATTNPROF_* variables (attn_ctx_opts_from_env), kept for the thread."""
    e = getattr(_local, "engine", None)
    if e is None:
        e = _local.engine = Engine(from_env=True)
    return e
