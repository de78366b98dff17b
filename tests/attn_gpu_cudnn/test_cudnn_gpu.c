/* The cudnn backend on a GPU (label "gpu"; exits 77 only when there is no
 * GPU: with a GPU, a cuDNN that was compiled in but does not load fails):
 *  - results against the fp64 reference (bf16/f16, causal top-left and
 *    bottom-right, GQA, BSHD strides, odd lengths, custom scale, lse), with
 *    the graph form left to the backend, forced to the composite graph,
 *    and forced to the SDPA_FWD node (which may refuse causal inputs), each
 *    through a handle's opts.cudnn_graph; bound k unit roundoffs (BOUND_K);
 *  - refusals in words: masks, bottom-right with Sq > Sk, rows not 16-byte
 *    aligned (cuDNN 9.14 takes them and returns NaN), and a plan cuDNN fails
 *    to build (cuDNN's status string in the reason, the refusal cached);
 *  - a stream of distinct shapes through a handle with cache_capacity 4:
 *    attn_ctx_stats_get shows the evictions, device and host memory stay
 *    bounded, an evicted shape is rebuilt (a miss);
 *  - stream changes and variant-pack reuse: repeated calls are cache hits.
 * With --missing-lib (ctest sets ATTNPROF_CUDNN_LIB to a bogus name): the
 * backend is refused with the reason and AUTO still picks another. */
#include <cuda_runtime_api.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attn/attn_testutil.h"
#include "attn/cuda/cudnn/cudnn_cuda.h"

/* A host problem (inputs, reference, poisoned outputs) and its device copy. */
typedef struct {
  test_problem host;
  void *dmem[5]; /* q, k, v, out, mask */
  float *dlse;
  attn_args dargs;
} gpu_problem;

static test_rng rng;
static attn_ctx *g_ctx; /* the handle the checks run on */

/* 16-bit only: P rounded to the dtype before the PV product, then out: two
 * roundings of <= u each plus fp32 accumulation (worst seen on the H200,
 * 2026-11-30: 0.64u). */
#define BOUND_K 4.0

static double bound(attn_dtype dt) { return BOUND_K * test_unit_roundoff(dt); }

/* lse (cuDNN's fp32 softmax statistics: scores from 16-bit tensor-core
 * products, its own exp2 and summation order): 2^14 fp32 u, about the 1e-3
 * this test used before issue 11; no device run has measured it yet. */
#define LSE_BOUND (0x1p14 * 0x1p-24)

static attn_ctx_stats stats(void) {
  attn_ctx_stats s;
  attn_ctx_stats_get(g_ctx, &s);
  return s;
}

/* A handle with the environment's options and these overrides. */
static attn_ctx *engine(int graph, size_t capacity) {
  attn_ctx_opts o = attn_ctx_opts_default();
  if (attn_ctx_opts_from_env(&o)) fail_msg("engine options: %s", attn_last_error());
  o.cudnn_graph = (attn_cudnn_graph)graph;
  if (capacity) o.cache_capacity = capacity;
  return test_engine_new(&o);
}

static int gpu_make(gpu_problem *g, const problem_spec *s) {
  memset(g, 0, sizeof *g);
  if (problem_make(&g->host, s, &rng)) return -1;
  g->dargs = g->host.args;
  attn_tensor *t[4] = {&g->dargs.q, &g->dargs.k, &g->dargs.v, &g->dargs.out};
  for (int i = 0; i < 4; i++) {
    if (cudaMalloc(&g->dmem[i], g->host.mem_bytes[i]) != cudaSuccess) return -1;
    cudaMemcpy(g->dmem[i], g->host.mem[i], g->host.mem_bytes[i], cudaMemcpyHostToDevice);
    t[i]->data = g->dmem[i], t[i]->device = 0;
  }
  if (g->host.mem[4]) { /* the mask, where the tensors are */
    if (cudaMalloc(&g->dmem[4], g->host.mem_bytes[4]) != cudaSuccess) return -1;
    cudaMemcpy(g->dmem[4], g->host.mem[4], g->host.mem_bytes[4], cudaMemcpyHostToDevice);
    g->dargs.mask.data = g->dmem[4], g->dargs.mask.device = 0;
  }
  if (s->lse && cudaMalloc((void **)&g->dlse, (g->host.lse_n + 16) * sizeof(float))) return -1;
  g->dargs.lse = s->lse ? g->dlse : NULL;
  return 0;
}

