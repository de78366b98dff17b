"""A stand-in for the few torch calls the A/B workers make, over numpy on
the host, so that bench/ab/test_ab.py runs the workers' measuring code with
no GPU and no torch: 'cuda' tensors live in host memory and report device
cpu, bfloat16 is float32 (the CPU library computes those), CUDA graphs
refuse capture (the workers then time per call), events read the host
clock. Only what the workers call is here."""
import numpy as np

from . import cuda, nn  # noqa: F401  (torch.cuda, torch.nn.*)

__version__ = "0+numpy-stand-in"


class dtype:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, np_dtype

    def __str__(self):
        return "torch." + self.name

    __repr__ = __str__


float32 = dtype("float32", np.float32)
bfloat16 = float32  # the CPU library computes f32; bf16 has no numpy type
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
_BY_NP = {np.dtype(np.float32): float32, np.dtype(np.int32): int32, np.dtype(np.int64): int64,
          np.dtype(np.float64): dtype("float64", np.float64)}


class device:
    type, index = "cpu", None


class Generator:
    def __init__(self, device=None):
        self.rng = np.random.default_rng(0)

    def manual_seed(self, seed):
        self.rng = np.random.default_rng(seed)
        return self


_default = Generator()


def manual_seed(seed):
    _default.manual_seed(seed)


def _arr(x):
    return x.a if isinstance(x, Tensor) else x


class Tensor:
    def __init__(self, a):
        self.a = a

    shape = property(lambda self: tuple(self.a.shape))
    dtype = property(lambda self: _BY_NP[self.a.dtype])
    device = property(lambda self: device())

    def stride(self):
        return tuple(s // self.a.itemsize for s in self.a.strides)

    def data_ptr(self):
        return self.a.__array_interface__["data"][0]

    def numel(self):
        return self.a.size

    def transpose(self, i, j):
        return Tensor(np.swapaxes(self.a, i, j))

    def view(self, *shape):
        out = self.a.view()
        out.shape = shape  # raises, as torch does, where no view exists
        return Tensor(out)

    def contiguous(self):
        return Tensor(np.ascontiguousarray(self.a))

    def float(self):
        return Tensor(self.a.astype(np.float32))

    def long(self):
        return Tensor(self.a.astype(np.int64))

    def to(self, dt):
        return Tensor(self.a.astype(dt.np))

    def norm(self):
        return Tensor(np.array(np.linalg.norm(self.a.astype(np.float64))))

    def item(self):
        return float(self.a)

    def fill_(self, value):
        self.a.fill(value)
        return self

    def __sub__(self, other):
        return Tensor(self.a - _arr(other))

    def __truediv__(self, other):
        return Tensor(self.a / _arr(other))

    def __setitem__(self, idx, value):
        self.a[_arr(idx)] = _arr(value)


def randn(*shape, device=None, dtype=float32, generator=None):
    return Tensor((generator or _default).rng.standard_normal(shape).astype(dtype.np))


def empty(*shape, device=None, dtype=float32):
    return Tensor(np.empty(shape, dtype.np))


def empty_like(t):
    return Tensor(np.empty_like(t.a))


def full_like(t, value):
    return Tensor(np.full_like(t.a, value))


def full(shape, value, dtype=float32, device=None):
    return Tensor(np.full(shape, value, dtype.np))


def randperm(n, device=None, generator=None):
    return Tensor((generator or _default).rng.permutation(n).astype(np.int64))
