/* Where the host time of an eager naive / naive_inplace / math forward goes:
 * every API call such a forward makes, timed alone, at the default GPU shape (docs/cli.md)
 * (B=8 H=16 S=1024 D=64, bf16 inputs, causal), on the legacy stream.
 *
 *   bench_host_ops [--calls N] [--spin]
 *
 * For each op, after 10 warm-up calls:
 *   idle    the device drained (cudaDeviceSynchronize) before each call, then
 *           the wall time of the call: median and p90 of N (default 200);
 *   queued  a spin kernel of 20 ms keeps the device busy, then N/5 calls are
 *           timed one by one while they only enqueue: median over 5 rounds;
 *   device  CUDA events around one call, median of 20 (for GEMMs only: is
 *           it the same kernel, as fast, in each variant?).
 * --spin runs everything under cudaDeviceScheduleSpin (set before the
 * context exists) instead of the default schedule.
 * Ops: an empty kernel (the floor of one runtime launch), the library's
 * launchers (scale, masked fill, softmax, upcast, causal bias, downcast),
 * cudaMemcpyAsync DtoD of the score size, cudaMemsetAsync of 4 bytes (what
 * cuBLAS issues before its 16-bit GEMM), the GEMMs through
 * cublasGemmStridedBatchedEx (attn_gemm_run_blas), with a cuBLAS workspace
 * of NULL/0, and through cublasLt with a cached plan; attn_why_not and
 * attn_forward per backend, on one engine handle made from the environment
 * (ATTNPROF_CUDA_GRAPHS=1 times graph replay). The launchers and runtime
 * calls run from the bench's own CUDA runtime or the library's; both drive
 * the same primary context. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attn/cuda/baselines/baseline_kernels.h"
#include "attn/cuda/baselines/cuda_ctx.h"
#include "attnprof/device.h"
#include "attn/cuda/baselines/gemm_plan.h"
#include "attnprof/attn.h"
#include "attnprof/testing.h"
#include "bench_clock.h"

int hops_empty(cudaStream_t s);
int hops_spin(cudaStream_t s, double us);

enum { B = 8, H = 16, S = 1024, D = 64 };
#define SCORES ((size_t)B * H * S * S)
#define ELEMS ((size_t)B * H * S * D)

static int calls_ = 200;

typedef int (*op_fn)(void *arg);

/* ---- the state every op reads ------------------------------------------- */

static struct {
  attn_ctx *engine;   /* the handle: attn_why_not, attn_forward */
  attn_cuda_ctx *ctx; /* its device state: cuBLAS handle and workspace */
  void *q, *k, *v, *out, *scores, *filled, *q32, *k32, *v32, *o32, *s32, *bias, *word;
  uint8_t *keep;
  attn_args args;
  attn_gemm qk16, pv16, qk32, pv32;
  cublasHandle_t ws0; /* a second handle with cublasSetWorkspace(NULL, 0) */
  attn_cuda_rows rows16, rows32;
  attn_backend backend;
} g;

static int dev_alloc(void **p, size_t bytes) {
  return cudaMalloc(p, bytes) != cudaSuccess || cudaMemset(*p, 0, bytes) != cudaSuccess;
}

/* Random bf16 in [-1, 1) for q, k, v, out (never zeros). */
static int fill_random(void *dst) {
  uint16_t *h = malloc(ELEMS * 2);
  static uint64_t seed = 0x9e3779b97f4a7c15ull;
  if (!h) return -1;
  for (size_t e = 0; e < ELEMS; e++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    h[e] = attn_f32_to_bf16((float)((double)(seed >> 11) * 0x1.0p-52 - 1.0));
  }
  int rc = cudaMemcpy(dst, h, ELEMS * 2, cudaMemcpyHostToDevice) != cudaSuccess;
  free(h);
  return rc;
}