static void gpu_free(gpu_problem *g) {
  for (int i = 0; i < 5; i++) cudaFree(g->dmem[i]);
  cudaFree(g->dlse);
  problem_free(&g->host);
}

/* Poisons out and lse (host and device), runs, copies the results back. */
static attn_status gpu_run(gpu_problem *g, cudaStream_t stream) {
  problem_poison(&g->host);
  cudaMemcpy(g->dmem[3], g->host.mem[3], g->host.mem_bytes[3], cudaMemcpyHostToDevice);
  if (g->dlse)
    cudaMemcpy(g->dlse, g->host.args.lse, (g->host.lse_n + 16) * sizeof(float),
               cudaMemcpyHostToDevice);
  g->dargs.stream = stream;
  attn_status st = attn_forward(g_ctx, ATTN_BACKEND_CUDNN, &g->dargs);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  cudaMemcpy(g->host.mem[3], g->dmem[3], g->host.mem_bytes[3], cudaMemcpyDeviceToHost);
  if (g->dlse)
    cudaMemcpy(g->host.args.lse, g->dlse, (g->host.lse_n + 16) * sizeof(float),
               cudaMemcpyDeviceToHost);
  return st;
}

/* Checks a finished run against the reference, printing the plan used;
 * returns 1 when right. */
static int check_run(gpu_problem *g, const char *what) {
  char desc[256], plan[512];
  problem_describe(&g->host.spec, desc, sizeof desc);
  attn_cudnn_describe(g_ctx, &g->dargs, plan, sizeof plan);
  check_result c = problem_check(&g->host, 0, bound(g->host.spec.dtype), LSE_BOUND);
  printf("  %-9s %s\n            -> %s\n            rel_err %.3e lse_err %.3e %s\n", what, desc,
         plan, c.rel_err, c.lse_err, c.ok ? "ok" : c.why);
  return c.ok;
}

static void expect_correct(gpu_problem *g, const char *what) { assert_true(check_run(g, what)); }

static problem_spec spec(attn_dtype dt, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t sk,
                         int64_t d, attn_causal causal, test_layout layout, int lse) {
  problem_spec s;
  memset(&s, 0, sizeof s);
  s.dtype = dt, s.b = b, s.hq = hq, s.hkv = hkv, s.sq = sq, s.sk = sk, s.d = d;
  s.causal = causal, s.layout = layout, s.lse = lse;
  return s;
}

/* Runs one spec; required: must run and match. Otherwise a refusal is fine
 * if it is cuDNN saying so (its status string in the reason), or the node's
 * known limit. Returns 1 when the outcome is acceptable; every case runs, so
 * one device run shows them all. */
static int run_case(const problem_spec *s, int required, const char *what) {
  gpu_problem g;
  if (gpu_make(&g, s)) return 0;
  attn_status st = gpu_run(&g, NULL);
  int ok;
  if (st != ATTN_STATUS_OK && !required) {
    const char *e = attn_last_error();
    printf("  %-9s refused: %s\n", what, e);
    ok = st == ATTN_STATUS_UNSUPPORTED &&
         (strstr(e, "CUDNN_STATUS_") != NULL || strstr(e, "no causal mask") != NULL);
  } else if (st != ATTN_STATUS_OK) {
    printf("  %-9s FAILED: %s\n", what, attn_last_error());
    ok = 0;
  } else {
    ok = check_run(&g, what);
  }
  gpu_free(&g);
  return ok;
}

