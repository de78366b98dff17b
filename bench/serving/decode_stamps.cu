// Where the cluster decode kernel's time goes (issue 13, NOTES.md run 15).
// One cell: B=1, one new token, GQA 32/8, D128, bf16, contiguous cache of
// KV keys (default 2048). It includes decode_cluster.cuh with
// DECODE_CL_STAMPS defined, so each CTA records %globaltimer and %clock64
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
#include <algorithm>
#include <functional>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define DECODE_CL_STAMPS 1
#include "attn/cuda/fused/decode_cluster.cuh"

typedef __nv_bfloat16 bf16;
#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static const int kGraphN = 20;

// kGraphN calls of fn captured into one graph, instantiated.
static cudaGraphExec_t capture(const std::function<void(cudaStream_t)> &fn, cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kGraphN; i++) fn(s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaGraphDestroy(g);
  return ge;
}

// us per call of fn: kGraphN calls captured in one graph, median over reps replays.
static double graph_us(const std::function<void(cudaStream_t)> &fn, int reps, cudaStream_t s) {
  for (int i = 0; i < 3; i++) fn(s);
  CK(cudaStreamSynchronize(s));
  cudaGraphExec_t ge = capture(fn, s);
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto &e : ev) CK(cudaEventCreate(&e));
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(ev[2 * r], s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(ev[2 * r + 1], s));
  }
  CK(cudaStreamSynchronize(s));
  std::vector<double> us(reps);
  for (int r = 0; r < reps; r++) {
    float ms;
    CK(cudaEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]));
    us[r] = ms * 1e3 / kGraphN;
  }
  for (auto &e : ev) cudaEventDestroy(e);
  cudaGraphExecDestroy(ge);
  std::sort(us.begin(), us.end());
  return us[reps / 2];
}

// One capture of kGraphN calls, replayed once with the stamp counters zeroed.
static void graph_once(const std::function<void(cudaStream_t)> &fn, cudaStream_t s) {
  cudaGraphExec_t ge = capture(fn, s);
  static unsigned zero[DECODE_CL_STAMP_CTAS];
  CK(cudaMemcpyToSymbol(decode_cl_stamp_calls, zero, sizeof zero));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaGraphExecDestroy(ge);
}

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

struct Cell {
  int kv, hq = 32, hkv = 8, d = 128;
  bf16 *q, *kvbuf, *o;
  int *lens;
  std::vector<float> hq_, hk, hv;
};

static float bf(float x) { return __bfloat162float(__float2bfloat16(x)); }

