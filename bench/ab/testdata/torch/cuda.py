"""torch.cuda of the stand-in: host clock events, no graphs."""
import contextlib
import time


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class Stream:
    cuda_stream = 0

    def wait_stream(self, other):
        pass

    def synchronize(self):
        pass


class CUDAGraph:
    def replay(self):
        raise RuntimeError("stand-in: no CUDA graphs")


def current_stream():
    return Stream()


@contextlib.contextmanager
def stream(s):
    yield s


@contextlib.contextmanager
def graph(g, stream=None):
    raise RuntimeError("stand-in: capture refused")
    yield  # noqa: unreachable (a generator)


def synchronize():
    pass


def empty_cache():
    pass


def get_device_name():
    return "stand-in (numpy on the host)"