static void matches_reference(void **state) {
  (void)state;
  const problem_spec need[] = {
      spec(ATTN_DTYPE_BF16, 2, 4, 4, 128, 128, 64, ATTN_CAUSAL_NONE, LAYOUT_BHSD, 1),
      spec(ATTN_DTYPE_BF16, 2, 4, 2, 256, 256, 128, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 1),
      spec(ATTN_DTYPE_F16, 1, 4, 4, 64, 192, 64, ATTN_CAUSAL_BOTTOM_RIGHT, LAYOUT_BHSD, 1),
      spec(ATTN_DTYPE_BF16, 2, 8, 2, 200, 200, 64, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 0),
      spec(ATTN_DTYPE_BF16, 1, 4, 4, 100, 300, 128, ATTN_CAUSAL_NONE, LAYOUT_BSHD, 1),
      spec(ATTN_DTYPE_F16, 2, 2, 2, 130, 130, 64, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BSHD, 1),
  };
  const problem_spec extra[] = {
      spec(ATTN_DTYPE_BF16, 1, 2, 2, 128, 128, 256, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 1),
      spec(ATTN_DTYPE_F16, 1, 2, 2, 1, 256, 128, ATTN_CAUSAL_NONE, LAYOUT_BHSD, 1),
      spec(ATTN_DTYPE_BF16, 1, 2, 2, 64, 64, 96, ATTN_CAUSAL_NONE, LAYOUT_BHSD, 0),
  };
  static const char *const graph_name[] = {"auto", "composite", "node"};
  int bad = 0;
  attn_ctx *keep = g_ctx;
  for (int graph = 0; graph < 3; graph++) {
    g_ctx = engine(graph, 0);
    printf("graph: %s (opts.cudnn_graph)\n", graph_name[graph]);
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
      problem_spec s = need[i];
      if (i == 5) s.scale = 0.3;
      /* The node takes no causal mask (cuDNN < 9.21) and may have no engine
       * here: forced, it is an extra. */
      bad += !run_case(&s, graph != 2, graph != 2 ? "required" : "node");
    }
    for (size_t i = 0; graph == 0 && i < sizeof extra / sizeof extra[0]; i++)
      bad += !run_case(&extra[i], 0, "extra");
    attn_ctx_destroy(g_ctx);
  }
  g_ctx = keep;
  assert_int_equal(bad, 0);
}

static void refused_in_words(void **state) {
  (void)state;
  char why[512];
  attn_ctx_stats before, after;
  problem_spec s = spec(ATTN_DTYPE_BF16, 1, 2, 2, 64, 64, 64, ATTN_CAUSAL_NONE, LAYOUT_BHSD, 0);
  s.mask = ATTN_MASK_BOOL;
  s.mask_dtype = ATTN_DTYPE_BOOL;
  gpu_problem g;
  assert_int_equal(gpu_make(&g, &s), 0);
  before = stats();
  assert_int_equal(attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, why, sizeof why),
                   ATTN_STATUS_UNSUPPORTED);
  printf("  mask: %s\n", why);
  assert_non_null(strstr(why, "mask"));
  gpu_free(&g);

  s = spec(ATTN_DTYPE_BF16, 1, 2, 2, 96, 64, 64, ATTN_CAUSAL_BOTTOM_RIGHT, LAYOUT_BHSD, 0);
  assert_int_equal(gpu_make(&g, &s), 0);
  assert_int_equal(attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, why, sizeof why),
                   ATTN_STATUS_UNSUPPORTED);
  printf("  bottom-right Sq > Sk: %s\n", why);
  assert_non_null(strstr(why, "Sq > Sk"));
  after = stats();
  assert_int_equal(after.cache_misses, before.cache_misses); /* refused before asking cuDNN */
  gpu_free(&g);
}

/* Rows of D + 3 elements are not 16-byte aligned. cuDNN 9.14 takes them and
 * reads them as if they were (NaN out, seen on the H200), so the backend
 * refuses them in words, before asking cuDNN. */
static void unaligned_rows_refused(void **state) {
  (void)state;
  char why[512];
  problem_spec s =
      spec(ATTN_DTYPE_BF16, 1, 2, 2, 128, 128, 64, ATTN_CAUSAL_NONE, LAYOUT_BHSD_PADDED, 0);
  gpu_problem g;
  attn_ctx_stats before, after;
  assert_int_equal(gpu_make(&g, &s), 0);
  before = stats();
  assert_int_equal(attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, why, sizeof why),
                   ATTN_STATUS_UNSUPPORTED);
  after = stats();
  printf("  padded rows: %s\n", why);
  assert_non_null(strstr(why, "16-byte aligned"));
  assert_int_equal(after.cache_misses, before.cache_misses);
  gpu_free(&g);
}

