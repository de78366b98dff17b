/* Known GPU work for the CUPTI tests (see planted.h). The kernels do a little
 * arithmetic whose result depends on run-time values, so the compiler keeps
 * them whole; what matters is their footprint: block shape, shared memory,
 * registers (read back with cudaFuncGetAttributes) and, for one, clusters. */
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>

#include "planted.h"

#define TRY(call)                                                                            \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return -1;                                                                             \
    }                                                                                        \
  } while (0)

__global__ void __launch_bounds__(128) planted_static(float *out, float s) {
  __shared__ float tile[512]; /* 2048 B static */
  int t = threadIdx.y * blockDim.x + threadIdx.x;
  for (int i = t; i < 512; i += blockDim.x * blockDim.y) tile[i] = s * i;
  __syncthreads();
  if (tile[(t * 7) % 512] == -1.f) out[t] = tile[t];
}

__global__ void planted_dynamic(float *out, float s) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = s * threadIdx.x;
  __syncthreads();
  if (dyn[(threadIdx.x + 1) % blockDim.x] == -1.f) out[threadIdx.x] = s;
}

enum { HEAVY = 40 };
__global__ void __launch_bounds__(128, 1) planted_heavy(float *out, float s) {
  float a[HEAVY];
#pragma unroll
  for (int i = 0; i < HEAVY; i++) a[i] = s * (float)(threadIdx.x + i);
#pragma unroll
  for (int r = 0; r < 8; r++) {
#pragma unroll
    for (int i = 0; i < HEAVY; i++) a[i] = a[i] * a[(i + 1) % HEAVY] + s;
  }
  float t = 0;
#pragma unroll
  for (int i = 0; i < HEAVY; i++) t += a[i];
  if (t == 12345.f) out[threadIdx.x] = t;
}

__global__ void planted_cluster(float *out, float s) {
  if (s == -1.f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void planted_tiny(float *out, float s) {
  if (s == -1.f) out[threadIdx.x] = s;
}

extern "C" int planted_device_count(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

extern "C" int planted_device(int ordinal, prof_device *d) {
  cudaDeviceProp p;
  TRY(cudaGetDeviceProperties(&p, ordinal));
  memset(d, 0, sizeof *d);
  d->id = ordinal;
  snprintf(d->name, sizeof d->name, "%s", p.name);
  d->compute_major = p.major, d->compute_minor = p.minor;
  d->num_sms = p.multiProcessorCount;
  d->max_threads_per_block = p.maxThreadsPerBlock;
  d->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d->max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d->regs_per_block = p.regsPerBlock, d->regs_per_sm = p.regsPerMultiprocessor;
  d->warp_size = p.warpSize;
  d->shared_memory_per_block = (int)p.sharedMemPerBlock;
  d->shared_memory_per_block_optin = (int)p.sharedMemPerBlockOptin;
  d->shared_memory_per_sm = (int)p.sharedMemPerMultiprocessor;
  d->reserved_shared_memory_per_block = (int)p.reservedSharedMemPerBlock;
  d->total_global_mem = (int64_t)p.totalGlobalMem;
  return 0;
}

/* Footprint and runtime occupancy of func launched with this block and
 * dynamic shared memory (opting in when it needs more than the default). */
static int describe(const void *func, dim3 grid, dim3 block, int dyn, planted_kernel *k) {
  cudaFuncAttributes a;
  if (dyn > 48 * 1024)
    TRY(cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
  TRY(cudaFuncGetAttributes(&a, func));
  k->grid[0] = grid.x, k->grid[1] = grid.y, k->grid[2] = grid.z;
  k->block[0] = block.x, k->block[1] = block.y, k->block[2] = block.z;
  k->registers = a.numRegs;
  k->static_smem = (int)a.sharedSizeBytes;
  k->dynamic_smem = dyn;
  k->optin = dyn > 48 * 1024;
  TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&k->occupancy_blocks, func,
                                                    (int)(block.x * block.y * block.z), dyn));
  return 0;
}

/* The cluster kernel through the driver's cuLaunchKernelEx, 2x1x1 clusters. */
static int launch_cluster(planted_kernel *k, float *out, cudaStream_t s) {
  dim3 grid(8, 2, 1), block(128, 1, 1);
  if (describe((const void *)planted_cluster, grid, block, 0, k)) return -1;
  k->cluster[0] = 2, k->cluster[1] = 1, k->cluster[2] = 1;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 2, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
  cfg.gridDim = grid, cfg.blockDim = block, cfg.attrs = &attr, cfg.numAttrs = 1;
  TRY(cudaOccupancyMaxActiveClusters(&k->active_clusters, (const void *)planted_cluster, &cfg));
  cudaFunction_t fn;
  TRY(cudaGetFuncBySymbol(&fn, (const void *)planted_cluster));
  CUlaunchAttribute dattr;
  dattr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  dattr.value.clusterDim.x = 2, dattr.value.clusterDim.y = 1, dattr.value.clusterDim.z = 1;
  CUlaunchConfig dcfg = {};
  dcfg.gridDimX = grid.x, dcfg.gridDimY = grid.y, dcfg.gridDimZ = grid.z;
  dcfg.blockDimX = block.x, dcfg.blockDimY = block.y, dcfg.blockDimZ = block.z;
  dcfg.hStream = (CUstream)s, dcfg.attrs = &dattr, dcfg.numAttrs = 1;
  /* Through the runtime's driver entry point: no link to libcuda, so the
   * tests load (and skip) on machines without a driver. */
  CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **) = NULL;
  cudaDriverEntryPointQueryResult found;
  TRY(cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", (void **)&launch_ex, 12000,
                                       cudaEnableDefault, &found));
  if (!launch_ex) return fprintf(stderr, "cuLaunchKernelEx not found in the driver\n"), -1;
  float sv = 2.f;
  void *args[] = {&out, &sv};
  CUresult r = launch_ex(&dcfg, (CUfunction)fn, args, NULL);
  if (r != CUDA_SUCCESS)
    return fprintf(stderr, "cuLaunchKernelEx failed: CUDA error %d\n", (int)r), -1;
  k->name_part = "planted_cluster", k->launch_api = "cuLaunchKernelEx";
  return 0;
}

