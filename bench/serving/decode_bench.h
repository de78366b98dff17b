// What the decode benches of one cell share (decode_stamps.cu,
// decode_span.cu, decode_split_stamps.cu): the cell (B sequences, default 1,
// one new token, GQA 32/8, D128, bf16, contiguous cache [B, kv, Hkv, D]) with
// its host reference, and graph timing as
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
  int kv, b = 1, hq = 32, hkv = 8, d = 128;
  bf16 *q, *kvbuf, *o;
  int *lens;
  std::vector<float> hq_, hk, hv;
};

static float bf(float x) { return __bfloat162float(__float2bfloat16(x)); }

static void make_cell(Cell &c) {
  const size_t nq = (size_t)c.b * c.hq * c.d, nk = (size_t)c.b * c.kv * c.hkv * c.d;
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
  CK(cudaMalloc(&c.lens, 4 * c.b));
  CK(cudaMemcpy(c.q, t.data(), nq * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(c.kvbuf, t.data() + nq, 2 * nk * 2, cudaMemcpyHostToDevice));
  const std::vector<int> lens(c.b, c.kv);
  CK(cudaMemcpy(c.lens, lens.data(), 4 * c.b, cudaMemcpyHostToDevice));
}

// Relative error of o against the fp32 reference on the host.
static double check(const Cell &c) {
  const size_t nq = (size_t)c.b * c.hq * c.d;
  std::vector<bf16> o(nq);
  CK(cudaMemcpy(o.data(), c.o, nq * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  std::vector<double> s(c.kv);
  for (int bh = 0; bh < c.b * c.hq; bh++) { // (sequence, query head)
    const size_t kb = (size_t)(bh / c.hq) * c.kv * c.hkv; // the sequence's first key row
    const int hk = bh % c.hq / (c.hq / c.hkv);
    double m = -1e30, l = 0;
    for (int j = 0; j < c.kv; j++) {
      double a = 0;
      for (int x = 0; x < c.d; x++)
        a += (double)c.hq_[bh * c.d + x] * c.hk[(kb + (size_t)j * c.hkv + hk) * c.d + x];
      s[j] = a / sqrt((double)c.d), m = std::max(m, s[j]);
    }
    for (int j = 0; j < c.kv; j++) s[j] = exp(s[j] - m), l += s[j];
    for (int x = 0; x < c.d; x++) {
      double a = 0;
      for (int j = 0; j < c.kv; j++) a += s[j] * c.hv[(kb + (size_t)j * c.hkv + hk) * c.d + x];
      a /= l;
      const double got = __bfloat162float(o[(size_t)bh * c.d + x]);
      num += (got - a) * (got - a), den += a * a;
    }
  }
  return sqrt(num / den);
}

// The cell as the decode kernels' params, split into `splits` (no scratch).
static attn_decode_params params(const Cell &c, int splits) {
  attn_decode_params p = {};
  const int64_t nk = (int64_t)c.kv * c.hkv * c.d; // one sequence's
  p.q = c.q, p.k = c.kvbuf, p.v = c.kvbuf + c.b * nk, p.o = c.o;
  p.q_sb = c.hq * c.d, p.q_sh = c.d, p.q_ss = c.hq * c.d; // [B, S, H, D] as {B, H, S, D}
  p.o_sb = p.q_sb, p.o_sh = p.q_sh, p.o_ss = p.q_ss;
  p.k_sb = p.v_sb = nk, p.k_sh = p.v_sh = c.d, p.k_ss = p.v_ss = c.hkv * c.d;
  p.kv_len = c.lens;
  p.batch = c.b, p.hq = c.hq, p.hkv = c.hkv, p.group = c.hq / c.hkv, p.q_rows = 1, p.sk = c.kv;
  p.kv_kind = DECODE_KV_CACHE;
  p.scale_log2 = (float)(1.0 / sqrt((double)c.d) * 1.4426950408889634);
  p.splits = splits, p.row_groups = 1;
  p.part_rows = c.b * c.hq;
  return p;
}

// A bench's main: the cell of argv[1] keys (default kv), reps (argv[2],
// default 50), argv[3] sequences (default b), a stream, a sink word and the
// header line, then run(...).
// Nothing measured (a line saying why) on a device before sm_90.
typedef void (*bench_run_fn)(Cell &c, int reps, cudaStream_t s, unsigned *sink);
static int bench_main(int argc, char **argv, const char *kernel, bench_run_fn run,
                      int kv = 2048, int b = 1) {
  Cell c;
  c.kv = argc > 1 ? atoi(argv[1]) : kv;
  const int reps = argc > 2 ? atoi(argv[2]) : 50;
  c.b = argc > 3 ? atoi(argv[3]) : b;
  if (c.kv < 1 || reps < 1 || c.b < 1) {
    fprintf(stderr, "bad arguments: [kv >= 1] [reps >= 1] [B >= 1] accepted\n");
    return 2;
  }
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, 0));
  if (pr.major < 9) {
    printf("sm_%d%d: the %s kernel needs sm_90; nothing measured\n", pr.major, pr.minor, kernel);
    return 0;
  }
  make_cell(c);
  cudaStream_t s;
  unsigned *sink;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaMalloc(&sink, 4));
  printf("%s, %d SMs; B=%d KV=%d GQA %d/%d D128 bf16, one new token, contiguous; K+V %.2f MB; "
         "graph of %d calls, median of %d replays\n",
         pr.name, pr.multiProcessorCount, c.b, c.kv, c.hq, c.hkv,
         2.0 * c.b * c.kv * c.hkv * c.d * 2 / 1e6, kGraphN, reps);
  run(c, reps, s, sink);
  CK(cudaGetLastError());
  return 0;
}

