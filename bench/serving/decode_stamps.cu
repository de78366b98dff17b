// Where the cluster decode kernel's time goes (issue 13, NOTES.md run 15).
// One cell: B=1, one new token, GQA 32/8, D128, bf16, contiguous cache of
// KV keys (default 2048). It includes decode_cluster.cuh with
// DECODE_STAMPS defined, so each CTA records %globaltimer and %clock64
// at its phases (the library's own build has none of this), and prints:
//  - per launch shape (cluster size C, copy kind, merge and last barrier),
//    the graph-timed us per call (20 calls a graph, events around each
//    replay, median), the error against a host reference (fp64 sums of the
//    bf16 inputs), and per phase min / median / max over the CTAs of
//    a call, in ns from the call's earliest CTA start (globaltimer) and in
//    cycles from each CTA's own start (clock64), medians over calls 4..19 of
//    the graph; the gap from the last CTA end of one call to the first start
//    of the next; how many SMs held two CTAs;
//  - floors on the same 8.4 MB (K then V in one buffer), timed the same way:
//    an empty kernel with the cluster kernel's grid, cluster and shared
//    memory; an empty kernel of one CTA; reads by ld.global (registers) and
//    by cp.async into shared memory (as the cluster kernel copies) with 64,
//    128 and 132 CTAs of 256 threads, each CTA its contiguous share; and the
//    cluster kernel's own row pattern by cp.async (read_smem_rows).
//   bench_decode_stamps [kv] [reps]
#define DECODE_STAMPS 1
#include "attn/cuda/fused/decode_cluster.cuh"
#include "decode_bench.h"

__global__ void empty_kernel(void) {}

// Each CTA reads its contiguous share of n uint4 by ld.global, kU in flight a thread.
template <int kU>
__global__ void __launch_bounds__(256) read_regs(const uint4 *__restrict__ src, size_t n,
                                                 unsigned *sink) {
  const size_t per = (n + gridDim.x - 1) / gridDim.x, b0 = blockIdx.x * per;
  const size_t e = min(n, b0 + per);
  unsigned acc = 0;
  for (size_t i = b0 + threadIdx.x; i < e; i += 256 * kU) {
    uint4 x[kU];
#pragma unroll
    for (int u = 0; u < kU; u++)
      x[u] = i + u * 256 < e ? __ldg(src + i + u * 256) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kU; u++) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
  }
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

// Each CTA copies its contiguous share into shared memory by cp.async, all
// issued before one wait (the cluster kernel's copies), then reads one word.
__global__ void __launch_bounds__(256) read_smem(const uint4 *__restrict__ src, size_t n,
                                                 unsigned *sink) {
  extern __shared__ uint4 buf[];
  const size_t per = (n + gridDim.x - 1) / gridDim.x, b0 = blockIdx.x * per;
  const size_t e = min(n, b0 + per);
  for (size_t i = b0 + threadIdx.x; i < e; i += 256)
    fused_cp_async16(fused_smem_addr(buf + (i - b0)), src + i, 16);
  fused_cp_async_commit();
  fused_cp_async_wait<0>();
  __syncthreads();
  if (buf[threadIdx.x].x == 0x9e3779b9u) sink[0] = 1;
}

// The cluster kernel's own pattern: CTA (x, h) copies the 256-byte rows of
// head h for keys [x * chunk, +chunk) of K and of V (a row every hkv * 256
// bytes) into shared memory by cp.async, all issued before one wait.
__global__ void __launch_bounds__(256) read_smem_rows(const uint4 *__restrict__ k,
                                                      const uint4 *__restrict__ v, int chunk,
                                                      int hkv, unsigned *sink) {
  extern __shared__ uint4 buf[];
  const int per = chunk * 16; // 16-byte pieces of a CTA's K (or V)
  const size_t base = (size_t)blockIdx.x * chunk * hkv * 16 + blockIdx.y * 16;
  for (int i = threadIdx.x; i < 2 * per; i += 256) {
    const int kv = i / per, r = i % per / 16, ch = i % 16;
    fused_cp_async16(fused_smem_addr(buf + i), (kv ? v : k) + base + (size_t)r * hkv * 16 + ch, 16);
  }
  fused_cp_async_commit();
  fused_cp_async_wait<0>();
  __syncthreads();
  if (buf[threadIdx.x].x == 0x9e3779b9u) sink[0] = 1;
}

template <int kBulk>
static void cluster_launch(const attn_decode_params &p, cudaStream_t s, int relax, int wide,
                           int cols, int vhalf, int fix) {
  static bool done;
  auto fn = decode_cluster_kernel<bf16, 128, kBulk>;
  if (!done) {
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            decode_cl_smem_bytes<128, kBulk>(DECODE_CLUSTER_KEYS(128))));
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CK(cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                            cudaSharedmemCarveoutMaxShared));
    done = true;
  }
  attn_decode_params q = p;
  q.cl_relax = relax, q.cl_wide = wide, q.cl_cols = cols, q.cl_vhalf = vhalf, q.fix = fix;
  cudaLaunchAttribute attr[2];
  cudaLaunchConfig_t cfg = decode_cl_config(dim3(p.splits, p.hkv, p.batch), p.splits,
                                            decode_cl_smem_bytes<128, kBulk>(p.cl_chunk), 0, s, attr);
  CK(cudaLaunchKernelEx(&cfg, fn, q));
}

static const char *kPhase[DECODE_PHASES] = {
    "start", "copies issued", "Q+K landed", "softmax done", "V landed",
    "P V done", "P written (warps merged)", "cluster barrier passed", "out written", "end"};

