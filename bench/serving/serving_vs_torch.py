#!/usr/bin/env python3
"""Serving attention beside PyTorch's SDPA, in one process on the same tensors.

Decode (1 or a few new tokens per sequence against a long KV cache) and
packed variable-length prefill, bf16, D128, through attnprof's flash backend
(the split-KV decode kernel, src/attn/cuda/fused/decode_kernel.cuh):
  paged       K/V in a page pool + block table, three table layouts on the
              same pool: in order (page i of sequence b is pool page
              b * pages + i: the contiguous cache's addresses), shuffled
              within each 2 MiB (a page's neighbours in the table lie in the
              same 2 MiB region: the same address-translation reach as in
              order, random order inside it), shuffled over the whole pool
              (what a long-running server's allocator leaves). PyTorch has
              no paged SDPA: no torch column for these rows
  contiguous  K/V in a [B, KV, Hkv, D] cache; the same tensors go to
              torch SDPA FLASH / EFFICIENT / CUDNN (enable_gqa), the
              fastest of them is the ratio's denominator
  varlen      16 packed sequences of mixed lengths (64..8k), causal; beside
              our dense flash (and torch's) on B x mean length, same tokens
  cudnn rows  the cudnn backend's paged decode (cuDNN's paged-cache graph) and
              our flash on the SAME shuffled table, both on an in-order table,
              and cuDNN on the contiguous cache (--cudnn-only: just these)
Timing (device time, the same for both sides): each call, ours through
ctypes and torch's F.scaled_dot_product_attention alike, is captured GRAPH_N
times into one CUDA graph on a side stream; CUDA events around each replay,
median over --reps replays, divided by GRAPH_N. No host work lies between the
calls, so neither Python's per-call cost nor a launch queue running dry can
enter a figure (runs 1-8 timed one call at a time with events around it:
host-bound below ~30 us, docs/design/decode.md). A call that cannot be captured is timed
by its kernels' summed device time from torch.profiler and marked "*".
Timed per call (events around each): the checked-table path (a host copy per
call), the packed prefill (ms per call; captured, its side streams would run
serially), and the 4 GiB copy and reductions of the roofs (ms per call; a
captured copy runs on a copy engine, ~2.7 TB/s against 4.3 as a kernel). Tables
are passed trusted (attn_seqs.trusted with max_q/max_kv): a serving engine
builds them itself; the checked path adds a host copy per call.
GB/s = bytes (Q, K and V rows each sequence sees, O, tables) / time; the
copy bandwidth is measured in the same run by a 4 GiB device-to-device copy
(torch copy_ = cudaMemcpyAsync D2D), counted as bytes read + written.
The read roof: bench_read_bw (bench/serving/read_bw.cu, --read-bw), a
kernel that only streams 4 GiB in, bytes read per second; beside it the
fastest of torch's full reductions (sum of a float32 view, amax of a bf16
view) over the same 4 GiB. The larger is the ceiling of a kernel that reads
its K/V once.
The floor (--table): on the same buffers and timed the same way (graph replay,
where K/V of a few MB stay in L2 between calls, so bytes / copy rate is not
the floor there), the fastest of two plain kernels that read Q, K, V and write
O (bench/serving/floor.cu, libbench_floor.so); beside it the K/V read alone
and an empty kernel. The table gives what 1.5x torch's fastest needs against it.
On three rows (0, 4, 5) the contiguous cell is timed again at the end of its
row, after the paged layouts and torch: the same call on the same tensors,
first and last.
Before timing, each of our outputs is compared with torch's (rel. error).

  python3 bench/serving/serving_vs_torch.py --lib build-gpu/lib/libattnprof.so
"""
import argparse
import ctypes as C
import os
import re
import statistics
import subprocess
import sys
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_setup import median_us  # noqa: E402

DT_BF16, BACKEND_FLASH = 2, 5
CAUSAL_NONE, CAUSAL_BR = 0, 2


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("dtype", C.c_int), ("device", C.c_int),
                ("shape", C.c_int64 * 4), ("strides", C.c_int64 * 4)]


class Seqs(C.Structure):
    _fields_ = [("batch", C.c_int64), ("q_offsets", C.c_void_p), ("kv_offsets", C.c_void_p),
                ("kv_lens", C.c_void_p), ("block_table", C.c_void_p), ("max_pages", C.c_int64),
                ("table_stride", C.c_int64), ("trusted", C.c_int), ("max_q", C.c_int64),
                ("max_kv", C.c_int64)]


