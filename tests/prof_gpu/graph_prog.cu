/* A plain CUDA program for `attnprof trace` (no attnprof calls): three
 * kernels of known footprint captured into a CUDA graph and replayed, each
 * replay inside the NVTX range graph_fwd; then the same three launched one
 * by one inside eager_fwd. Prints the figures check_graph_trace.py compares
 * with the trace. */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

enum { N = 1 << 16, CALLS = 4 };

__global__ void graph_scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i < n; i += gridDim.x * blockDim.x) x[i] *= a;
}

__global__ void graph_add(float *x, const float *y, int n) {
  extern __shared__ float tile[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i < n; i += gridDim.x * blockDim.x) {
    tile[threadIdx.x] = y[i];
    x[i] += tile[threadIdx.x];
  }
}

static void launch_three(float *x, const float *y, cudaStream_t s) {
  graph_scale<<<8, 128, 0, s>>>(x, 2.0f, N);
  graph_add<<<4, 256, 256 * sizeof(float), s>>>(x, y, N);
  graph_scale<<<8, 128, 0, s>>>(x, 0.5f, N);
}

#define CHECK(call)                                                                 \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "graph_prog: %s: %s\n", #call, cudaGetErrorString(e_));       \
      return e_ == cudaErrorNoDevice || e_ == cudaErrorInsufficientDriver ? 77 : 1; \
    }                                                                               \
  } while (0)

int main(void) {
  float *x, *y;
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CHECK(cudaMalloc(&x, N * sizeof(float)));
  CHECK(cudaMalloc(&y, N * sizeof(float)));
  CHECK(cudaMemset(x, 0, N * sizeof(float)));
  CHECK(cudaMemset(y, 0, N * sizeof(float)));
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  launch_three(x, y, s);
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  for (int i = 0; i < CALLS; i++) {
    nvtxRangePushA("graph_fwd");
    CHECK(cudaGraphLaunch(ge, s));
    nvtxRangePop();
  }
  for (int i = 0; i < CALLS; i++) {
    nvtxRangePushA("eager_fwd");
    launch_three(x, y, s);
    nvtxRangePop();
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGetLastError());
  printf("graph_prog: calls %d; kernels per call 3; graph_scale grid 8 block 128 x2; "
         "graph_add grid 4 block 256 smem %d x1\n",
         CALLS, (int)(256 * sizeof(float)));
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaFree(x);
  cudaFree(y);
  return 0;
}
