"""torch SDPA with the flash and cuDNN backends, each call inside an NVTX range.

For `attnprof trace -- python3 torch_sdpa_nvtx.py`: the ranges sdpa_flash and
sdpa_cudnn become the summary's rows, so the trace shows what each backend
launches per call (one kernel for flash; cuDNN's generated kernel through
cuLaunchKernelEx) and the kernel's footprint and occupancy. Warm-up calls run
outside the ranges (cuDNN builds its plan on the first call). Prints the
figures a check compares with the trace.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S, D = 8, 16, 1024, 64
CALLS = 5


def main():
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device for torch")
        return 77
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    for name, backend in backends:
        with sdpa_kernel(backend):
            for _ in range(3):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.cuda.synchronize()
            for _ in range(CALLS):
                torch.cuda.nvtx.range_push(f"sdpa_{name}")
                F.scaled_dot_product_attention(q, k, v, is_causal=True)
                torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
        print(f"sdpa_{name}: {CALLS} calls, shape {B}x{H}x{S}x{D} bf16 causal")
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
