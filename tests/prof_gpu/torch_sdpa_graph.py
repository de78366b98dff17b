"""torch SDPA (flash) captured in a torch.cuda.CUDAGraph and replayed, each
replay inside the NVTX range sdpa_graph; then the same call eagerly inside
sdpa_eager. For `attnprof trace -- python3 torch_sdpa_graph.py`; the check
(check_graph_trace.py torch) compares the two ranges in the trace."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S, D = 4, 16, 1024, 64
CALLS = 5


def main():
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device for torch")
        return 77
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture, as torch's docs ask
            for _ in range(3):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        for _ in range(CALLS):
            torch.cuda.nvtx.range_push("sdpa_graph")
            graph.replay()
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
        for _ in range(CALLS):
            torch.cuda.nvtx.range_push("sdpa_eager")
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    err = (out.float() - ref.float()).abs().max().item()
    print(f"sdpa_graph: {CALLS} replays, shape {B}x{H}x{S}x{D} bf16 causal, max |graph - eager| {err}")
    return 0 if err == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
