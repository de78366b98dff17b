// The span decode prototype (decode_span.cuh: a CTA per span of keys over
// all KV heads, one merge through L2 behind a grid barrier) on the bench's
// cell (decode_bench.h: B=1, one new token, GQA 32/8, D128, bf16, contiguous
// cache of kv keys, default 2048), graph-timed as serving_vs_torch.py times,
// with its floors (issue 13, NOTES.md run 16):
//  (a) the reads alone: S CTAs each copying one contiguous piece of K and
//      one of V by a bulk copy each (S = 64, 128, 132), and the kernel's own
//      copies (a bulk copy a key row, or one of K and one of V) alone;
//  (b) (a) + zero partials written, the grid barrier, the merge's loads and
//      the out write (the kernel without its math);
//  (c) the kernel, its error against the host reference (fp64 sums of the
//      bf16 inputs; out poisoned with NaN first);
// and where (b)'s time goes: the barrier alone (kStop 4), (b) without the
// barrier (kStop 5, timing only), an empty kernel of the same grid and
// shared memory launched cooperatively and not. Built twice: bench_decode_span
// times; bench_decode_span_stamps (DECODE_SPAN_STAMPS) also prints the phase
// stamps of (b) and (c) (decode_cluster.cuh's DECODE_STAMP: %globaltimer
// and %clock64 by thread 0 of each CTA), its times inflated by them.
// It first checks that a cooperative launch can be captured into a graph.
//   bench_decode_span[_stamps] [kv] [reps]
#ifdef DECODE_SPAN_STAMPS
#define DECODE_STAMPS 1
#endif
#include "decode_span.cuh"
#include "decode_bench.h"

#ifdef DECODE_SPAN_STAMPS
static const char *kPhase[DECODE_PHASES] = {
    "start", "copies issued", "(kStop 1: K and V landed)", "heads done (thread 0's warp)",
    "partials written (CTA)", "arrived (fence, atomic returned)", "barrier flip seen (thread 0)",
    "barrier passed (CTA)", "merge loads folded (warp 0)", "end"};
#endif

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

__global__ void empty_kernel(void) {}

struct Span {
  attn_decode_params p;
  int span;
  unsigned *bar;
};

// The cell's params for spans of `span` keys, with partial scratch and a zeroed counter.
static Span span_of(const Cell &c, int span) {
  Span s;
  const int S = (c.kv + span - 1) / span;
  float *part;
  s.p = params(c, S);
  s.span = span;
  CK(cudaMalloc(&part, (size_t)S * c.hq * (c.d + 1) * 4));
  CK(cudaMalloc(&s.bar, 4));
  CK(cudaMemset(s.bar, 0, 4));
  s.p.o_part = part, s.p.lse_part = part + (size_t)S * c.hq * c.d;
  return s;
}

template <int kStop, int kOne>
static cudaError_t span_try(const Span &sp, cudaStream_t st) {
  static bool done;
  if (!done)
    CK(cudaFuncSetAttribute(decode_span_kernel<bf16, 128, kStop, kOne>,
                            cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  done = true;
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = decode_span_config(sp.p, sp.span, 128, kOne, st, attr);
  return cudaLaunchKernelEx(&cfg, decode_span_kernel<bf16, 128, kStop, kOne>, sp.p, sp.span,
                            sp.bar);
}

// (a), the barrier alone, (b) without it, (b), (c) and (c)'s error, for one copy kind.
template <int kOne>
static void span_row(Cell &c, const Span &sp, int reps, cudaStream_t s) {
  auto t = [&](auto stop) {
    return graph_us([&](cudaStream_t st) { CK((span_try<decltype(stop)::value, kOne>(sp, st))); },
                    reps, s);
  };
  const double a = t(std::integral_constant<int, 1>());
  const double bar = t(std::integral_constant<int, 4>());
  const double nob = t(std::integral_constant<int, 5>());
  const double b = t(std::integral_constant<int, 2>());
  CK(cudaMemset(c.o, 0xff, (size_t)c.hq * c.d * 2)); // poison: NaN
  CK((span_try<3, kOne>(sp, s)));
  CK(cudaStreamSynchronize(s));
  const double err = check(c);
  const double full = t(std::integral_constant<int, 3>());
  CK(cudaMemset(c.o, 0xff, (size_t)c.hq * c.d * 2));
  CK((span_try<3, kOne>(sp, s)));
  CK(cudaStreamSynchronize(s));
  printf("  %s: (a) its copies alone %.2f us; the barrier alone %.2f us; (b) without the "
         "barrier %.2f us; (b) copies + partials + grid barrier + merge, no math %.2f us; (c) "
         "the kernel %.2f us, err %.1e (after the timed replays %.1e)\n",
         kOne ? "one bulk copy of K and one of V" : "a bulk copy a key row", a, bar, nob, b, full,
         err, check(c));
#ifdef DECODE_SPAN_STAMPS
  printf("  stamps of (b):\n");
  graph_once([&](cudaStream_t st) { CK((span_try<2, kOne>(sp, st))); }, s);
  phase_table(sp.p.splits, kPhase);
  printf("  stamps of (c):\n");
  graph_once([&](cudaStream_t st) { CK((span_try<3, kOne>(sp, st))); }, s);
  phase_table(sp.p.splits, kPhase);
#endif
}

// The cell's measurements (bench_main does the rest).
static void run(Cell &c, int reps, cudaStream_t s, unsigned *sink) {
  const size_t kbytes = (size_t)c.kv * c.hkv * c.d * 2;

  { // can a cooperative launch be captured and replayed?
    Span sp = span_of(c, 16);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaError_t st = span_try<3, 0>(sp, s);
    cudaError_t end = cudaStreamEndCapture(s, &g);
    cudaError_t inst = end == cudaSuccess ? cudaGraphInstantiate(&ge, g, 0) : end;
    cudaError_t go = inst == cudaSuccess ? cudaGraphLaunch(ge, s) : inst;
    if (go == cudaSuccess) go = cudaStreamSynchronize(s);
    printf("cooperative launch in a graph: launch %s, end capture %s, instantiate %s, "
           "replay %s\n", cudaGetErrorString(st), cudaGetErrorString(end),
           cudaGetErrorString(inst), cudaGetErrorString(go));
    if (go != cudaSuccess) exit(1); // the line above says why
  }
  CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  for (int coop : {0, 1}) {
    const double us = graph_us([&](cudaStream_t st) {
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeCooperative;
      attr[0].val.cooperative = 1;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(128), cfg.blockDim = dim3(256), cfg.stream = st;
      cfg.dynamicSmemBytes = DECODE_SPAN_MIN_SMEM, cfg.attrs = attr, cfg.numAttrs = coop;
      CK(cudaLaunchKernelEx(&cfg, empty_kernel));
    }, reps, s);
    printf("floor: empty kernel, 128 CTAs of 256 threads, %d B shared, %s: %.2f us\n",
           DECODE_SPAN_MIN_SMEM, coop ? "cooperative" : "plain", us);
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
    const Span sp = span_of(c, span);
    printf("span %d keys, %d CTAs (cooperative), %d / %d B shared (padded rows / one copy):\n",
           span, sp.p.splits, decode_span_smem_bytes(span, c.hkv, c.d, 0),
           decode_span_smem_bytes(span, c.hkv, c.d, 1));
    span_row<0>(c, sp, reps, s);
    span_row<1>(c, sp, reps, s);
  }
}

int main(int argc, char **argv) { return bench_main(argc, argv, "span", run); }