static int plans(void) {
  char why[256];
  attn_tensor q = attn_tensor_bhsd(g.q, ATTN_DTYPE_BF16, 0, B, H, S, D),
              k = attn_tensor_bhsd(g.k, ATTN_DTYPE_BF16, 0, B, H, S, D),
              v = attn_tensor_bhsd(g.v, ATTN_DTYPE_BF16, 0, B, H, S, D),
              o = attn_tensor_bhsd(g.out, ATTN_DTYPE_BF16, 0, B, H, S, D);
  attn_tensor q32 = attn_tensor_bhsd(g.q32, ATTN_DTYPE_F32, 0, B, H, S, D),
              k32 = attn_tensor_bhsd(g.k32, ATTN_DTYPE_F32, 0, B, H, S, D),
              v32 = attn_tensor_bhsd(g.v32, ATTN_DTYPE_F32, 0, B, H, S, D),
              o32 = attn_tensor_bhsd(g.o32, ATTN_DTYPE_F32, 0, B, H, S, D);
  g.args = attn_args_make(q, k, v, o);
  g.args.causal = ATTN_CAUSAL_TOP_LEFT;
  return attn_gemm_plan_qk(&q, &k, g.scores, ATTN_DTYPE_BF16, 1.0f, &g.qk16, why, sizeof why) ||
         attn_gemm_plan_pv(g.filled, &v, &o, &g.pv16, why, sizeof why) ||
         attn_gemm_plan_qk(&q32, &k32, g.s32, ATTN_DTYPE_F32, 0.125f, &g.qk32, why, sizeof why) ||
         attn_gemm_plan_pv(g.s32, &v32, &o32, &g.pv32, why, sizeof why);
}

static int setup(void) {
  size_t bytes16 = ELEMS * 2, bytes32 = ELEMS * 4;
  if (dev_alloc(&g.q, bytes16) || dev_alloc(&g.k, bytes16) || dev_alloc(&g.v, bytes16) ||
      dev_alloc(&g.out, bytes16) || dev_alloc(&g.scores, SCORES * 2) ||
      dev_alloc(&g.filled, SCORES * 2) || dev_alloc(&g.q32, bytes32) ||
      dev_alloc(&g.k32, bytes32) || dev_alloc(&g.v32, bytes32) || dev_alloc(&g.o32, bytes32) ||
      dev_alloc(&g.s32, SCORES * 4) || dev_alloc(&g.bias, (size_t)S * S * 4) ||
      dev_alloc((void **)&g.keep, (size_t)S * S) || dev_alloc(&g.word, 256))
    return -1;
  if (fill_random(g.q) || fill_random(g.k) || fill_random(g.v) || fill_random(g.out)) return -1;
  attn_ctx_opts o = attn_ctx_opts_default();
  if (attn_ctx_opts_from_env(&o) || attn_ctx_create(&o, &g.engine) ||
      attn_cuda_ctx_get(g.engine, 0, &g.ctx) || attn_cuda_ctx_begin(g.ctx, NULL) ||
      attn_cuda_causal_keep(g.keep, S, S, 0, NULL) || plans())
    return -1;
  if (cublasCreate(&g.ws0) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(g.ws0, NULL) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(g.ws0, NULL, 0) != CUBLAS_STATUS_SUCCESS)
    return -1;
  attn_cuda_rows r = {.scores = g.filled,
                      .dtype = ATTN_DTYPE_BF16,
                      .b = B,
                      .hq = H,
                      .sq = S,
                      .sk = S,
                      .causal_keep = g.keep,
                      .mask_kind = ATTN_MASK_NONE};
  g.rows16 = r;
  attn_cuda_rows r32 = {.scores = g.s32,
                        .dtype = ATTN_DTYPE_F32,
                        .b = B,
                        .hq = H,
                        .sq = S,
                        .sk = S,
                        .causal_bias = g.bias,
                        .mask_kind = ATTN_MASK_NONE,
                        .safe = 1};
  g.rows32 = r32;
  return cudaDeviceSynchronize() != cudaSuccess;
}

/* ---- the ops -------------------------------------------------------------- */

static int op_empty(void *x) { return hops_empty(NULL); }
static int op_device_count(void *x) {
  int n;
  return cudaGetDeviceCount(&n) != cudaSuccess;
}
static int op_scale(void *x) {
  return attn_cuda_scale(g.scores, ATTN_DTYPE_BF16, (int64_t)SCORES, 1.0f, NULL) != 0;
}
static int op_fill(void *x) { return attn_cuda_masked_fill(&g.rows16, NULL) != 0; }
static int op_softmax16(void *x) { return attn_cuda_softmax(&g.rows16, NULL) != 0; }
static int op_softmax32(void *x) { return attn_cuda_softmax(&g.rows32, NULL) != 0; }
static int op_causal_bias(void *x) { return attn_cuda_causal_bias(g.bias, S, S, 0, NULL) != 0; }
static int op_upcast(void *x) {
  attn_cuda_upcast_job j[3] = {{attn_cuda_view_of(&g.args.q), g.q32},
                               {attn_cuda_view_of(&g.args.k), g.k32},
                               {attn_cuda_view_of(&g.args.v), g.v32}};
  return attn_cuda_upcast(j, 3, NULL) != 0;
}
static int op_downcast(void *x) { return attn_cuda_downcast(g.o32, &g.args.out, NULL) != 0; }
static int op_memcpy(void *x) {
  return cudaMemcpyAsync(g.filled, g.scores, SCORES * 2, cudaMemcpyDeviceToDevice, NULL) !=
         cudaSuccess;
}
static int op_memset(void *x) { return cudaMemsetAsync(g.word, 0, 4, NULL) != cudaSuccess; }
static int op_gemm_blas(void *x) { return attn_gemm_run_blas(g.ctx->blas, x) != 0; }
static int op_gemm_ws0(void *x) { return attn_gemm_run_blas(g.ws0, x) != 0; }
static int op_why_not(void *x) {
  char why[512];
  return attn_why_not(g.engine, g.backend, &g.args, why, sizeof why) != 0;
}
static int op_forward(void *x) { return attn_forward(g.engine, g.backend, &g.args) != 0; }

