"""torch.cuda of the stand-in: host clock events; graphs refuse capture,
or with TORCH_STANDIN_GRAPHS=1 capture (the calls run once, eagerly) and
replay as a 50 us sleep, so that the graph-timed path runs too."""
import contextlib
import os
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
        if not os.environ.get("TORCH_STANDIN_GRAPHS"):
            raise RuntimeError("stand-in: no CUDA graphs")
        time.sleep(50e-6)


def current_stream():
    return Stream()


@contextlib.contextmanager
def stream(s):
    yield s


@contextlib.contextmanager
def graph(g, stream=None):
    if not os.environ.get("TORCH_STANDIN_GRAPHS"):
        raise RuntimeError("stand-in: capture refused")
    yield g


def synchronize():
    pass


def empty_cache():
    pass


def get_device_name():
    return "stand-in (numpy on the host)"