static int launch_kernels(planted_result *r, const char *nvtx_range, float *out, cudaStream_t s) {
  planted_kernel *k = r->k;
  dim3 g0(7, 3, 1), b0(64, 2, 1);
  if (describe((const void *)planted_static, g0, b0, 0, &k[0])) return -1;
  k[0].name_part = "planted_static", k[0].launch_api = "cudaLaunchKernel";
  if (nvtx_range) nvtxRangePushA(nvtx_range);
  planted_static<<<g0, b0, 0, s>>>(out, 1.f);
  if (nvtx_range) nvtxRangePop();
  TRY(cudaGetLastError());
  dim3 g1(132, 1, 1), b1(256, 1, 1);
  if (describe((const void *)planted_dynamic, g1, b1, 100 * 1024, &k[1])) return -1;
  k[1].name_part = "planted_dynamic", k[1].launch_api = "cudaLaunchKernel";
  planted_dynamic<<<g1, b1, 100 * 1024, s>>>(out, 1.f);
  TRY(cudaGetLastError());
  dim3 g2(33, 1, 1), b2(128, 1, 1);
  if (describe((const void *)planted_heavy, g2, b2, 0, &k[2])) return -1;
  k[2].name_part = "planted_heavy", k[2].launch_api = "cudaLaunchKernel";
  planted_heavy<<<g2, b2, 0, s>>>(out, 1.f);
  TRY(cudaGetLastError());
  return launch_cluster(&k[3], out, s);
}

extern "C" int planted_run(const char *range, const char *nvtx_range, planted_result *r) {
  memset(r, 0, sizeof *r);
  static char host_src[PLANTED_COPY_BYTES];
  float *dev = NULL;
  void *pinned = NULL;
  cudaStream_t s;
  TRY(cudaSetDevice(0));
  TRY(cudaMalloc((void **)&dev, PLANTED_COPY_BYTES));
  TRY(cudaMallocHost(&pinned, PLANTED_COPY_BYTES));
  TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  TRY(cudaDeviceSynchronize());
  r->t_begin = attn_clock_ns();
  prof_range_push(range);
  TRY(cudaMemcpy(dev, host_src, PLANTED_COPY_BYTES, cudaMemcpyHostToDevice));
  TRY(cudaMemsetAsync(dev, 0, PLANTED_SET_BYTES, s));
  if (launch_kernels(r, nvtx_range, dev, s)) return -1;
  TRY(cudaMemcpyAsync(pinned, dev, PLANTED_COPY_BYTES, cudaMemcpyDeviceToHost, s));
  TRY(cudaStreamSynchronize(s));
  prof_range_pop();
  r->t_end = attn_clock_ns();
  TRY(cudaStreamDestroy(s));
  TRY(cudaFreeHost(pinned));
  TRY(cudaFree(dev));
  return 0;
}

extern "C" int planted_flood(int n) {
  for (int i = 0; i < n; i++) planted_tiny<<<1, 32>>>(NULL, 1.f);
  TRY(cudaGetLastError());
  TRY(cudaDeviceSynchronize());
  return 0;
}

/* ---- footprints for the occupancy comparison -------------------------------- */

typedef struct {
  const void *func;
  const char *name;
  int threads, dyn;
} footprint_case;