// The cell's measurements (bench_main does the rest).
static void run(Cell &c, int reps, cudaStream_t s, unsigned *sink) {

  // fix: ATTNPROF_DECODE_FIX (bit 3: the warps' merge by 4 columns, run 20)
  struct Variant {
    const char *name;
    int C, bulk, relax, wide, cols, vhalf, fix;
  } vars[] = {{"C=8 cp.async cols=0 fix=11 (default: by keys, warps' merge by 4 columns)", 8, 0, 1, 1, 0, 0, 11},
              {"C=8 cp.async cols=0 fix=3 (runs 15-19: warps' merge by element)", 8, 0, 1, 1, 0, 0, 3},
              {"C=8 cp.async cols=1 (P V by columns, branch-free groups of 8 slices)", 8, 0, 1, 1, 1, 0, 11},
              {"C=8 cp.async cols=0 fix=11 (again: the control)", 8, 0, 1, 1, 0, 0, 11},
              {"C=8 cp.async cols=0 fix=3 (again)", 8, 0, 1, 1, 0, 0, 3},
              {"C=8 cp.async cols=1 (again)", 8, 0, 1, 1, 1, 0, 11}};
  for (const Variant &v : vars) {
    attn_decode_params p = params(c, v.C);
    p.cl_chunk = ((c.kv + v.C - 1) / v.C + 15) / 16 * 16;
    if (p.cl_chunk > DECODE_CLUSTER_KEYS(128)) {
      printf("%s: %d keys a CTA do not fit\n", v.name, p.cl_chunk);
      continue;
    }
    auto run = [&](cudaStream_t st) {
      if (v.bulk)
        cluster_launch<1>(p, st, v.relax, v.wide, v.cols, v.vhalf, v.fix);
      else
        cluster_launch<0>(p, st, v.relax, v.wide, v.cols, v.vhalf, v.fix);
    };
    double err;
    const double us = stamped_run(c, run, reps, s, &err);
    printf("%s: %d CTAs of %d keys, %d B shared: %.2f us per call (graph), err %.1e\n", v.name,
           v.C * c.hkv, p.cl_chunk, v.bulk ? decode_cl_smem_bytes<128, 1>(p.cl_chunk)
                                           : decode_cl_smem_bytes<128, 0>(p.cl_chunk),
           us, err);
    phase_table(v.C * c.hkv, kPhase);
  }

  // Floors on the same bytes.
  const size_t n16 = (size_t)2 * c.kv * c.hkv * c.d * 2 / 16;
  const uint4 *src = (const uint4 *)c.kvbuf;
  for (int C : {8, 16}) {
    const int smem = decode_cl_smem_bytes<128, 0>(((c.kv + C - 1) / C + 15) / 16 * 16);
    CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    auto emp = [&](cudaStream_t st) {
      cudaLaunchAttribute attr[2];
      cudaLaunchConfig_t cfg = decode_cl_config(dim3(C, c.hkv, 1), C, smem, 0, st, attr);
      CK(cudaLaunchKernelEx(&cfg, empty_kernel));
    };
    printf("floor: empty kernel, grid (%d, %d), clusters of %d, 256 threads, %d B shared: %.2f us\n",
           C, c.hkv, C, smem, graph_us(emp, reps, s));
    auto emp_nc = [&](cudaStream_t st) { empty_kernel<<<dim3(C, c.hkv), 256, smem, st>>>(); };
    printf("floor: empty kernel, same grid and shared memory, no cluster: %.2f us\n",
           graph_us(emp_nc, reps, s));
  }
  printf("floor: empty kernel, one CTA of 32 threads: %.2f us\n",
         graph_us([&](cudaStream_t st) { empty_kernel<<<1, 32, 0, st>>>(); }, reps, s));
  CK(cudaFuncSetAttribute(read_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  for (int ctas : {64, 128, 132}) {
    const int smem = (int)((n16 + ctas - 1) / ctas * 16);
    auto r8_fn = [&](cudaStream_t st) { read_regs<8><<<ctas, 256, 0, st>>>(src, n16, sink); };
    auto r32_fn = [&](cudaStream_t st) { read_regs<32><<<ctas, 256, 0, st>>>(src, n16, sink); };
    auto sm_fn = [&](cudaStream_t st) { read_smem<<<ctas, 256, smem, st>>>(src, n16, sink); };
    const double r8 = graph_us(r8_fn, reps, s), r32 = graph_us(r32_fn, reps, s);
    const double sm = graph_us(sm_fn, reps, s);
    printf("floor: read %.2f MB with %d CTAs of 256 threads: ld.global 8 in flight %.2f us, 32 in "
           "flight %.2f us; cp.async into %d B shared a CTA %.2f us\n",
           n16 * 16 / 1e6, ctas, r8, r32, smem, sm);
  }
  CK(cudaFuncSetAttribute(read_smem_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  for (int C : {8, 16}) {
    const int chunk = c.kv / C, smem = 2 * chunk * 256;
    const uint4 *kk = src, *vv = src + n16 / 2;
    const double us = graph_us([&](cudaStream_t st) {
      read_smem_rows<<<dim3(C, c.hkv), 256, smem, st>>>(kk, vv, chunk, c.hkv, sink);
    }, reps, s);
    printf("floor: the cluster kernel's rows (CTA (x, h): head h's 256-byte rows of keys [x * %d, "
           "+%d) of K and V, %d CTAs) by cp.async into %d B shared a CTA: %.2f us\n",
           chunk, chunk, C * c.hkv, smem, us);
  }
}

int main(int argc, char **argv) { return bench_main(argc, argv, "cluster", run); }
