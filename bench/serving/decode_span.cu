// The span decode kernel (src/attn/cuda/fused/decode_span.cuh: a CTA per
// span of keys over all KV heads, one merge through L2 behind a grid
// barrier) on the bench's cell (decode_bench.h: B=1, one new token, GQA
// 32/8, D128, bf16, contiguous cache of kv keys, default 2048), graph-timed
// as serving_vs_torch.py times, with its floors (issue 13, NOTES.md run 16):
//  (a) the reads alone: S CTAs each copying one contiguous piece of K and
//      one of V by a bulk copy each (S = 128, 132), and the kernel's own
//      copies (a bulk copy a key row of all heads) with nothing after;
//  (b) (a) + zero partials written, the grid barrier, the merge's loads and
//      the out write (the kernel without its math);
//  (c) the kernel, its error against the host reference (fp64 sums of the
//      bf16 inputs; out poisoned with NaN first);
// and for the A/B of where (b)'s time goes: the barrier alone (kStop 4),
// (b) without the barrier (kStop 5, timing only), the barrier's variants
// (p.fix bit 2: atom.release, bit 3: relaxed polls), and the phase stamps
// (decode_cluster.cuh's DECODE_CL_STAMP: %globaltimer and %clock64 by
// thread 0 of each CTA) of (b) and (c).
// It first checks that a cooperative launch can be captured into a graph.
//   bench_decode_span [kv] [reps]
#define DECODE_CL_STAMPS 1
#include "attn/cuda/fused/decode_span.cuh"
#include "decode_bench.h"

static const char *kPhase[DECODE_CL_PHASES] = {
    "start", "copies issued", "K landed (kStop 1: K and V)", "heads done (thread 0's warp)",
    "partials written (CTA)", "arrived (atomic returned)", "barrier flip seen (thread 0)",
    "barrier passed (CTA)", "merge loads folded (thread 0)", "end"};

// CTA i copies bytes [i * per, +per) of k and of v (the last CTA less) into
// shared memory by one bulk copy each on one mbarrier, then reads one word.
__global__ void __launch_bounds__(256) read_bulk(const char *k, const char *v, size_t total,
                                                 size_t per, unsigned *sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char buf[];
  const uint32_t bar = fused_smem_addr(buf);
  const size_t b0 = blockIdx.x * per, n = b0 < total ? min(per, total - b0) : 0;
  if (threadIdx.x == 0) {
    ws_bar_init(bar, 1);
    ws_bar_init_fence();
    ws_bar_expect(bar, (uint32_t)(2 * n));
    if (n) {
      decode_bulk_row(fused_smem_addr(buf + 128), k + b0, (uint32_t)n, bar);
      decode_bulk_row(fused_smem_addr(buf + 128 + per), v + b0, (uint32_t)n, bar);
    }
  }
  __syncthreads();
  ws_bar_wait(bar, 0);
  if (buf[128 + threadIdx.x] == 0x5a && buf[128 + per + threadIdx.x] == 0xa5) sink[0] = 1;
#endif
}

struct Span {
  attn_decode_params p;
  float *part;
  unsigned *bar;
};

// The cell's params for spans of `span` keys, with partial scratch and a zeroed counter.
static Span span_of(const Cell &c, int span) {
  Span s;
  const int S = (c.kv + span - 1) / span;
  s.p = params(c, S);
  s.p.sp_span = span;
  CK(cudaMalloc(&s.part, (size_t)S * c.hq * (c.d + 1) * 4));
  CK(cudaMalloc(&s.bar, 4));
  CK(cudaMemset(s.bar, 0, 4));
  s.p.o_part = s.part, s.p.lse_part = s.part + (size_t)S * c.hq * c.d;
  s.p.sp_bar = s.bar;
  return s;
}

