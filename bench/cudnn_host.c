/* The cudnn backend from C: what a call costs the host, and the device time
 * over compare --sweep's grid (docs/cli.md; B*S = 16384, H*D = 2048, bf16).
 *
 *   bench_cudnn_host            host cost on the blog shape, then the grid
 *   bench_cudnn_host --host     host cost only
 *
 * Host cost: the first call of the process (library load, handle, plan build)
 * and the first call of a second shape (plan build alone) are reported on
 * their own; after that, the wall time of each attn_forward call (public API:
 * argument check, why-not check, execution), in batches of 100 with the
 * device synchronized between batches so the launch queue never fills.
 * Device time: CUDA events around 20 calls after 3 warm-up calls, the mean.
 * One engine handle for the process, from the environment's options
 * (ATTNPROF_CUDNN_GRAPH, ATTNPROF_CACHE_CAPACITY); its cache counters are
 * printed with the host cost.
 * One line per measurement, key=value (scripts/device.d/cudnn.sh keeps them);
 * the side by side with PyTorch is bench/vs_torch.py --only cudnn. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn/cuda/cudnn/cudnn_cuda.h"
#include "attnprof/attn.h"
#include "attnprof/testing.h"
#include "bench_clock.h"

#define ELEMS ((size_t)16384 * 2048) /* every grid shape: B*S*H*D */

static void *buf[4];
static attn_ctx *g_ctx;

/* Random bf16 in [-2, 2) for q, k, v (never zeros: they run faster). */
static int fill_inputs(void) {
  uint16_t *h = malloc(ELEMS * sizeof *h);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  if (!h) return -1;
  for (int t = 0; t < 4; t++) {
    if (cudaMalloc(&buf[t], ELEMS * 2) != cudaSuccess) return -1;
    for (size_t i = 0; t < 3 && i < ELEMS; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      h[i] = attn_f32_to_bf16((float)((double)(s >> 11) / 9007199254740992.0 * 4.0 - 2.0));
    }
    if (t < 3) cudaMemcpy(buf[t], h, ELEMS * 2, cudaMemcpyHostToDevice);
  }
  free(h);
  return 0;
}

static attn_args args_for(int64_t b, int64_t h, int64_t s, int64_t d, int causal) {
  attn_tensor t[4];
  for (int i = 0; i < 4; i++) t[i] = attn_tensor_bhsd(buf[i], ATTN_DTYPE_BF16, 0, b, h, s, d);
  attn_args a = attn_args_make(t[0], t[1], t[2], t[3]);
  a.causal = causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  return a;
}

static int run(const attn_args *a) {
  if (attn_forward(g_ctx, ATTN_BACKEND_CUDNN, a) == ATTN_STATUS_OK) return 0;
  fprintf(stderr, "bench_cudnn_host: %s\n", attn_last_error());
  return -1;
}

/* The first call of a shape, in ms (synchronized). */
static double first_call_ms(const attn_args *a) {
  double t0 = bench_now_us();
  if (run(a)) return -1;
  cudaDeviceSynchronize();
  return (bench_now_us() - t0) / 1e3;
}

/* Host microseconds per call after the first, over `batches` batches of
 * 100 calls: median, p90, mean. */
static int host_cost(const attn_args *a, int batches, double out[3]) {
  enum { MAX_BATCHES = 10, PER = 100 };
  static double t[MAX_BATCHES * PER];
  double sum = 0;
  int n = (batches < MAX_BATCHES ? batches : MAX_BATCHES) * PER;
  for (int i = 0; i < n; i++) {
    if (i % PER == 0) cudaDeviceSynchronize();
    double t0 = bench_now_us();
    if (run(a)) return -1;
    t[i] = bench_now_us() - t0;
    sum += t[i];
  }
  cudaDeviceSynchronize();
  qsort(t, (size_t)n, sizeof t[0], bench_cmp_double);
  out[0] = t[n / 2], out[1] = t[n * 9 / 10], out[2] = sum / n;
  return 0;
}

static double device_ms(const attn_args *a) {
  enum { WARM = 3, ITERS = 20 };
  cudaEvent_t e0, e1;
  float ms = 0;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  for (int i = 0; i < WARM; i++)
    if (run(a)) return -1;
  cudaEventRecord(e0, NULL);
  for (int i = 0; i < ITERS; i++) run(a);
  cudaEventRecord(e1, NULL);
  cudaEventSynchronize(e1);
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  return (double)ms / ITERS;
}

static int bench_host(void) {
  attn_args blog = args_for(8, 16, 1024, 64, 1), other = args_for(8, 16, 2048, 64, 1);
  double first = first_call_ms(&blog), second = first_call_ms(&other), h[3];
  char plan[512];
  if (first < 0 || second < 0 || host_cost(&blog, 10, h)) return -1;
  attn_cudnn_describe(g_ctx, &blog, plan, sizeof plan);
  attn_ctx_stats st;
  attn_ctx_stats_get(g_ctx, &st);
  printf("host shape=8x16x1024x64 causal=1 dtype=bf16 first_call_ms=%.1f "
         "first_call_new_shape_ms=%.1f host_us_median=%.2f host_us_p90=%.2f host_us_mean=%.2f "
         "cache_hits=%llu cache_misses=%llu workspace_bytes=%zu plan=\"%s\"\n",
         first, second, h[0], h[1], h[2], (unsigned long long)st.cache_hits,
         (unsigned long long)st.cache_misses, st.workspace_bytes, plan);
  return 0;
}

static int bench_grid(void) {
  static const int grid[][2] = {{64, 1024}, {64, 16384}, {128, 4096}, {128, 16384}, {256, 4096}};
  for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++)
    for (int causal = 0; causal < 2; causal++) {
      int64_t d = grid[g][0], s = grid[g][1], b = 16384 / s, h = 2048 / d;
      attn_args a = args_for(b, h, s, d, causal);
      char plan[512];
      double first = first_call_ms(&a), ms = first < 0 ? -1 : device_ms(&a), hc[3];
      if (first < 0 || ms < 0 || host_cost(&a, 2, hc)) { /* say so, go on with the grid */
        printf("grid D=%lld S=%lld causal=%d error=\"%s\"\n", (long long)d, (long long)s, causal,
               attn_last_error());
        continue;
      }
      attn_cudnn_describe(g_ctx, &a, plan, sizeof plan);
      printf("grid D=%lld S=%lld causal=%d B=%lld H=%lld device_us=%.1f tflops=%.1f "
             "host_us_median=%.2f first_call_ms=%.1f plan=\"%s\"\n",
             (long long)d, (long long)s, causal, (long long)b, (long long)h, ms * 1e3,
             attn_flops(&a) / (ms * 1e-3) / 1e12, hc[0], first, plan);
      fflush(stdout);
    }
  return 0;
}

int main(int argc, char **argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    fprintf(stderr, "bench_cudnn_host: no CUDA device\n");
    return 77;
  }
  attn_ctx_opts o = attn_ctx_opts_default();
  if (attn_ctx_opts_from_env(&o) || attn_ctx_create(&o, &g_ctx)) {
    fprintf(stderr, "bench_cudnn_host: %s\n", attn_last_error());
    return 2;
  }
  if (fill_inputs()) {
    fprintf(stderr, "bench_cudnn_host: cannot allocate 4 x %zu MiB\n", ELEMS * 2 >> 20);
    return 1;
  }
  int host_only = argc > 1 && strcmp(argv[1], "--host") == 0;
  int rc = bench_host() || (!host_only && bench_grid());
  attn_ctx_destroy(g_ctx);
  for (int i = 0; i < 4; i++) cudaFree(buf[i]);
  return rc;
}
