#!/usr/bin/env python3
"""The ctypes binding (python/attnprof) against the library, on the CPU: the
argument struct reaches C intact (a computed forward matches a pure-Python
attention over the same numbers, for contiguous and [B, S, H, D] strides),
the backend list, refusals raise attnprof.Error with the reason; the engine
handle: options reach C field for field (read back through attn_ctx_options),
bad options are refused, each thread gets its own engine, a locked engine is
shared by threads, AUTO's pick. Needs no GPU and no numpy. Run by ctest
with ATTNPROF_LIB set to the built library."""

import ctypes
import math
import random
import sys
import threading

import attnprof


def buffer(values):
    return (ctypes.c_float * len(values))(*values)


def reference(q, k, v, b, h, s, d, idx, causal):
    """softmax(q k^T / sqrt(d)) v in double; idx(b, h, s, d) -> flat index."""
    out = {}
    for bb in range(b):
        for hh in range(h):
            for i in range(s):
                sc = []
                for j in range(s):
                    if causal and j > i:
                        continue
                    dot = sum(q[idx(bb, hh, i, c)] * k[idx(bb, hh, j, c)] for c in range(d))
                    sc.append((j, dot / math.sqrt(d)))
                m = max(x for _, x in sc)
                w = [(j, math.exp(x - m)) for j, x in sc]
                tot = sum(x for _, x in w)
                for c in range(d):
                    out[(bb, hh, i, c)] = sum(x * v[idx(bb, hh, j, c)] for j, x in w) / tot
    return out


def check_layout(bshd, backend, engine=None, seed=7):
    b, h, s, d = 2, 3, 5, 4
    if bshd:
        strides = (s * h * d, d, h * d, 1)
    else:
        strides = (h * s * d, s * d, d, 1)
    idx = lambda bb, hh, i, c: bb * strides[0] + hh * strides[1] + i * strides[2] + c
    n = b * h * s * d
    rnd = random.Random(seed)
    q, k, v = ([rnd.uniform(-1, 1) for _ in range(n)] for _ in range(3))
    bufs = [buffer(x) for x in (q, k, v, [float("nan")] * n)]
    ts = [attnprof.tensor(ctypes.addressof(x), (b, h, s, d), strides, "f32", attnprof.DEVICE_CPU)
          for x in bufs]
    call = attnprof.Call(*ts, causal="top-left", engine=engine)
    assert call.why_not(backend) is None, call.why_not(backend)
    call(backend)
    want = reference(q, k, v, b, h, s, d, idx, True)
    err = max(abs(bufs[3][idx(*key)] - val) for key, val in want.items())
    # fp32 sums over 5 keys and 4 dims plus exp: a few unit roundoffs u = 2^-24
    # of values below 1; bound 16u (absolute) for margin.
    assert err <= 16 * 2.0 ** -24, "%s %s: max error %g (%.1fu)" % (
        backend, "bshd" if bshd else "bhsd", err, err / 2.0 ** -24)
    assert abs(call.flops() - 4.0 * b * h * s * s * d / 2) < 1e-9, call.flops()


def check_engine_options():
    e = attnprof.Engine(workspace_limit=1 << 20, cache_capacity=7, cuda_graphs=True,
                        flash_kernel="ws", cudnn_graph="node", cpu_threads=1, cpu_isa="portable",
                        locked=True)
    want = {"workspace_limit": 1 << 20, "cache_capacity": 7, "cuda_graphs": True,
            "flash_kernel": "ws", "cudnn_graph": "node", "cpu_threads": 1,
            "cpu_isa": "portable", "locked": True}
    assert e.options() == want, e.options()
    st = e.stats()
    assert st["cache_capacity"] == 7 and st["workspace_limit"] == 1 << 20, st
    assert st["cache_hits"] == st["cache_misses"] == st["cache_evictions"] == 0, st
    e.trim()
    e.close()
    assert attnprof.Engine().options()["cache_capacity"] == 64
    for bad in ({"cpu_threads": -1}, {"flash_kernel": "fastest"}):
        try:
            attnprof.Engine(**bad)
            raise AssertionError("Engine(%r) was accepted" % bad)
        except attnprof.Error as err:
            assert err.status == "invalid argument" and str(err), (bad, err.status, err)


def check_threads():
    """Two threads on their own engines (engine()), then one locked engine
    shared by two threads: every output matches the reference."""
    errors, engines = [], []

    def own(seed):
        try:
            for bshd in (False, True):
                check_layout(bshd, "math", seed=seed)
            engines.append(attnprof.engine())  # kept alive: handles stay distinct
        except Exception as ex:  # reported by the main thread
            errors.append(repr(ex))

    shared = attnprof.Engine(locked=True)

    def on_shared(seed):
        try:
            for bshd in (False, True, False):
                check_layout(bshd, "flash", engine=shared, seed=seed)
        except Exception as ex:
            errors.append(repr(ex))

    for fn in (own, on_shared):
        ts = [threading.Thread(target=fn, args=(100 + i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors
    handles = {e.handle for e in engines}
    assert len(handles) == 2 and attnprof.engine().handle not in handles, handles


def main():
    names = [x["name"] for x in attnprof.backends("cpu")]
    assert "naive" in names and "math" in names, names
    for backend in ("math", "naive", "flash", "auto"):
        for bshd in (False, True):
            check_layout(bshd, backend)
    check_engine_options()
    check_threads()
    # A refusal: head dims differ between q and k.
    x = buffer([0.5] * 64)
    q = attnprof.tensor(ctypes.addressof(x), (1, 1, 4, 4), (16, 16, 4, 1), "f32", -1)
    k = attnprof.tensor(ctypes.addressof(x), (1, 1, 4, 2), (8, 8, 2, 1), "f32", -1)
    call = attnprof.Call(q, k, k, q)
    why = call.why_not("math")
    assert why and "head dims differ" in why, why
    try:
        call("math")
        raise AssertionError("a refused call returned")
    except attnprof.Error as e:
        assert e.status == "invalid argument" and "head dims differ" in str(e), (e.status, e)
    # AUTO on the CPU: flash up to D = 256 (test_auto_choice.c states the rule).
    y = buffer([0.25] * 64)
    t = attnprof.tensor(ctypes.addressof(y), (1, 1, 4, 4), (16, 16, 4, 1), "f32", -1)
    picked, log = attnprof.Call(t, t, t, t).select()
    assert picked == "flash" and "flash" in log, (picked, log)
    print("binding: all passed (%s)" % ", ".join(names))


if __name__ == "__main__":
    sys.exit(main())