template <int kStop>
static cudaError_t span_try(const attn_decode_params &p, cudaStream_t st) {
  static bool done;
  if (!done)
    CK(cudaFuncSetAttribute(decode_span_kernel<bf16, 128, kStop>,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  done = true;
  cudaLaunchAttribute attr[2];
  cudaLaunchConfig_t cfg = decode_span_config(p, 128, st, attr);
  return cudaLaunchKernelEx(&cfg, decode_span_kernel<bf16, 128, kStop>, p);
}
template <int kStop>
static void span_launch(const attn_decode_params &p, cudaStream_t st) {
  CK(span_try<kStop>(p, st));
}

int main(int argc, char **argv) {
  Cell c;
  c.kv = argc > 1 ? atoi(argv[1]) : 2048;
  const int reps = argc > 2 ? atoi(argv[2]) : 50;
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, 0));
  if (pr.major < 9) {
    printf("sm_%d%d: the span kernel needs sm_90; nothing measured\n", pr.major, pr.minor);
    return 0;
  }
  make_cell(c);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned *sink;
  CK(cudaMalloc(&sink, 4));
  const size_t kbytes = (size_t)c.kv * c.hkv * c.d * 2;
  printf("%s, %d SMs; B=1 KV=%d GQA %d/%d D128 bf16, one new token, contiguous; K+V %.2f MB; "
         "graph of %d calls, median of %d replays\n",
         pr.name, pr.multiProcessorCount, c.kv, c.hq, c.hkv, 2.0 * kbytes / 1e6, kGraphN, reps);

  { // can a cooperative launch be captured and replayed?
    Span sp = span_of(c, 16);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaError_t st = span_try<3>(sp.p, s);
    cudaError_t end = cudaStreamEndCapture(s, &g);
    cudaError_t inst = end == cudaSuccess ? cudaGraphInstantiate(&ge, g, 0) : end;
    cudaError_t go = inst == cudaSuccess ? cudaGraphLaunch(ge, s) : inst;
    if (go == cudaSuccess) go = cudaStreamSynchronize(s);
    printf("cooperative launch in a graph: launch %s, end capture %s, instantiate %s, "
           "replay %s\n", cudaGetErrorString(st), cudaGetErrorString(end), cudaGetErrorString(inst),
           cudaGetErrorString(go));
    if (go != cudaSuccess) return 1;
  }

  CK(cudaFuncSetAttribute(read_bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  for (int ctas : {64, 128, 132}) {
    const size_t per = ((kbytes + ctas - 1) / ctas + 15) / 16 * 16;
    const int smem = (int)(128 + 2 * per) > DECODE_SPAN_MIN_SMEM ? (int)(128 + 2 * per)
                                                                  : DECODE_SPAN_MIN_SMEM;
    const char *kb = (const char *)c.kvbuf, *vb = kb + kbytes;
    const double us = graph_us([&](cudaStream_t st) {
      read_bulk<<<ctas, 256, smem, st>>>(kb, vb, kbytes, per, sink);
    }, reps, s);
    printf("(a) read: %d CTAs, one bulk copy of %zu B of K and one of V each, %d B shared: "
           "%.2f us\n", ctas, per, smem, us);
  }
  for (int span : {16, 32}) {
    Span sp = span_of(c, span);
    const int S = sp.p.splits, smem = decode_span_smem_bytes(span, c.hkv, c.d);
    printf("span %d keys, %d CTAs (cooperative), %d B shared:\n", span, S, smem);
    for (int fix : {0, 4, 8, 12}) {
      attn_decode_params p = sp.p;
      p.fix = fix;
      const double a = graph_us([&](cudaStream_t st) { span_launch<1>(p, st); }, reps, s);
      const double bar = graph_us([&](cudaStream_t st) { span_launch<4>(p, st); }, reps, s);
      const double nob = graph_us([&](cudaStream_t st) { span_launch<5>(p, st); }, reps, s);
      const double b = graph_us([&](cudaStream_t st) { span_launch<2>(p, st); }, reps, s);
      CK(cudaMemset(c.o, 0xff, (size_t)c.hq * c.d * 2)); // poison: NaN
      span_launch<3>(p, s);
      CK(cudaStreamSynchronize(s));
      const double err = check(c);
      const double full = graph_us([&](cudaStream_t st) { span_launch<3>(p, st); }, reps, s);
      CK(cudaMemset(c.o, 0xff, (size_t)c.hq * c.d * 2));
      span_launch<3>(p, s);
      CK(cudaStreamSynchronize(s));
      printf("  fix=%d: (a) its copies alone %.2f us; the barrier alone %.2f us; (b) without the "
             "barrier %.2f us; (b) copies + partials + grid barrier + merge, no math %.2f us; (c) "
             "the kernel %.2f us, err %.1e (after the timed replays %.1e)\n",
             fix, a, bar, nob, b, full, err, check(c));
      if (fix == 0 || fix == 12) {
        for (int stop : {2, 3}) {
          printf("  stamps of %s, fix=%d:\n", stop == 2 ? "(b)" : "(c)", fix);
          if (stop == 2)
            graph_once([&](cudaStream_t st) { span_launch<2>(p, st); }, s);
          else
            graph_once([&](cudaStream_t st) { span_launch<3>(p, st); }, s);
          phase_table(S, kPhase);
        }
      }
    }
  }
  CK(cudaGetLastError());
  return 0;
}