static const footprint_case cases[] = {
    {(const void *)planted_tiny, "tiny 32 thr", 32, 0},
    {(const void *)planted_tiny, "tiny 1024 thr", 1024, 0},
    {(const void *)planted_static, "static 2 KiB, 128 thr", 128, 0},
    {(const void *)planted_static, "static 2 KiB, 96 thr (3 warps)", 96, 0},
    {(const void *)planted_heavy, "heavy registers, 128 thr", 128, 0},
    {(const void *)planted_heavy, "heavy registers, 64 thr", 64, 0},
    {(const void *)planted_dynamic, "dynamic 20,000 B, 96 thr", 96, 20000},
    {(const void *)planted_dynamic, "dynamic 100 KiB opt-in, 256 thr", 256, 100 * 1024},
    {(const void *)planted_dynamic, "dynamic 200 KiB opt-in, 384 thr", 384, 200 * 1024},
    {(const void *)planted_dynamic, "dynamic 227 KiB (the limit), 128 thr", 128, 227 * 1024},
    {(const void *)planted_dynamic, "dynamic 60,000 B opt-in, 640 thr", 640, 60000},
};

extern "C" int planted_footprints(void) { return (int)(sizeof cases / sizeof cases[0]); }

extern "C" int planted_footprint(int i, prof_footprint *fp, int *blocks, const char **name) {
  const footprint_case *c = &cases[i];
  planted_kernel k;
  memset(&k, 0, sizeof k);
  if (describe(c->func, dim3(132 * 64), dim3(c->threads), c->dyn, &k)) return -1;
  memset(fp, 0, sizeof *fp);
  fp->grid[0] = k.grid[0], fp->grid[1] = fp->grid[2] = 1;
  fp->block[0] = c->threads, fp->block[1] = fp->block[2] = 1;
  fp->registers_per_thread = k.registers;
  fp->static_shared_memory = k.static_smem;
  fp->dynamic_shared_memory = c->dyn;
  fp->shared_memory_limit_optin = k.optin;
  fp->occupancy_pct_in_file = -1;
  *blocks = k.occupancy_blocks;
  *name = c->name;
  return 0;
}

/* ---- every kind of sync call, for the sync-record comparison ---------------- */

static cudaStream_t sync_s, sync_s2;
static cudaEvent_t sync_ev;

extern "C" int planted_syncs_setup(void) {
  TRY(cudaSetDevice(0));
  TRY(cudaStreamCreateWithFlags(&sync_s, cudaStreamNonBlocking));
  TRY(cudaStreamCreate(&sync_s2));
  TRY(cudaEventCreate(&sync_ev));
  TRY(cudaDeviceSynchronize());
  return 0;
}

/* A driver entry point of the CUDA 12.0 ABI (cuCtxSynchronize takes no
 * context there), through the runtime as launch_cluster does. */
static void *driver_fn(const char *name) {
  void *fn = NULL;
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess)
    return NULL;
  return fn;
}

#define DTRY(call)                                                                              \
  do {                                                                                          \
    CUresult r_ = (call);                                                                       \
    if (r_ != CUDA_SUCCESS)                                                                     \
      return fprintf(stderr, "%s:%d: %s: CUDA error %d\n", __FILE__, __LINE__, #call, (int)r_), \
             -1;                                                                                \
  } while (0)

extern "C" int planted_syncs(int64_t *t_begin, int64_t *t_end) {
  CUresult (*stream_sync)(CUstream) = (CUresult(*)(CUstream))driver_fn("cuStreamSynchronize");
  CUresult (*event_sync)(CUevent) = (CUresult(*)(CUevent))driver_fn("cuEventSynchronize");
  CUresult (*wait_event)(CUstream, CUevent, unsigned) =
      (CUresult(*)(CUstream, CUevent, unsigned))driver_fn("cuStreamWaitEvent");
  CUresult (*ctx_sync)(void) = (CUresult(*)(void))driver_fn("cuCtxSynchronize");
  if (!stream_sync || !event_sync || !wait_event || !ctx_sync)
    return fprintf(stderr, "a driver sync call is missing\n"), -1;
  *t_begin = attn_clock_ns();
  planted_tiny<<<1, 32, 0, sync_s>>>(NULL, 1.f);
  TRY(cudaEventRecord(sync_ev, sync_s));
  TRY(cudaEventSynchronize(sync_ev));
  TRY(cudaStreamWaitEvent(sync_s2, sync_ev, 0));
  TRY(cudaStreamSynchronize(sync_s));
  TRY(cudaStreamSynchronize(0));
  TRY(cudaStreamSynchronize(cudaStreamPerThread));
  TRY(cudaDeviceSynchronize());
  DTRY(event_sync((CUevent)sync_ev));
  DTRY(wait_event((CUstream)sync_s2, (CUevent)sync_ev, 0));
  DTRY(stream_sync((CUstream)sync_s));
  DTRY(ctx_sync());
  *t_end = attn_clock_ns();
  return 0;
}