/* ---- cublasLt with a plan made once --------------------------------------- */

typedef struct {
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulHeuristicResult_t algo;
  const attn_gemm *g;
  void *ws;
  size_t ws_bytes;
} lt_plan;

static int layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols,
                  int64_t ld, int batch, long long stride) {
  return cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld) ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                          sizeof batch) ||
         cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                          sizeof stride);
}

static int lt_make(lt_plan *p, cublasLtHandle_t lt, const attn_gemm *gm, void *ws, size_t wsb) {
  int bd = gm->batch_dim, batch = bd < 0 ? 1 : (int)gm->count[bd];
  int ta = gm->ta == CUBLAS_OP_T, tb = gm->tb == CUBLAS_OP_T, n_res = 0;
  cublasOperation_t opa = gm->ta, opb = gm->tb;
  cublasLtMatmulPreference_t pref;
  *p = (lt_plan){.lt = lt, .g = gm, .ws = ws, .ws_bytes = wsb};
  if (cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa) ||
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb) ||
      layout(&p->la, gm->ab_type, ta ? gm->k : gm->m, ta ? gm->m : gm->k, gm->a.ld, batch,
             bd < 0 ? 0 : gm->a.st[bd]) ||
      layout(&p->lb, gm->ab_type, tb ? gm->n : gm->k, tb ? gm->k : gm->n, gm->b.ld, batch,
             bd < 0 ? 0 : gm->b.st[bd]) ||
      layout(&p->lc, gm->c_type, gm->m, gm->n, gm->c.ld, batch, bd < 0 ? 0 : gm->c.st[bd]) ||
      cublasLtMatmulPreferenceCreate(&pref) ||
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                           sizeof wsb))
    return -1;
  int rc = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &p->algo,
                                          &n_res) != CUBLAS_STATUS_SUCCESS ||
           n_res < 1;
  cublasLtMatmulPreferenceDestroy(pref);
  return rc;
}

static cudaStream_t lt_stream; /* the capture stream while capture_text runs */

static int op_lt(void *x) {
  const lt_plan *p = x;
  const float beta = 0.f;
  return cublasLtMatmul(p->lt, p->op, &p->g->alpha, p->g->a.p, p->la, p->g->b.p, p->lb, &beta,
                        p->g->c.p, p->lc, (void *)p->g->c.p, p->lc, &p->algo.algo, p->ws,
                        p->ws_bytes, lt_stream) != CUBLAS_STATUS_SUCCESS;
}

/* ---- what a call captures to (node kinds, kernel names) ----------------- */

static PFN_cuGraphKernelNodeGetParams_v12000 node_params;
static PFN_cuFuncGetName_v12030 func_name;

