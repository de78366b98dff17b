#!/usr/bin/env python3
"""The ctypes binding (python/attnprof) against the library, on the CPU: the
argument struct reaches C intact (a computed forward matches a pure-Python
attention over the same numbers, for contiguous and [B, S, H, D] strides),
the backend list, refusals raise attnprof.Error with the reason. Needs no
GPU and no numpy. Run by ctest with ATTNPROF_LIB set to the built library."""

import ctypes
import math
import random
import sys

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


def check_layout(bshd, backend):
    b, h, s, d = 2, 3, 5, 4
    if bshd:
        strides = (s * h * d, d, h * d, 1)
    else:
        strides = (h * s * d, s * d, d, 1)
    idx = lambda bb, hh, i, c: bb * strides[0] + hh * strides[1] + i * strides[2] + c
    n = b * h * s * d
    rnd = random.Random(7)
    q, k, v = ([rnd.uniform(-1, 1) for _ in range(n)] for _ in range(3))
    bufs = [buffer(x) for x in (q, k, v, [float("nan")] * n)]
    ts = [attnprof.tensor(ctypes.addressof(x), (b, h, s, d), strides, "f32", attnprof.DEVICE_CPU)
          for x in bufs]
    call = attnprof.Call(*ts, causal="top-left")
    assert call.why_not(backend) is None, call.why_not(backend)
    call(backend)
    want = reference(q, k, v, b, h, s, d, idx, True)
    err = max(abs(bufs[3][idx(*key)] - val) for key, val in want.items())
    assert err < 1e-5, "%s %s: max error %g" % (backend, "bshd" if bshd else "bhsd", err)
    assert abs(call.flops() - 4.0 * b * h * s * s * d / 2) < 1e-9, call.flops()


def main():
    names = [x["name"] for x in attnprof.backends("cpu")]
    assert "naive" in names and "math" in names, names
    for backend in ("math", "naive"):
        for bshd in (False, True):
            check_layout(bshd, backend)
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
    print("binding: all passed (%s)" % ", ".join(names))


if __name__ == "__main__":
    sys.exit(main())
