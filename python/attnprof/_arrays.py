"""numpy arrays and torch tensors as attn_tensor, without importing either
package until an object of theirs arrives. Every refusal is a TypeError
(what kind of object) or a ValueError (what shape, dtype or device), naming
what would be accepted."""

from . import _capi

NUMPY_DTYPES = {"float32": "f32", "float16": "f16", "bool": "bool"}
TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16",
                "torch.bool": "bool"}
ACCEPTED = "numpy.ndarray (float32, float16) or torch.Tensor (float32, float16, bfloat16)"


def kind_of(x, what):
    """'numpy' or 'torch' for an array argument; TypeError for anything else."""
    mod = type(x).__module__.split(".")[0]
    if mod == "numpy" and hasattr(x, "__array_interface__"):
        return "numpy"
    if mod == "torch" and hasattr(x, "data_ptr"):
        return "torch"
    raise TypeError(f"{what}: got {type(x).__module__}.{type(x).__name__}; accepted: {ACCEPTED}")


def _numpy_tensor(x, what, mask=False):
    import numpy as np
    name = NUMPY_DTYPES.get(x.dtype.name)
    if name is None or (name == "bool" and not mask):
        ok = "bool, float32 or float16" if mask else "float32 or float16"
        raise ValueError(f"{what}: dtype {x.dtype} is not accepted: {ok} (numpy has no bfloat16; "
                         "pass a torch tensor for bf16)")
    if any(s < 0 or s % x.itemsize for s in x.strides):
        x = np.ascontiguousarray(x)
    strides = tuple(s // x.itemsize for s in x.strides)
    return x, _capi_tensor(x.__array_interface__["data"][0], x.shape, strides, name, -1)


def _torch_tensor(x, what, mask=False):
    name = TORCH_DTYPES.get(str(x.dtype))
    if name is None or (name == "bool" and not mask):
        ok = "bool, float32, float16 or bfloat16" if mask else "float32, float16 or bfloat16"
        raise ValueError(f"{what}: dtype {x.dtype} is not accepted: {ok}")
    dev = x.device
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"{what}: device {dev} is not accepted: cpu or cuda")
    index = -1 if dev.type == "cpu" else (dev.index if dev.index is not None else 0)
    return x, _capi_tensor(x.data_ptr(), tuple(x.shape), tuple(x.stride()), name, index)


def _capi_tensor(ptr, shape, strides, dtype, device):
    t = _capi.Tensor()
    t.data, t.dtype, t.device = ptr, _capi.DTYPES[dtype], device
    t.shape[:] = list(shape)
    t.strides[:] = list(strides)
    return t


def as_tensor(x, what, kind, mask=False):
    """(object kept alive, Tensor). q, k, v must be 4-D [B, H, S, D]; a mask
    2-D [Sq, Sk] or 4-D [B|1, H|1, Sq, Sk] (size-1 dimensions broadcast)."""
    if kind_of(x, what) != kind:
        raise TypeError(f"{what}: a {type(x).__module__} object among {kind} inputs; pass q, k, "
                        "v (and mask) all as numpy arrays or all as torch tensors")
    nd = len(x.shape)
    if mask and nd == 2:
        x = x.reshape((1, 1) + tuple(x.shape))
    elif nd != 4:
        want = "2-D [Sq, Sk] or 4-D [B|1, H|1, Sq, Sk]" if mask else "4-D [B, H, S, D]"
        raise ValueError(f"{what}: shape {tuple(x.shape)} is not accepted: {want}")
    keep, t = (_numpy_tensor if kind == "numpy" else _torch_tensor)(x, what, mask)
    if mask:  # broadcast dimensions read with stride 0
        for i in (0, 1):
            if t.shape[i] == 1:
                t.strides[i] = 0
    return keep, t


def empty_like_q(q, kind, d_v):
    """A new output [B, H, Sq, Dv] of q's dtype and device."""
    shape = tuple(q.shape[:3]) + (d_v,)
    if kind == "numpy":
        import numpy as np
        return np.empty(shape, dtype=q.dtype)
    import torch
    return torch.empty(shape, dtype=q.dtype, device=q.device)


def stream_of(q, kind):
    """The current CUDA stream of q's device (torch), else None."""
    if kind != "torch" or q.device.type != "cuda":
        return None
    import torch
    return torch.cuda.current_stream(q.device).cuda_stream or None