static void capture_text(op_fn fn, void *arg, cublasHandle_t h, char *out, size_t len) {
  cudaStream_t s;
  cudaGraph_t graph = NULL;
  cudaGraphNode_t nodes[8];
  size_t n = 8, used = 0;
  snprintf(out, len, "(capture failed)");
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
  if (h) cublasSetStream(h, s);
  lt_stream = s;
  if (h == g.ctx->blas) cublasSetWorkspace(h, g.ctx->blas_ws, ATTN_CUDA_BLAS_WS_BYTES);
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
    fn(arg);
    cudaStreamEndCapture(s, &graph);
  }
  if (h) cublasSetStream(h, NULL);
  lt_stream = NULL;
  if (h == g.ctx->blas) cublasSetWorkspace(h, g.ctx->blas_ws, ATTN_CUDA_BLAS_WS_BYTES);
  if (graph && cudaGraphGetNodes(graph, nodes, &n) == cudaSuccess) {
    out[0] = '\0';
    for (size_t i = 0; i < n && i < 8 && used < len; i++) {
      enum cudaGraphNodeType t;
      struct cudaMemsetParams m;
      CUDA_KERNEL_NODE_PARAMS kp;
      const char *name = "?";
      cudaGraphNodeGetType(nodes[i], &t);
      if (t == cudaGraphNodeTypeMemset && cudaGraphMemsetNodeGetParams(nodes[i], &m) == 0)
        used += (size_t)snprintf(out + used, len - used, "%smemset %zu B", i ? "; " : "",
                                 m.width * m.elementSize);
      else if (t == cudaGraphNodeTypeKernel && node_params &&
               node_params((CUgraphNode)nodes[i], &kp) == CUDA_SUCCESS && kp.func &&
               func_name(&name, kp.func) == CUDA_SUCCESS)
        used += (size_t)snprintf(out + used, len - used, "%skernel %s%s", i ? "; " : "", name,
                                 kp.kern ? " (CUkernel)" : "");
      else
        used += (size_t)snprintf(out + used, len - used, "%snode kind %d", i ? "; " : "", (int)t);
    }
  }
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  cudaStreamDestroy(s);
}

/* ---- timing --------------------------------------------------------------- */

static int device_us(op_fn fn, void *arg, double *out) {
  cudaEvent_t e[2];
  double us[20];
  if (cudaEventCreate(&e[0]) || cudaEventCreate(&e[1])) return -1;
  for (int i = 0; i < 20; i++) {
    float ms = 0;
    if (cudaEventRecord(e[0], NULL) || fn(arg) || cudaEventRecord(e[1], NULL) ||
        cudaEventSynchronize(e[1]) || cudaEventElapsedTime(&ms, e[0], e[1]))
      return -1;
    us[i] = ms * 1e3;
  }
  cudaEventDestroy(e[0]);
  cudaEventDestroy(e[1]);
  *out = bench_pct(us, 20, 0.5);
  return 0;
}

/* One line: idle median/p90, queued median, device median (GEMMs). */
static int measure(const char *name, op_fn fn, void *arg, int with_device, double *us) {
  double idle, p90, queued, dev = 0;
  int per = calls_ / 5;
  for (int i = 0; i < 10; i++)
    if (fn(arg)) goto failed;
  for (int i = 0; i < calls_; i++) {
    if (cudaDeviceSynchronize()) goto failed;
    double t0 = bench_now_us();
    if (fn(arg)) goto failed;
    us[i] = bench_now_us() - t0;
  }
  idle = bench_pct(us, calls_, 0.5), p90 = bench_pct(us, calls_, 0.9);
  for (int r = 0; r < 5; r++) {
    if (cudaDeviceSynchronize() || hops_spin(NULL, 20000)) goto failed;
    for (int i = 0; i < per; i++) {
      double t0 = bench_now_us();
      if (fn(arg)) goto failed;
      us[r * per + i] = bench_now_us() - t0;
    }
  }
  queued = bench_pct(us, 5 * per, 0.5);
  if (cudaDeviceSynchronize() || (with_device && device_us(fn, arg, &dev))) goto failed;
  printf("%-34s idle %7.2f us  p90 %7.2f  queued %7.2f us", name, idle, p90, queued);
  if (with_device) printf("  device %8.1f us", dev);
  printf("\n");
  fflush(stdout);
  return 0;
failed:
  printf("%-34s failed: %s / %s\n", name, attn_last_error(),
         cudaGetErrorString(cudaGetLastError()));
  cudaDeviceSynchronize();
  return -1;
}