static void make_cell(Cell &c) {
  const size_t nq = (size_t)c.hq * c.d, nk = (size_t)c.kv * c.hkv * c.d;
  c.hq_.resize(nq), c.hk.resize(nk), c.hv.resize(nk);
  srand(7);
  auto r = [] { return bf((float)rand() / RAND_MAX * 2.f - 1.f); };
  for (auto &x : c.hq_) x = r();
  for (auto &x : c.hk) x = r();
  for (auto &x : c.hv) x = r();
  std::vector<bf16> t(nq + 2 * nk);
  for (size_t i = 0; i < nq; i++) t[i] = __float2bfloat16(c.hq_[i]);
  for (size_t i = 0; i < nk; i++) t[nq + i] = __float2bfloat16(c.hk[i]);
  for (size_t i = 0; i < nk; i++) t[nq + nk + i] = __float2bfloat16(c.hv[i]);
  CK(cudaMalloc(&c.q, nq * 2));
  CK(cudaMalloc(&c.kvbuf, 2 * nk * 2));
  CK(cudaMalloc(&c.o, nq * 2));
  CK(cudaMalloc(&c.lens, 4));
  CK(cudaMemcpy(c.q, t.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(c.kvbuf, t.data() + nq, 2 * nk * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(c.lens, &c.kv, 4, cudaMemcpyHostToDevice));
}

// Relative error of o against the fp32 reference on the host.
static double check(const Cell &c) {
  const size_t nq = (size_t)c.hq * c.d;
  std::vector<bf16> o(nq);
  CK(cudaMemcpy(o.data(), c.o, nq * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  std::vector<double> s(c.kv);
  for (int h = 0; h < c.hq; h++) {
    const int hk = h / (c.hq / c.hkv);
    double m = -1e30, l = 0;
    for (int j = 0; j < c.kv; j++) {
      double a = 0;
      for (int x = 0; x < c.d; x++)
        a += (double)c.hq_[h * c.d + x] * c.hk[((size_t)j * c.hkv + hk) * c.d + x];
      s[j] = a / sqrt((double)c.d), m = std::max(m, s[j]);
    }
    for (int j = 0; j < c.kv; j++) s[j] = exp(s[j] - m), l += s[j];
    for (int x = 0; x < c.d; x++) {
      double a = 0;
      for (int j = 0; j < c.kv; j++) a += s[j] * c.hv[((size_t)j * c.hkv + hk) * c.d + x];
      a /= l;
      const double got = __bfloat162float(o[h * c.d + x]);
      num += (got - a) * (got - a), den += a * a;
    }
  }
  return sqrt(num / den);
}

static attn_decode_params params(const Cell &c, int C) {
  attn_decode_params p = {};
  const int64_t nk = (int64_t)c.kv * c.hkv * c.d;
  p.q = c.q, p.k = c.kvbuf, p.v = c.kvbuf + nk, p.o = c.o;
  p.q_sb = c.hq * c.d, p.q_sh = c.d, p.q_ss = c.hq * c.d; // [B, S, H, D] as {B, H, S, D}
  p.o_sb = p.q_sb, p.o_sh = p.q_sh, p.o_ss = p.q_ss;
  p.k_sb = p.v_sb = nk, p.k_sh = p.v_sh = c.d, p.k_ss = p.v_ss = c.hkv * c.d;
  p.kv_len = c.lens;
  p.batch = 1, p.hq = c.hq, p.hkv = c.hkv, p.group = c.hq / c.hkv, p.q_rows = 1, p.sk = c.kv;
  p.kv_kind = DECODE_KV_CACHE;
  p.scale_log2 = (float)(1.0 / sqrt((double)c.d) * 1.4426950408889634);
  p.splits = C, p.row_groups = 1;
  p.cl_chunk = ((c.kv + C - 1) / C + 15) / 16 * 16;
  return p;
}

template <int kBulk>
static void cluster_launch(const attn_decode_params &p, cudaStream_t s, int relax, int wide) {
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
  q.cl_relax = relax, q.cl_wide = wide;
  cudaLaunchAttribute attr[2];
  cudaLaunchConfig_t cfg = decode_cl_config(dim3(p.splits, p.hkv, p.batch), p.splits,
                                            decode_cl_smem_bytes<128, kBulk>(p.cl_chunk), 0, s, attr);
  CK(cudaLaunchKernelEx(&cfg, fn, q));
}

static void stats(std::vector<double> v, double *mn, double *md, double *mx) {
  std::sort(v.begin(), v.end());
  *mn = v.front(), *md = v[v.size() / 2], *mx = v.back();
}

static const char *kPhase[DECODE_CL_PHASES] = {
    "start", "copies issued", "Q+K landed", "softmax done", "V landed",
    "P V done", "warps merged", "cluster barrier passed", "out written", "end"};

// The phase table of the last graph_once: calls 4..kGraphN-1, CTAs 0..ctas-1.
static void phase_table(int ctas) {
  static unsigned long long buf[DECODE_CL_STAMP_CALLS][DECODE_CL_STAMP_CTAS][DECODE_CL_STAMP_WORDS];
  CK(cudaMemcpyFromSymbol(buf, decode_cl_stamp_buf, sizeof buf));
  const int W = DECODE_CL_PHASES;
  std::vector<double> acc[DECODE_CL_PHASES][6], gaps, span, shared;
  for (int call = 4; call < kGraphN; call++) {
    unsigned long long t0 = ~0ull, tend = 0, prev_end = 0;
    for (int c = 0; c < ctas; c++) {
      t0 = std::min(t0, buf[call][c][0]), tend = std::max(tend, buf[call][c][W - 1]);
      prev_end = std::max(prev_end, buf[call - 1][c][W - 1]);
    }
    gaps.push_back((double)t0 - (double)prev_end);
    span.push_back((double)(tend - t0));
    std::vector<int> per_sm(256, 0);
    for (int c = 0; c < ctas; c++) per_sm[buf[call][c][2 * W] & 255]++;
    shared.push_back(
        (double)std::count_if(per_sm.begin(), per_sm.end(), [](int n) { return n > 1; }));
    for (int ph = 0; ph < W; ph++) {
      std::vector<double> ns, cy;
      for (int c = 0; c < ctas; c++) {
        ns.push_back((double)(buf[call][c][ph] - t0));
        cy.push_back((double)(buf[call][c][W + ph] - buf[call][c][W]));
      }
      double a, b, d;
      stats(ns, &a, &b, &d);
      acc[ph][0].push_back(a), acc[ph][1].push_back(b), acc[ph][2].push_back(d);
      stats(cy, &a, &b, &d);
      acc[ph][3].push_back(a), acc[ph][4].push_back(b), acc[ph][5].push_back(d);
    }
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  printf("  | phase | ns from the call's first start: min / median / max | cycles from the CTA's "
         "own start: min / median / max |\n  |---|---|---|\n");
  for (int ph = 0; ph < W; ph++)
    printf("  | %s | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |\n", kPhase[ph], med(acc[ph][0]),
           med(acc[ph][1]), med(acc[ph][2]), med(acc[ph][3]), med(acc[ph][4]), med(acc[ph][5]));
  printf("  first start to last end %.0f ns; last end of the call before to first start %.0f ns "
         "(min %.0f, max %.0f); SMs holding two CTAs: %.0f (medians over calls 4..%d)\n",
         med(span), med(gaps), *std::min_element(gaps.begin(), gaps.end()),
         *std::max_element(gaps.begin(), gaps.end()), med(shared), kGraphN - 1);
}

int main(int argc, char **argv) {
  Cell c;
  c.kv = argc > 1 ? atoi(argv[1]) : 2048;
  const int reps = argc > 2 ? atoi(argv[2]) : 50;
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, 0));
  if (pr.major < 9) {
    printf("sm_%d%d: the cluster kernel needs sm_90; nothing measured\n", pr.major, pr.minor);
    return 0;
  }
  make_cell(c);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned *sink;
  CK(cudaMalloc(&sink, 4));
  printf("%s, %d SMs; B=1 KV=%d GQA %d/%d D128 bf16, one new token, contiguous; K+V %.2f MB; "
         "graph of %d calls, median of %d replays\n",
         pr.name, pr.multiProcessorCount, c.kv, c.hq, c.hkv,
         2.0 * c.kv * c.hkv * c.d * 2 / 1e6, kGraphN, reps);

  struct Variant {
    const char *name;
    int C, bulk, relax, wide;
  } vars[] = {{"C=8 cp.async wide=1 relax=1 (default)", 8, 0, 1, 1},
              {"C=8 cp.async wide=0 relax=0 (run 14's default)", 8, 0, 0, 0},
              {"C=8 cp.async wide=1 relax=0", 8, 0, 0, 1},
              {"C=16 cp.async wide=1 relax=1", 16, 0, 1, 1},
              {"C=8 bulk wide=1 relax=1", 8, 1, 1, 1}, {"C=4 cp.async wide=1 relax=1", 4, 0, 1, 1}};
  for (const Variant &v : vars) {
    const attn_decode_params p = params(c, v.C);
    if (p.cl_chunk > DECODE_CLUSTER_KEYS(128)) {
      printf("%s: %d keys a CTA do not fit\n", v.name, p.cl_chunk);
      continue;
    }
    auto run = [&](cudaStream_t st) {
      if (v.bulk)
        cluster_launch<1>(p, st, v.relax, v.wide);
      else
        cluster_launch<0>(p, st, v.relax, v.wide);
    };
    CK(cudaMemset(c.o, 0xff, (size_t)c.hq * c.d * 2)); // poison: NaN
    run(s);
    CK(cudaStreamSynchronize(s));
    const double err = check(c);
    const double us = graph_us(run, reps, s);
    graph_once(run, s);
    printf("%s: %d CTAs of %d keys, %d B shared: %.2f us per call (graph), err %.1e\n", v.name,
           v.C * c.hkv, p.cl_chunk, v.bulk ? decode_cl_smem_bytes<128, 1>(p.cl_chunk)
                                           : decode_cl_smem_bytes<128, 0>(p.cl_chunk),
           us, err);
    phase_table(v.C * c.hkv);
  }

  // Floors on the same bytes.
  const size_t n16 = (size_t)2 * c.kv * c.hkv * c.d * 2 / 16;
  const uint4 *src = (const uint4 *)c.kvbuf;
  for (int C : {8, 16}) {
    const int smem = decode_cl_smem_bytes<128, 0>(params(c, C).cl_chunk);
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
  CK(cudaGetLastError());
  return 0;
}
