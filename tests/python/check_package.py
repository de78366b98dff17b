#!/usr/bin/env python3
"""Run inside the fresh virtual environment test_package.sh made: the
installed package (not the checkout) computes attention on numpy arrays
that matches an fp64 reference written here in numpy, and refuses bad
input with TypeError / ValueError naming what is accepted."""
import os
import sys

import numpy as np

import attnprof

VENV = sys.argv[1]


def reference(q, k, v, causal=None, mask=None, scale=None):
    """softmax(q k^T * scale [+ mask]) v in float64; GQA by repeating heads."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * (scale or 1 / np.sqrt(q.shape[-1]))
    sq, sk = s.shape[-2:]
    if causal == "top-left":
        s = np.where(np.tril(np.ones((sq, sk), bool)), s, -np.inf)
    if causal == "bottom-right":
        s = np.where(np.tril(np.ones((sq, sk), bool), sk - sq), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def close(out, ref, tol):
    assert np.isfinite(out).all(), "output not fully written"
    err = np.abs(out.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err < tol, f"relative error {err:.2e} >= {tol:.0e}"
    return err


def main():
    here = os.path.realpath(attnprof.__file__)
    assert here.startswith(os.path.realpath(VENV)), f"imported {here}, not the venv's copy"
    rng = np.random.default_rng(14)
    q = rng.standard_normal((2, 4, 37, 24), dtype=np.float32)
    k = rng.standard_normal((2, 2, 53, 24), dtype=np.float32)
    v = rng.standard_normal((2, 2, 53, 24), dtype=np.float32)
    names = [b["name"] for b in attnprof.backends("cpu")]
    assert {"naive", "math", "flash"} <= set(names), names
    n = 0
    for backend in ["auto"] + names:
        for causal in (None, "top-left", "bottom-right"):
            out = attnprof.sdpa(q, k, v, backend=backend, causal=causal)
            assert out.shape == (2, 4, 37, 24) and out.dtype == np.float32
            close(out, reference(q, k, v, causal), 1e-5)
            n += 1
    mask = rng.random((37, 53)) > 0.3
    close(attnprof.sdpa(q, k, v, mask=mask, scale=0.3), reference(q, k, v, None, mask, 0.3), 1e-5)
    add = rng.standard_normal((1, 4, 37, 53)).astype(np.float32)
    close(attnprof.sdpa(q, k, v, mask=add), reference(q, k, v, None, add), 1e-5)
    bshd = np.ascontiguousarray(q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)  # strided view
    close(attnprof.sdpa(bshd, k, v, causal=True), reference(q, k, v, "top-left"), 1e-5)
    h = attnprof.sdpa(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16))
    close(h, reference(q.astype(np.float16), k.astype(np.float16), v.astype(np.float16)), 5e-3)
    rows = attnprof.compare(q, k, v, iters=2, warmup=0)
    assert [r["name"] for r in rows] == names and all(r["status"] == "ok" for r in rows), rows
    assert all(r["rel_err"] < 1e-5 and r["time_us_min"] <= r["time_us"] <= r["time_us_max"]
               for r in rows), rows
    assert attnprof.why_not(q, k, v, backend="naive") is None

    def raises(exc, words, *a, **kw):
        try:
            attnprof.sdpa(*a, **kw)
        except exc as e:
            for w in words:
                assert w in str(e), f"{type(e).__name__}: {e} lacks {w!r}"
            return
        raise AssertionError(f"no {exc.__name__} for {kw or [type(x) for x in a]}")

    raises(TypeError, ["numpy.ndarray", "torch.Tensor"], q.tolist(), k, v)
    raises(ValueError, ["top-left", "bottom-right"], q, k, v, causal="causal")
    raises(ValueError, ["naive", "flash"], q, k, v, backend="fastest")
    raises(ValueError, ["float32"], q.astype(np.float64), k, v)
    raises(ValueError, ["4-D"], q[0], k, v)
    raises(ValueError, ["positive"], q, k, v, scale=-1.0)
    raises(ValueError, ["CPU"], q, k, v, backend="efficient")  # refused: an InputError
    raises(attnprof.Error, ["CPU"], q, k, v, backend="efficient")
    print(f"package: {n + 5} forwards match the fp64 reference; errors typed; from {here}")


if __name__ == "__main__":
    main()