static void gemm_rows(double *us, cublasLtHandle_t lt) {
  struct {
    const char *name;
    attn_gemm *gm;
  } gemms[4] = {
      {"QK bf16", &g.qk16}, {"PV bf16", &g.pv16}, {"QK fp32", &g.qk32}, {"PV fp32", &g.pv32}};
  char name[64], text[512];
  for (int i = 0; i < 4; i++) {
    attn_gemm *gm = gemms[i].gm;
    lt_plan p0, pw;
    snprintf(name, sizeof name, "gemm %s cublasGemmStridedBatchedEx", gemms[i].name);
    measure(name, op_gemm_blas, gm, 1, us);
    capture_text(op_gemm_blas, gm, g.ctx->blas, text, sizeof text);
    printf("    captures to: %s\n", text);
    snprintf(name, sizeof name, "gemm %s cuBLAS workspace 0", gemms[i].name);
    measure(name, op_gemm_ws0, gm, 1, us);
    capture_text(op_gemm_ws0, gm, g.ws0, text, sizeof text);
    printf("    captures to: %s\n", text);
    if (lt_make(&p0, lt, gm, NULL, 0) == 0) {
      snprintf(name, sizeof name, "gemm %s cublasLt plan, ws 0", gemms[i].name);
      measure(name, op_lt, &p0, 1, us);
      capture_text(op_lt, &p0, NULL, text, sizeof text);
      printf("    captures to: %s\n", text);
    }
    if (lt_make(&pw, lt, gm, g.ctx->blas_ws, ATTN_CUDA_BLAS_WS_BYTES) == 0) {
      snprintf(name, sizeof name, "gemm %s cublasLt plan, ws 32M", gemms[i].name);
      measure(name, op_lt, &pw, 1, us);
    }
  }
}

static void backend_rows(double *us) {
  const attn_backend bs[4] = {ATTN_BACKEND_NAIVE, ATTN_BACKEND_NAIVE_INPLACE, ATTN_BACKEND_MATH,
                              ATTN_BACKEND_FLASH};
  char name[64];
  for (int i = 0; i < 4; i++) {
    g.backend = bs[i];
    snprintf(name, sizeof name, "attn_why_not %s", attn_backend_name(bs[i]));
    measure(name, op_why_not, NULL, 0, us);
    snprintf(name, sizeof name, "attn_forward %s", attn_backend_name(bs[i]));
    measure(name, op_forward, NULL, 1, us);
  }
}

int main(int argc, char **argv) {
  int spin = 0;
  unsigned flags = 0;
  enum cudaDriverEntryPointQueryResult q;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--spin")) spin = 1;
    else if (!strcmp(argv[i], "--calls") && i + 1 < argc && atoi(argv[i + 1]) >= 20)
      calls_ = atoi(argv[++i]);
    else return fprintf(stderr, "usage: bench_host_ops [--calls N>=20] [--spin]\n"), 2;
  }
  if (spin && cudaSetDeviceFlags(cudaDeviceScheduleSpin) != cudaSuccess) return 1;
  if (attn_cuda_probe(NULL, 0)) return printf("bench_host_ops: no GPU\n"), 0;
  double *us = malloc(sizeof *us * (size_t)calls_);
  cublasLtHandle_t lt;
  if (!us || setup() || cublasLtCreate(&lt)) {
    printf("bench_host_ops: setup failed: %s\n", attn_last_error());
    return 1;
  }
  cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", (void **)&node_params, 12040,
                                   cudaEnableDefault, &q);
  cudaGetDriverEntryPointByVersion("cuFuncGetName", (void **)&func_name, 12040, cudaEnableDefault,
                                   &q);
  cudaGetDeviceFlags(&flags);
  printf("host time per API call, %s, B=%d H=%d S=%d D=%d bf16 causal, %d calls, device flags "
         "0x%x (%s), cuda_graphs %d\n",
         attn_cuda_device_name(0), B, H, S, D, calls_, flags, spin ? "ScheduleSpin" : "default",
         attn_ctx_options(g.engine)->cuda_graphs);
  measure("empty kernel <<<1,32>>>", op_empty, NULL, 0, us);
  measure("cudaGetDeviceCount", op_device_count, NULL, 0, us);
  measure("cudaMemsetAsync 4 B", op_memset, NULL, 0, us);
  measure("cudaMemcpyAsync DtoD 256 MiB", op_memcpy, NULL, 0, us);
  measure("attn_cuda_scale bf16", op_scale, NULL, 0, us);
  measure("attn_cuda_masked_fill bf16 causal", op_fill, NULL, 0, us);
  measure("attn_cuda_softmax bf16", op_softmax16, NULL, 0, us);
  measure("attn_cuda_upcast q,k,v", op_upcast, NULL, 0, us);
  measure("attn_cuda_causal_bias", op_causal_bias, NULL, 0, us);
  measure("attn_cuda_softmax fp32 safe+bias", op_softmax32, NULL, 0, us);
  measure("attn_cuda_downcast", op_downcast, NULL, 0, us);
  gemm_rows(us, lt);
  backend_rows(us);
  free(us);
  attn_ctx_destroy(g.engine);
  return 0;
}