#ifdef DECODE_STAMPS
// The phase stamps of decode_cluster.cuh (DECODE_STAMP), which the span
// kernel records too.
// One capture of kGraphN calls, replayed once with the stamp counters zeroed.
static void graph_once(const std::function<void(cudaStream_t)> &fn, cudaStream_t s) {
  cudaGraphExec_t ge = capture(fn, s);
  static unsigned zero[DECODE_STAMP_CTAS];
  CK(cudaMemcpyToSymbol(decode_stamp_calls, zero, sizeof zero));
  CK(cudaGraphLaunch(ge, s));
  CK(cudaStreamSynchronize(s));
  cudaGraphExecDestroy(ge);
}

// One stamped variant: out poisoned, fn run once and checked against the host
// reference (*err), then timed (graph_us) and one graph replayed with the
// stamp counters zeroed (for phase_table). Returns the us per call.
static double stamped_run(const Cell &c, const std::function<void(cudaStream_t)> &fn, int reps,
                          cudaStream_t s, double *err) {
  CK(cudaMemset(c.o, 0xff, (size_t)c.b * c.hq * c.d * 2)); // poison: NaN
  fn(s);
  CK(cudaStreamSynchronize(s));
  *err = check(c);
  const double us = graph_us(fn, reps, s);
  graph_once(fn, s);
  return us;
}

static void stats(std::vector<double> v, double *mn, double *md, double *mx) {
  std::sort(v.begin(), v.end());
  *mn = v.front(), *md = v[v.size() / 2], *mx = v.back();
}

// The phase table of the last graph_once: calls 4..kGraphN-1, CTAs 0..ctas-1;
// name: the DECODE_PHASES phases' names.
static void phase_table(int ctas, const char *const *name) {
  static unsigned long long buf[DECODE_STAMP_CALLS][DECODE_STAMP_CTAS][DECODE_STAMP_WORDS];
  CK(cudaMemcpyFromSymbol(buf, decode_stamp_buf, sizeof buf));
  const int W = DECODE_PHASES;
  std::vector<double> acc[DECODE_PHASES][6], gaps, span, shared;
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
    printf("  | %s | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |\n", name[ph], med(acc[ph][0]),
           med(acc[ph][1]), med(acc[ph][2]), med(acc[ph][3]), med(acc[ph][4]), med(acc[ph][5]));
  printf("  first start to last end %.0f ns; last end of the call before to first start %.0f ns "
         "(min %.0f, max %.0f); SMs holding two CTAs: %.0f (medians over calls 4..%d)\n",
         med(span), med(gaps), *std::min_element(gaps.begin(), gaps.end()),
         *std::max_element(gaps.begin(), gaps.end()), med(shared), kGraphN - 1);
}

#endif

#endif
