// What the decode benches of one cell share (decode_stamps.cu,
// decode_span.cu): the cell (B=1, one new token, GQA 32/8, D128, bf16,
// contiguous cache of kv keys) with its host reference, and graph timing as
// serving_vs_torch.py times (kGraphN calls a graph, events around each
// replay, median; K/V stay in L2 between calls).
#ifndef ATTNPROF_BENCH_SERVING_DECODE_BENCH_H
#define ATTNPROF_BENCH_SERVING_DECODE_BENCH_H

#include <algorithm>
#include <functional>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include "attn/cuda/fused/decode_params.h"
#include <cuda_bf16.h>
#include <cuda_runtime.h>

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

// The cell as the decode kernels' params, split into `splits` (no scratch).
static attn_decode_params params(const Cell &c, int splits) {
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
  p.splits = splits, p.row_groups = 1;
  p.part_rows = c.hq;
  return p;
}

#endif