class Args(C.Structure):
    _fields_ = [("q", Tensor), ("k", Tensor), ("v", Tensor), ("out", Tensor),
                ("causal", C.c_int), ("scale", C.c_double), ("mask_kind", C.c_int),
                ("mask", Tensor), ("lse", C.c_void_p), ("stream", C.c_void_p),
                ("seqs", C.POINTER(Seqs))]


def tensor(t, shape, strides):
    return Tensor(t.data_ptr(), DT_BF16, t.device.index or 0, (C.c_int64 * 4)(*shape),
                  (C.c_int64 * 4)(*strides))


def bhsd_of_bshd(t):
    """A [B, S, H, D] tensor as attn_tensor {B, H, S, D}."""
    b, s, h, d = t.shape
    return tensor(t, (b, h, s, d), (s * h * d, d, h * d, 1))


GRAPH_N = 20  # calls per captured graph


def graph_us(fn, reps, args=None):
    """Device time of fn() per call, in us (the module docstring's Timing):
    GRAPH_N calls captured in one CUDA graph, events around each replay.
    args: our ctypes Args, pointed at the capture stream while captured.
    Falls back to kernel_us (marked by a negative value) when capture fails."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    if args is not None:
        args.stream = s.cuda_stream
    try:
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        s.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            for _ in range(GRAPH_N):
                fn()
    except Exception:
        torch.cuda.synchronize()
        if args is not None:
            args.stream = None
        return -kernel_us(fn, reps)
    finally:
        if args is not None:
            args.stream = None
    g.replay()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for a, b in ev:
        a.record()
        g.replay()
        b.record()
    torch.cuda.synchronize()
    us = statistics.median(a.elapsed_time(b) * 1e3 / GRAPH_N for a, b in ev)
    del g
    return us


def kernel_us(fn, reps, names=None):
    """Summed device time of the kernels (and copies) fn() launches, per call,
    from torch.profiler; names: a dict that gets each kernel's us per call."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for e in prof.key_averages():
        t = getattr(e, "self_device_time_total", None)
        t = e.self_cuda_time_total if t is None else t
        if t > 0:
            total += t
            if names is not None:
                names[e.key] = t / reps
    return total / reps


def us_str(us):
    """A graph_us figure; '*' when it came from the profiler's kernel sum."""
    return f"{abs(us):.1f}{'*' if us < 0 else ''}" if us else "n/a"