/* A plan cuDNN cannot build (the fault hook breaks Q's descriptor): the
 * reason carries cuDNN's status string, the refusal is cached, forward says
 * the same; with the hook off the same inputs run. */
static void failed_plan_says_cudnn_status(void **state) {
  (void)state;
  char why[512], again[512];
  problem_spec s =
      spec(ATTN_DTYPE_BF16, 1, 2, 2, 128, 128, 64, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 1);
  gpu_problem g;
  attn_ctx_stats before, after;
  assert_int_equal(gpu_make(&g, &s), 0);
  attn_cudnn_set_fault(g_ctx, 1);
  attn_status st = attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, why, sizeof why);
  printf("  failed plan: %s\n", why);
  assert_int_equal(st, ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(why, "CUDNN_STATUS_"));
  before = stats();
  assert_int_equal(attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, again, sizeof again), st);
  after = stats();
  assert_string_equal(why, again);
  assert_int_equal(after.cache_misses, before.cache_misses); /* the refusal came from the cache */
  assert_true(after.cache_hits > before.cache_hits);
  assert_int_equal(attn_forward(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs), ATTN_STATUS_UNSUPPORTED);
  assert_non_null(strstr(attn_last_error(), "CUDNN_STATUS_"));
  attn_cudnn_set_fault(g_ctx, 0);
  assert_int_equal(gpu_run(&g, NULL), ATTN_STATUS_OK);
  expect_correct(&g, "no fault");
  gpu_free(&g);
}

