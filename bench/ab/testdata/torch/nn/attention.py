"""torch.nn.attention of the stand-in: the backend choice is ignored."""
import contextlib


class SDPBackend:
    CUDNN_ATTENTION, FLASH_ATTENTION, EFFICIENT_ATTENTION, MATH = range(4)


@contextlib.contextmanager
def sdpa_kernel(backend):
    yield