def copy_bandwidth(reps):
    n = 4 << 30
    x = torch.empty(n, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    us = median_us(lambda: y.copy_(x), reps)  # per call: a 4 GiB copy is ms, and
    del x, y  # captured it runs on a copy engine at ~2.7 TB/s (run 9), not as a kernel
    return 2 * n / (us * 1e-6)


def read_bandwidth(reps):
    """Bytes read per second by the fastest of two torch full reductions over 4 GiB."""
    n = 4 << 30
    x = torch.empty(n, dtype=torch.uint8, device="cuda")
    x.fill_(0)
    f, h = x.view(torch.float32), x.view(torch.bfloat16)
    us = min(median_us(lambda: f.sum(), reps), median_us(lambda: h.amax(), reps))
    del x, f, h
    return n / (us * 1e-6)


def page_order(kind, n, group, gen):
    """Pool page of each table slot: in order, shuffled within groups of
    `group` pages (2 MiB), or shuffled over the whole pool."""
    if kind == "in-order":
        return torch.arange(n, device="cuda", dtype=torch.int32)
    if kind == "shuffled":
        return torch.randperm(n, device="cuda", generator=gen).to(torch.int32)
    g = max(1, min(group, n))
    while n % g:
        g -= 1
    r = torch.rand(n // g, g, device="cuda", generator=gen).argsort(dim=1)
    base = torch.arange(0, n, g, device="cuda").unsqueeze(1)
    return (r + base).reshape(-1).to(torch.int32)


LAYOUTS = ("in-order", "2MiB-shuffled", "shuffled")


class Lib:
    def __init__(self, path):
        self.lib = C.CDLL(path)
        self.lib.attn_ctx_create.argtypes = [C.c_void_p, C.POINTER(C.c_void_p)]
        self.lib.attn_forward.argtypes = [C.c_void_p, C.c_int, C.POINTER(Args)]
        self.lib.attn_last_error.restype = C.c_char_p
        self.ctx = C.c_void_p()
        if self.lib.attn_ctx_create(None, C.byref(self.ctx)):
            raise RuntimeError(self.lib.attn_last_error().decode())
        # the split count is internal (not exported by a hidden-visibility build)
        self.splits = getattr(self.lib, "attn_decode_cuda_splits", None)
        if self.splits:
            self.splits.argtypes = [C.c_void_p, C.POINTER(Args), C.POINTER(C.c_int)]

    def split_count(self, args):
        """The split count as text, "16c" when the splits run as one cluster
        kernel (decode_cluster.cuh), "-1" when unknown."""
        if not self.splits:
            return "-1"
        cl = C.c_int(0)
        n = self.splits(self.ctx, C.byref(args), C.byref(cl))
        return f"{n}{'c' if cl.value else ''}"

    def call(self, args):
        def run():
            rc = self.lib.attn_forward(self.ctx, BACKEND_FLASH, C.byref(args))
            if rc:
                raise RuntimeError(self.lib.attn_last_error().decode())
        return run


class Floor:
    """The floor kernels (bench/serving/floor.cu, libbench_floor.so beside
    the library), each graph-timed like an attention call: the fastest of two
    shapes (2 or 8 loads per thread) reading K and V; the same reading Q, K,
    V and writing O; an empty kernel. us figures, None when not loadable."""
    def __init__(self, path):
        try:
            self.lib = C.CDLL(path)
        except OSError as e:
            print(f"floor kernels not loaded ({e}): no floor columns", flush=True)
            self.lib = None
            return
        vp, sz = C.c_void_p, C.c_size_t
        self.lib.floor_read.argtypes = [vp, sz, vp, sz, vp, C.c_int, vp]
        self.lib.floor_rw.argtypes = [vp, vp, sz, vp, sz, vp, sz, vp, C.c_int, vp]
        self.lib.floor_empty.argtypes = [vp]
        self.sink = torch.zeros(1, dtype=torch.int32, device="cuda")

    def times(self, q, o, k, v, reps):
        if not self.lib:
            return None
        L, st = self.lib, lambda: torch.cuda.current_stream().cuda_stream
        nb = lambda t: t.numel() * t.element_size()
        sk = self.sink.data_ptr()
        def ok(rc):
            if rc:
                raise RuntimeError("a floor kernel failed to launch")
        def read(u):
            return lambda: ok(L.floor_read(k.data_ptr(), nb(k), v.data_ptr(), nb(v), sk, u, st()))
        def rw(u):
            return lambda: ok(L.floor_rw(q.data_ptr(), o.data_ptr(), nb(q), k.data_ptr(), nb(k),
                                         v.data_ptr(), nb(v), sk, u, st()))
        kv = min(abs(graph_us(read(u), reps)) for u in (2, 8))
        qkvo = min(abs(graph_us(rw(u), reps)) for u in (2, 8))
        return kv, qkvo, abs(graph_us(lambda: ok(L.floor_empty(st())), reps))


def decode_reference(qt, kt, vt, new):
    """The bottom-right causal mask (None for one new token) and torch's output on
    [B, H, S, D] views, by the math backend where it fits, else flash."""
    B, hq, kv = qt.shape[0], qt.shape[1], kt.shape[2]
    mask = None
    if new > 1:
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(new, kv)
    with sdpa_kernel(SDPBackend.MATH if B * kv * hq <= (1 << 22) else SDPBackend.FLASH_ATTENTION):
        return mask, F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, enable_gqa=True)


def torch_backends(q, k, v, causal_br, reps, want):
    """Times torch SDPA backends on [B, H, S, D] views; returns {name: us}, errors."""
    res = {}
    mask = None
    if causal_br and q.shape[2] > 1:
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(q.shape[2], k.shape[2])
    for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                     ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        def run():
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        try:
            out = run()
            torch.cuda.synchronize()
            err = ((out.float() - want.float()).norm() / want.float().norm()).item()
            if not err < 2e-2:
                res[name] = f"err {err:.2g}"
                continue
            res[name] = graph_us(run, reps)
        except Exception as e:  # a backend that refuses the problem
            res[name] = "n/a: " + str(e).split("\n")[0][:60]
    return res


def decode_row(lib, B, kv, hq, hkv, new, ps, reps, bw, rbw, retime=False):
    d = 128
    g = torch.Generator(device="cuda").manual_seed(B * 7 + kv)
    q = torch.randn(B, new, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    o = torch.full_like(q, float("nan"))
    causal = CAUSAL_BR if new > 1 else CAUSAL_NONE
    # contiguous cache [B, KV, Hkv, D]
    kc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    vc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    lens = torch.full((B,), kv, dtype=torch.int32, device="cuda")
    seqs_c = Seqs(B, None, None, lens.data_ptr(), None, 0, 0, 1, new, kv)
    a_c = Args(bhsd_of_bshd(q), bhsd_of_bshd(kc), bhsd_of_bshd(vc), bhsd_of_bshd(o), causal,
               0.0, 0, Tensor(), None, None, C.pointer(seqs_c))
    # paged: the same keys copied into a pool, one table per layout
    per = kv // ps
    page_bytes = ps * hkv * d * 2
    kp = torch.empty(B * per, ps, hkv, d, device="cuda", dtype=torch.bfloat16)
    vp = torch.empty_like(kp)
    pool = lambda t: tensor(t, (t.shape[0], hkv, ps, d), (ps * hkv * d, d, hkv * d, 1))
    op = torch.full_like(q, float("nan"))
    qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)
    ref = decode_reference(qt, kt, vt, new)[1]
    nbytes = 2 * q.numel() * 2 + 2 * kc.numel() * 2 + 4 * B
    pbytes = nbytes + B * per * 4

    def measure(a, oo):
        lib.call(a)()
        torch.cuda.synchronize()
        err = ((oo.transpose(1, 2).float() - ref.float()).norm() / ref.float().norm()).item()
        return (abs(graph_us(lib.call(a), reps, a)) if err < 2e-2 else None), err

    frac = lambda us, by: by / (us * 1e-6) / bw if us else float("nan")
    name = f"B={B} KV={kv // 1024}k {hq}/{hkv} new={new} page={ps}"
    us_c, err_c = measure(a_c, o)
    sc = lib.split_count(a_c)
    cells, errs = [], [err_c]
    for kind in LAYOUTS:
        table = page_order(kind, B * per, (2 << 20) // page_bytes, g).view(B, per).contiguous()
        kp[table.view(-1).long()] = kc.view(B * per, ps, hkv, d)
        vp[table.view(-1).long()] = vc.view(B * per, ps, hkv, d)
        seqs_p = Seqs(B, None, None, lens.data_ptr(), table.data_ptr(), per, 0, 1, new, kv)
        a_p = Args(bhsd_of_bshd(q), pool(kp), pool(vp), bhsd_of_bshd(op), causal, 0.0, 0,
                   Tensor(), None, None, C.pointer(seqs_p))
        op.fill_(float("nan"))
        us_p, err_p = measure(a_p, op)
        errs.append(err_p)
        cells.append(f"{kind} {us_p or 0:7.1f} {frac(us_p, pbytes):6.1%}")
    seqs_p.trusted = 0  # the checked path: the tables copied to the host and checked per call
    us_checked = median_us(lib.call(a_p), reps)
    seqs_p.trusted = 1
    tb = torch_backends(qt, kt, vt, new > 1, reps, ref)
    fast = min((abs(v) for v in tb.values() if isinstance(v, float)), default=None)
    tcol = "  ".join(f"{k}={us_str(v)}" if isinstance(v, float) else f"{k}={v.split(':')[0]}"
                     for k, v in tb.items())
    ratio = f"{fast / us_c:5.2f}x" if fast and us_c else "  -  "
    troof = (f" | torch fastest reads {nbytes / (fast * 1e-6) / 1e12:.2f} TB/s = "
             f"{nbytes / (fast * 1e-6) / rbw:.1%} of the read roof; 1.5x it would need "
             f"{1.5 * nbytes / (fast * 1e-6) / 1e12:.2f} TB/s" if fast and new == 1 else "")
    print(f"{name:34s} paged: {' | '.join(cells)} | contiguous "
          f"{us_c or 0:7.1f} {frac(us_c, nbytes):6.1%}{f' s={sc}' if sc != '-1' else ''} | vs torch fastest {ratio} | "
          f"torch us: {tcol} | paged checked (per call) {us_checked:.1f} us | worst err {max(errs):.1e}"
          f"{troof}", flush=True)
    if retime:  # the contiguous cell once more, last in its row: same tensors, same call
        u = measure(a_c, o)[0]
        print(f"  contiguous timed first {us_c or 0:7.1f} us {frac(us_c, nbytes):6.1%} | again, "
              f"last in the row {u or 0:7.1f} us {frac(u, nbytes):6.1%}", flush=True)
    del kc, vc, kp, vp
    torch.cuda.empty_cache()


BACKEND_CUDNN = 6


def cudnn_paged_row(lib, B, kv, hq, hkv, new, ps, reps, bw):
    """cuDNN's paged decode (the cudnn backend's paged-cache graph) beside our flash on the
    SAME shuffled table, and cuDNN on an in-order table and on the contiguous cache: what
    page order costs each. bf16, D128, tables trusted; outputs checked against torch first."""
    d = 128
    g = torch.Generator(device="cuda").manual_seed(B * 11 + kv)
    q = torch.randn(B, new, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    kc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    vc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    lens = torch.full((B,), kv, dtype=torch.int32, device="cuda")
    causal = CAUSAL_BR if new > 1 else CAUSAL_NONE
    per = kv // ps
    shuffled = torch.randperm(B * per, device="cuda", generator=g).to(torch.int32).view(B, per)
    in_order = torch.arange(B * per, device="cuda", dtype=torch.int32).view(B, per)
    pool = lambda t: tensor(t, (t.shape[0], hkv, ps, d), (ps * hkv * d, d, hkv * d, 1))
    mask = None
    if new > 1:
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(new, kv)
    qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)
    with sdpa_kernel(SDPBackend.MATH if B * kv * hq <= (1 << 22) else SDPBackend.FLASH_ATTENTION):
        ref = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, enable_gqa=True)
    keep = []  # ctypes structures and tensors the Args point at

    def case(table):
        o = torch.full_like(q, float("nan"))
        if table is None:
            sq = Seqs(B, None, None, lens.data_ptr(), None, 0, 0, 1, new, kv)
            a = Args(bhsd_of_bshd(q), bhsd_of_bshd(kc), bhsd_of_bshd(vc), bhsd_of_bshd(o),
                     causal, 0.0, 0, Tensor(), None, None, C.pointer(sq))
            keep.append((sq, o))
            return a, o
        kp = torch.empty(B * per, ps, hkv, d, device="cuda", dtype=torch.bfloat16)
        vp = torch.empty_like(kp)
        kp[table.reshape(-1).long()] = kc.reshape(B * per, ps, hkv, d)
        vp[table.reshape(-1).long()] = vc.reshape(B * per, ps, hkv, d)
        sq = Seqs(B, None, None, lens.data_ptr(), table.data_ptr(), per, 0, 1, new, kv)
        a = Args(bhsd_of_bshd(q), pool(kp), pool(vp), bhsd_of_bshd(o), causal, 0.0, 0, Tensor(),
                 None, None, C.pointer(sq))
        keep.append((sq, o, kp, vp))
        return a, o

    def timed(backend, a, o):
        def run():
            rc = lib.lib.attn_forward(lib.ctx, backend, C.byref(a))
            if rc:
                raise RuntimeError(lib.lib.attn_last_error().decode())
        try:
            run()
            torch.cuda.synchronize()
        except RuntimeError as e:
            return None, str(e)[:160]
        err = ((o.transpose(1, 2).float() - ref.float()).norm() / ref.float().norm()).item()
        return (abs(graph_us(run, reps, a)), f"{err:.1e}") if err < 2e-2 else (None, f"err {err:.2g}")

    nbytes = 2 * q.numel() * 2 + 2 * kc.numel() * 2 + 4 * B
    pbytes = nbytes + B * per * 4
    res = []
    for label, backend, table, by in (("flash shuffled", BACKEND_FLASH, shuffled, pbytes),
                                      ("flash in-order", BACKEND_FLASH, in_order, pbytes),
                                      ("cudnn shuffled", BACKEND_CUDNN, shuffled, pbytes),
                                      ("cudnn in-order", BACKEND_CUDNN, in_order, pbytes),
                                      ("cudnn contiguous", BACKEND_CUDNN, None, nbytes)):
        a, o = case(table)
        us, note = timed(backend, a, o)
        res.append(f"{label} " + (f"{us:8.1f} us {by / us * 1e-3:5.0f} GB/s "
                                  f"{by / (us * 1e-6) / bw:6.1%}" if us else f"({note})"))
    name = f"B={B} KV={kv // 1024}k {hq}/{hkv} new={new} page={ps}"
    print(f"{name:34s} " + " | ".join(res), flush=True)
    del keep, kc, vc
    torch.cuda.empty_cache()


def cudnn_rows(lib, reps, bw, quick):
    print("cuDNN paged decode (cudnn backend; flash on the same shuffled table for reference):")
    rows = [(16, 32768, 32, 8, 1, 16), (16, 32768, 32, 8, 1, 64), (128, 8192, 64, 8, 1, 16),
            (1, 131072, 32, 8, 1, 16), (16, 32768, 32, 8, 8, 16), (1, 2048, 32, 8, 1, 16)]
    for r in rows[:2] if quick else rows:
        try:
            cudnn_paged_row(lib, *r, reps, bw)
        except Exception as e:
            print(f"cudnn row {r}: {e}", flush=True)


def varlen_row(lib, reps):
    """16 packed causal sequences, 64..8k tokens, Hq=Hkv=16, D128; against dense flash
    (ours and torch's) on B=16 x mean length (same number of tokens)."""
    d, h = 128, 16
    g = torch.Generator().manual_seed(5)
    lens = [64, 8192] + [int(x) for x in torch.randint(64, 8193, (14,), generator=g)]
    total = sum(lens)
    off = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device="cuda")
    q = torch.randn(total, h, d, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    o = torch.full_like(q, float("nan"))
    packed = lambda t: tensor(t, (1, h, total, d), (total * h * d, d, h * d, 1))
    seqs = Seqs(16, off.data_ptr(), off.data_ptr(), None, None, 0, 0, 1, max(lens), max(lens))
    a = Args(packed(q), packed(k), packed(v), packed(o), CAUSAL_BR, 0.0, 0, Tensor(), None, None,
             C.pointer(seqs))
    lib.call(a)()
    torch.cuda.synchronize()
    worst = 0.0
    for i in range(16):  # each sequence against torch's flash on it alone
        s, e = off[i].item(), off[i + 1].item()
        qi, ki, vi = (t[s:e].transpose(0, 1).unsqueeze(0) for t in (q, k, v))
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            r = F.scaled_dot_product_attention(qi, ki, vi, is_causal=True)
        oi = o[s:e].transpose(0, 1).unsqueeze(0)
        worst = max(worst, ((oi.float() - r.float()).norm() / r.float().norm()).item())
    flops = sum(2.0 * h * d * n * (n + 1) for n in lens)
    us = median_us(lib.call(a), reps) if worst < 2e-2 else None
    mean = total // 16
    qd = torch.randn(16, h, mean, d, device="cuda", dtype=torch.bfloat16)
    kd, vd = torch.randn_like(qd), torch.randn_like(qd)
    od = torch.empty_like(qd)
    bh = lambda t: tensor(t, t.shape, t.stride())
    ad = Args(bh(qd), bh(kd), bh(vd), bh(od), 1, 0.0, 0, Tensor(), None, None, None)
    us_d = median_us(lib.call(ad), reps)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        us_t = median_us(lambda: F.scaled_dot_product_attention(qd, kd, vd, is_causal=True), reps)
    fd = 16 * 2.0 * h * d * mean * (mean + 1)
    tf = lambda f, u: f / (u * 1e-6) / 1e12 if u else float("nan")
    print(f"varlen 16 seqs 64..8k (total {total}) causal H=16 D128: ours {tf(flops, us):6.1f} "
          f"TFLOP/s ({us or 0:.0f} us, err {worst:.1e}) | dense 16x{mean}: ours flash "
          f"{tf(fd, us_d):6.1f}, torch flash {tf(fd, us_t):6.1f} TFLOP/s | varlen/dense "
          f"{tf(flops, us) / tf(fd, us_d):.2f}", flush=True)


DECODE_PAGE = 16  # decode_paged's page size


def decode_cell(B, kv, hq, hkv, d):
    """One new token against a contiguous cache of kv keys, bf16: (generator,
    q, k, v, out (NaN), kv_lens, Args); the Args keep their Seqs alive."""
    g = torch.Generator(device="cuda").manual_seed(B * 13 + kv)
    q = torch.randn(B, 1, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
    kc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    vc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
    o = torch.full_like(q, float("nan"))
    lens = torch.full((B,), kv, dtype=torch.int32, device="cuda")
    seqs = Seqs(B, None, None, lens.data_ptr(), None, 0, 0, 1, 1, kv)
    a = Args(bhsd_of_bshd(q), bhsd_of_bshd(kc), bhsd_of_bshd(vc), bhsd_of_bshd(o), 0, 0.0,
             0, Tensor(), None, None, C.pointer(seqs))
    return g, q, kc, vc, o, lens, a


def decode_paged(q, kc, vc, o, lens, g):
    """decode_cell's keys copied into pages of DECODE_PAGE on a shuffled table:
    (Args, k pool, v pool, table), the tensors to keep alive with the Args."""
    B, kv, hkv, d = kc.shape
    ps, per = DECODE_PAGE, kv // DECODE_PAGE
    table = page_order("shuffled", B * per, 1, g).view(B, per).contiguous()
    kp = torch.empty(B * per, ps, hkv, d, device="cuda", dtype=torch.bfloat16)
    vp = torch.empty_like(kp)
    kp[table.view(-1).long()] = kc.view(B * per, ps, hkv, d)
    vp[table.view(-1).long()] = vc.view(B * per, ps, hkv, d)
    pool = lambda t: tensor(t, (t.shape[0], hkv, ps, d), (ps * hkv * d, d, hkv * d, 1))
    seqs_p = Seqs(B, None, None, lens.data_ptr(), table.data_ptr(), per, 0, 1, 1, kv)
    a_p = Args(bhsd_of_bshd(q), pool(kp), pool(vp), bhsd_of_bshd(o), 0, 0.0, 0,
               Tensor(), None, None, C.pointer(seqs_p))
    return a_p, kp, vp, table


ROWS = [(16, 32768, 32, 8, 1, 16), (16, 32768, 64, 8, 1, 64), (64, 8192, 32, 8, 1, 16),
        (128, 8192, 64, 8, 1, 16), (1, 131072, 32, 8, 1, 16), (1, 131072, 64, 8, 1, 64),
        (16, 32768, 32, 8, 8, 16), (16, 32768, 32, 8, 16, 16), (1, 2048, 32, 8, 1, 16),
        (16, 1024, 32, 8, 1, 16)]


def ratio_table(lib, reps, bw, floor, pick=()):
    """Contiguous decode, ours against each torch SDPA backend on the same
    tensors, every decode row; all graph-timed (graph_us). Then what 1.5x
    torch's fastest needs, and the floor (Floor) on the same buffers: the
    read of Q, K, V and write of O alone, with the K/V read alone and an
    empty kernel beside it. Last, the old per-call figure (events around one
    call, host work included) for ours and torch's fastest."""
    print(f"Contiguous decode vs PyTorch SDPA (enable_gqa=True as PyTorch handles it), bf16, "
          f"D128, device time: {GRAPH_N} calls per CUDA graph, events around each replay, "
          f"median of {reps}; '*' = kernels' sum from torch.profiler (graph capture failed)")
    print("floor = the fastest kernel that only reads this cell's Q, K, V and writes its O, "
          "timed the same way (bench/serving/floor.cu); K/V read and empty kernel beside it")
    print(f"| problem | ours us | torch flash | torch efficient | torch cudnn | ours vs "
          f"torch's fastest | 1.5x torch needs (us) | floor (us) | K/V read / empty (us) | "
          f"1.5x vs floor | ours / torch fastest per-call events (host included) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    d = 128
    for i, (B, kv, hq, hkv, new, _) in enumerate(ROWS):
        if pick and i not in pick:
            continue
        g = torch.Generator(device="cuda").manual_seed(B * 7 + kv)
        q = torch.randn(B, new, hq, d, device="cuda", dtype=torch.bfloat16, generator=g)
        kc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        vc = torch.randn(B, kv, hkv, d, device="cuda", dtype=torch.bfloat16, generator=g)
        o = torch.full_like(q, float("nan"))
        lens = torch.full((B,), kv, dtype=torch.int32, device="cuda")
        causal = CAUSAL_BR if new > 1 else CAUSAL_NONE
        seqs = Seqs(B, None, None, lens.data_ptr(), None, 0, 0, 1, new, kv)
        a = Args(bhsd_of_bshd(q), bhsd_of_bshd(kc), bhsd_of_bshd(vc), bhsd_of_bshd(o), causal,
                 0.0, 0, Tensor(), None, None, C.pointer(seqs))
        qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)
        mask, ref = decode_reference(qt, kt, vt, new)
        lib.call(a)()
        torch.cuda.synchronize()
        err = ((o.transpose(1, 2).float() - ref.float()).norm() / ref.float().norm()).item()
        us = graph_us(lib.call(a), reps, a) if err < 2e-2 else None
        us_ev = median_us(lib.call(a), reps) if err < 2e-2 else None
        tb = torch_backends(qt, kt, vt, new > 1, reps, ref)
        fl = {k: abs(v) for k, v in tb.items() if isinstance(v, float)}
        fast = min(fl.values(), default=None)
        fname = min(fl, key=fl.get) if fl else None
        ev_fast = None
        if fname:
            be = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                  "cudnn": SDPBackend.CUDNN_ATTENTION}[fname]
            def run_fast():
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, enable_gqa=True)
            ev_fast = median_us(run_fast, reps)
        fo = torch.empty_like(q)
        ft = floor.times(q, fo, kc, vc, reps)
        need = fast / 1.5 if fast else None
        cols = [us_str(tb[k]) if isinstance(tb[k], float) else tb[k].split(":")[0]
                for k in ("flash", "efficient", "cudnn")]
        ratio = f"{fast / abs(us):.2f}x" if fast and us else "-"
        verdict = "-" if not (ft and need) else ("below the floor" if need < ft[1] else
                                                 f"{need / ft[1]:.2f}x the floor")
        fcols = (f"{ft[1]:.1f} | {ft[0]:.1f} / {ft[2]:.1f}" if ft else "n/a | n/a")
        name = f"B={B} KV={kv // 1024}k {hq}/{hkv} new={new}"
        print(f"| {name} | {us_str(us)} (err {err:.1e}) | {' | '.join(cols)} | {ratio} "
              f"({fname}) | {need or 0:.1f} | {fcols} | {verdict} | "
              f"{us_ev or 0:.1f} / {ev_fast or 0:.1f} |", flush=True)
        del kc, vc, fo
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--read-bw", help="bench_read_bw, the read-only streaming kernel")
    ap.add_argument("--cudnn-only", action="store_true", help="only the cuDNN paged rows")
    ap.add_argument("--rows", default="",
                    help="only these decode rows (comma list of their indexes, 0-9): no cuDNN "
                         "rows, no varlen; with --table, only these rows of the table")
    ap.add_argument("--table", action="store_true",
                    help="only the contiguous ratio table against torch (every decode row)")
    ap.add_argument("--floor-lib", help="the floor kernels (default: libbench_floor.so beside --lib)")
    opt = ap.parse_args()
    warnings.filterwarnings("ignore")  # torch's why-not-this-kernel warnings: the table says it
    lib = Lib(opt.lib)
    bw = copy_bandwidth(opt.reps)
    if opt.table:
        print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; "
              f"D2D copy (4 GiB, read+write) {bw / 1e9:.0f} GB/s")
        floor = Floor(opt.floor_lib or os.path.join(os.path.dirname(os.path.abspath(opt.lib)),
                                                    "libbench_floor.so"))
        ratio_table(lib, opt.reps, bw, floor, [int(x) for x in opt.rows.split(",") if x])
        return
    tbw = read_bandwidth(opt.reps)
    kbw = 0.0
    if opt.read_bw:
        res = subprocess.run([opt.read_bw, "4", str(opt.reps)], capture_output=True, text=True)
        m = re.search(r"([0-9.]+) GB/s", res.stdout)
        kbw = float(m.group(1)) * 1e9 if m else 0.0
        print(res.stdout.strip() or res.stderr.strip())
    rbw = max(tbw, kbw)
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; bf16, D128; "
          f"median of {opt.reps}; D2D copy (4 GiB, read+write) {bw / 1e9:.0f} GB/s; read roof "
          f"{rbw / 1e9:.0f} GB/s = {rbw / bw:.2f}x copy (read kernel {kbw / 1e9:.0f}, fastest "
          f"torch reduction {tbw / 1e9:.0f} GB/s, bytes read)")
    print("columns: us, fraction of the copy bandwidth; s=splits; torch has no paged SDPA")
    rows = ROWS
    pick = [int(x) for x in opt.rows.split(",") if x]
    if opt.quick:
        rows = rows[:1] + rows[4:5] + rows[6:7]
    if not pick:
        cudnn_rows(lib, opt.reps, bw, opt.quick)
    for i, r in enumerate(rows if not opt.cudnn_only else []):
        if pick and i not in pick:
            continue
        try:
            decode_row(lib, *r, opt.reps, bw, rbw, retime=i in (0, 4, 5))
        except Exception as e:
            print(f"row {r}: {e}", flush=True)
    try:
        if not opt.cudnn_only and not pick:
            varlen_row(lib, opt.reps)
    except Exception as e:
        print(f"varlen: {e}", flush=True)


if __name__ == "__main__":
    main()