static size_t rss_bytes(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  if (f) fclose(f);
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static size_t device_free(void) {
  size_t free_b = 0, total = 0;
  cudaMemGetInfo(&free_b, &total);
  return free_b;
}

/* Twelve shapes through a cache of four. */
static void many_shapes_stay_bounded(void **state) {
  (void)state;
  enum { CAP = 4, N = 12 };
  attn_ctx *keep = g_ctx;
  g_ctx = engine(0, CAP);
  attn_ctx_stats start = stats(), info;
  assert_int_equal(start.cache_capacity, CAP);
  size_t free_at_cap = 0, rss_at_cap = 0;
  for (int i = 0; i < N; i++) {
    problem_spec s = spec(ATTN_DTYPE_BF16, 1, 2, 2, 64 + 16 * i, 64 + 16 * i, 64,
                          ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 1);
    gpu_problem g;
    assert_int_equal(gpu_make(&g, &s), 0);
    assert_int_equal(gpu_run(&g, NULL), ATTN_STATUS_OK);
    check_result c = problem_check(&g.host, 0, bound(s.dtype), LSE_BOUND);
    if (!c.ok) printf("  shape %d: %s\n", i, c.why);
    assert_true(c.ok);
    gpu_free(&g);
    info = stats();
    assert_true(info.cache_entries <= CAP);
    if (i == CAP - 1) free_at_cap = device_free(), rss_at_cap = rss_bytes();
  }
  size_t free_end = device_free(), rss_end = rss_bytes();
  double dev_mb = ((double)free_at_cap - (double)free_end) / 1048576.0;
  double rss_mb = ((double)rss_end - (double)rss_at_cap) / 1048576.0;
  printf("  %d shapes, cache %d: %zu entries, %llu evictions, device memory %+.1f MiB and "
         "host RSS %+.1f MiB from shape %d to %d\n",
         N, CAP, info.cache_entries,
         (unsigned long long)(info.cache_evictions - start.cache_evictions), dev_mb, rss_mb, CAP,
         N);
  assert_true(info.cache_evictions - start.cache_evictions >= N - CAP);
  assert_true(dev_mb < 64.0);
  assert_true(rss_mb < 128.0);
  /* The first shape was evicted: asking again builds it again. */
  problem_spec s = spec(ATTN_DTYPE_BF16, 1, 2, 2, 64, 64, 64, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 1);
  gpu_problem g;
  assert_int_equal(gpu_make(&g, &s), 0);
  start = stats();
  assert_int_equal(gpu_run(&g, NULL), ATTN_STATUS_OK);
  info = stats();
  assert_int_equal(info.cache_misses, start.cache_misses + 1);
  expect_correct(&g, "rebuilt");
  gpu_free(&g);
  attn_ctx_destroy(g_ctx);
  g_ctx = keep;
}

/* One problem on three streams and twice with the same pointers. */
static void streams_and_pack_reuse(void **state) {
  (void)state;
  problem_spec s =
      spec(ATTN_DTYPE_BF16, 2, 4, 4, 256, 256, 64, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 1);
  gpu_problem g;
  cudaStream_t s1, s2;
  assert_int_equal(cudaStreamCreate(&s1), cudaSuccess);
  assert_int_equal(cudaStreamCreate(&s2), cudaSuccess);
  assert_int_equal(gpu_make(&g, &s), 0);
  cudaStream_t order[4] = {s1, NULL, s2, s2};
  attn_ctx_stats before, after;
  for (int i = 0; i < 4; i++) {
    before = stats();
    assert_int_equal(gpu_run(&g, order[i]), ATTN_STATUS_OK);
    after = stats();
    printf("  call %d: cache hits %llu -> %llu, misses %llu -> %llu\n", i + 1,
           (unsigned long long)before.cache_hits, (unsigned long long)after.cache_hits,
           (unsigned long long)before.cache_misses, (unsigned long long)after.cache_misses);
    if (i > 0) assert_int_equal(after.cache_misses, before.cache_misses);
    if (i > 0) assert_true(after.cache_hits > before.cache_hits); /* the plan was found */
    expect_correct(&g, i == 3 ? "same ptrs" : "stream");
  }
  gpu_free(&g);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

/* ATTNPROF_CUDNN_LIB points at nothing: refused with the reason, and AUTO
 * moves on to another backend. */
static int missing_library(void) {
  char why[512], log[4096];
  problem_spec s = spec(ATTN_DTYPE_BF16, 1, 2, 2, 64, 64, 64, ATTN_CAUSAL_TOP_LEFT, LAYOUT_BHSD, 0);
  gpu_problem g;
  attn_backend picked = ATTN_BACKEND_AUTO;
  if (gpu_make(&g, &s)) return 1;
  attn_status st = attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, why, sizeof why);
  printf("cudnn with %s=%s: %s\n", "ATTNPROF_CUDNN_LIB", getenv("ATTNPROF_CUDNN_LIB"), why);
  int bad = st == ATTN_STATUS_OK || !strstr(why, "ATTNPROF_CUDNN_LIB");
  st = attn_select(g_ctx, &g.dargs, &picked, log, sizeof log);
  printf("AUTO: %s (picked %s)\n%s", attn_status_string(st), attn_backend_name(picked), log);
  bad |= st != ATTN_STATUS_OK || picked == ATTN_BACKEND_CUDNN;
  bad |= attn_forward(g_ctx, ATTN_BACKEND_AUTO, &g.dargs) != ATTN_STATUS_OK;
  gpu_free(&g);
  return bad;
}

int main(int argc, char **argv) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    printf("skipped: no CUDA device (%s)\n", err ? cudaGetErrorString(err) : "count 0");
    return 77;
  }
  rng.s = test_seed(0xc0ffee);
  g_ctx = test_engine();
  if (argc > 1 && strcmp(argv[1], "--missing-lib") == 0) return missing_library();
  char why[512], plan[512];
  problem_spec s = spec(ATTN_DTYPE_BF16, 1, 1, 1, 64, 64, 64, ATTN_CAUSAL_NONE, LAYOUT_BHSD, 0);
  gpu_problem g;
  if (gpu_make(&g, &s)) return 1;
  attn_status st = attn_why_not(g_ctx, ATTN_BACKEND_CUDNN, &g.dargs, why, sizeof why);
  attn_cudnn_describe(g_ctx, &g.dargs, plan, sizeof plan);
  gpu_free(&g);
  if (st != ATTN_STATUS_OK) {
    /* cuDNN was compiled in and a GPU is here: not loading is a failure. */
    printf("FAIL: a GPU is here and cudnn is built in, but it refuses a plain bf16 problem: "
           "%s\n",
           why);
    return 1;
  }
  printf("cudnn: %s\n", plan);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matches_reference),        cmocka_unit_test(refused_in_words),
      cmocka_unit_test(unaligned_rows_refused),   cmocka_unit_test(failed_plan_says_cudnn_status),
      cmocka_unit_test(many_shapes_stay_bounded), cmocka_unit_test(streams_and_pack_reuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
