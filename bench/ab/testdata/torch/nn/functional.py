"""torch.nn.functional of the stand-in: SDPA in float64 numpy, [B, H, S, D]."""
import numpy as np


def scaled_dot_product_attention(q, k, v, is_causal=False, enable_gqa=False):
    from .. import Tensor
    qa, ka, va = (x.a.astype(np.float64) for x in (q, k, v))
    if ka.shape[1] != qa.shape[1]:
        if not enable_gqa:
            raise RuntimeError("stand-in: head counts differ without enable_gqa")
        rep = qa.shape[1] // ka.shape[1]
        ka, va = np.repeat(ka, rep, axis=1), np.repeat(va, rep, axis=1)
    s = qa @ np.swapaxes(ka, -1, -2) / np.sqrt(qa.shape[-1])
    if is_causal:
        sq, sk = s.shape[-2:]
        s = np.where(np.tril(np.ones((sq, sk), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return Tensor((p / p.sum(-1, keepdims=True) @ va).astype(q.a.dtype))
