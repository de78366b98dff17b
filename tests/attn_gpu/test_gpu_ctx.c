/* The engine handle on the GPU (label "gpu"; exits 77 without one):
 *
 *  - one handle per CUDA backend of the table (naive, naive_inplace and math
 *    once with cuda_graphs = 0 and once with 1), a sequence of calls that
 *    change what a cache could wrongly keep: the same problem in new
 *    buffers, new contents in the same buffers, the same shape with other
 *    strides, other shapes and dtypes, the stream (default, two others),
 *    then earlier problems again. Every call runs three times (the graph
 *    mode's eager, capture, replay), each output poisoned and checked
 *    against the fp64 reference, so a stale plan, graph or mask fails it;
 *    in graph mode the handle's statistics must show hits, and math once
 *    more through a cache of 2 entries, which must evict;
 *    Every backend must take every problem: they are chosen inside each
 *    backend's documented limits, so a refusal (a cuDNN that does not load
 *    included) is a failure;
 *  - two threads at once, each with its own handle, each checking its own
 *    outputs; then one handle made with locked = 1 shared by two threads;
 *  - AUTO's choice over a grid, against a rule written below from the
 *    backends' documented limits (not read from dispatch.c).
 *
 * Bound: ||out - ref|| / ||ref|| and the lse error within k unit roundoffs
 * of the dtype (bound_k). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "attn_gpu/gpu_harness.h"
#include "attnprof/device.h"

static int failures, passes;

static double bound_k(attn_dtype dt) {
  /* f32: no TF32; fp32 sums over <= 256 keys and dims, ~sqrt(n) u. */
  if (dt == ATTN_DTYPE_F32) return 64;
  /* 16-bit: up to three roundings to the dtype in a chain (naive: scores,
   * probabilities, out; fused: P before the PV product, out), each <= u. */
  return 4;
}

static double tol(attn_dtype dt) { return bound_k(dt) * gpu_unit_roundoff(dt); }

static int nan_rows(attn_backend b) {
  return b == ATTN_BACKEND_NAIVE || b == ATTN_BACKEND_NAIVE_INPLACE;
}

static int is_baseline(attn_backend b) {
  return b == ATTN_BACKEND_NAIVE || b == ATTN_BACKEND_NAIVE_INPLACE || b == ATTN_BACKEND_MATH;
}

/* ---- one handle, many calls -------------------------------------------------- */

enum { N_CASES = 6 };

/* Inside every CUDA backend's limits: f16/bf16, D of 64 or 128, no mask, D
 * contiguous, rows 16-byte aligned, bottom-right only with Sq <= Sk. Cases 0
 * and 1 hold the same problem in different buffers; 2 and 3 are 0's shape in
 * other layouts. */
static const gpu_problem cases[N_CASES] = {
    {.b = 2,
     .hq = 4,
     .hkv = 2,
     .sq = 128,
     .sk = 128,
     .d = 64,
     .dtype = ATTN_DTYPE_BF16,
     .causal = ATTN_CAUSAL_TOP_LEFT,
     .layout = GPU_LAYOUT_BHSD,
     .lse = 1},
    {.b = 2,
     .hq = 4,
     .hkv = 2,
     .sq = 128,
     .sk = 128,
     .d = 64,
     .dtype = ATTN_DTYPE_BF16,
     .causal = ATTN_CAUSAL_TOP_LEFT,
     .layout = GPU_LAYOUT_BHSD,
     .lse = 1},
    {.b = 2,
     .hq = 4,
     .hkv = 2,
     .sq = 128,
     .sk = 128,
     .d = 64,
     .dtype = ATTN_DTYPE_BF16,
     .causal = ATTN_CAUSAL_TOP_LEFT,
     .layout = GPU_LAYOUT_BSHD,
     .lse = 1},
    {.b = 2,
     .hq = 4,
     .hkv = 2,
     .sq = 128,
     .sk = 128,
     .d = 64,
     .dtype = ATTN_DTYPE_BF16,
     .causal = ATTN_CAUSAL_TOP_LEFT,
     .layout = GPU_LAYOUT_PADDED,
     .pad = 8,
     .lse = 1},
    {.b = 1,
     .hq = 2,
     .hkv = 2,
     .sq = 192,
     .sk = 256,
     .d = 128,
     .dtype = ATTN_DTYPE_F16,
     .causal = ATTN_CAUSAL_NONE,
     .layout = GPU_LAYOUT_BHSD,
     .lse = 1},
    {.b = 1,
     .hq = 8,
     .hkv = 1,
     .sq = 64,
     .sk = 256,
     .d = 64,
     .dtype = ATTN_DTYPE_BF16,
     .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
     .layout = GPU_LAYOUT_BSHD,
     .lse = 0},
};

/* The sequence: -1 refills case 0's buffers with new contents first. */
static const int order[] = {0, 1, 0, -1, 1, 2, 3, 0, 4, 5, 0, -1, 2, 5, 4, 1, 3};

static int make_cases(gpu_case *c, uint64_t seed) {
  for (int i = 0; i < N_CASES; i++) {
    uint64_t rng = seed + (uint64_t)(i == 1 ? 0 : i); /* 1: the contents of 0 */
    if (gpu_case_create(&c[i], &cases[i], 0, &rng)) {
      for (int j = 0; j < i; j++) gpu_case_destroy(&c[j]);
      return -1;
    }
  }
  return 0;
}

/* The sequence on one handle; streams rotate default, s1, s2. capacity:
 * the handle's cache_capacity (0: the default). */
static void sequence(attn_backend b, int graphs, size_t capacity, cudaStream_t *streams) {
  attn_ctx_opts o = attn_ctx_opts_default();
  o.cuda_graphs = graphs, o.cache_capacity = capacity;
  attn_ctx *ctx = gpu_engine_new(&o);
  gpu_case c[N_CASES];
  uint64_t fresh = 0xf00d + (uint64_t)b;
  int before = failures, calls = 0;
  if (make_cases(c, 4242)) {
    printf("FAIL %s: could not set up the cases\n", attn_backend_name(b));
    failures++;
    attn_ctx_destroy(ctx);
    return;
  }
  for (size_t i = 0; i < sizeof order / sizeof order[0] && failures == before; i++) {
    int k = order[i];
    if (k < 0 && gpu_case_refill(&c[0], &fresh)) {
      printf("FAIL %s: could not refill case 0\n", attn_backend_name(b));
      failures++;
      break;
    }
    k = k < 0 ? 0 : k;
    c[k].dev.stream = streams[i % 3];
    gpu_outcome out;
    int rc = gpu_case_run(ctx, &c[k], b, tol(c[k].p.dtype), nan_rows(b), &out);
    if (rc != GPU_RUN_PASSED) {
      char desc[256];
      gpu_problem_describe(&c[k].p, desc, sizeof desc);
      printf("FAIL %s (cuda_graphs %d), call %zu of the sequence, case %d on stream %d%s: %s\n"
             "     problem: %s\n",
             attn_backend_name(b), graphs, i + 1, k, (int)(i % 3),
             rc == GPU_RUN_REFUSED ? " refused" : "", out.failure, desc);
      failures++;
    }
    calls++;
  }
  attn_ctx_stats s;
  attn_ctx_stats_get(ctx, &s);
  /* Graph mode replays what it captured: cache hits; a cache of 2 entries
   * for the sequence's 6 problems must evict, and the outputs stayed right. */
  if (failures == before && graphs && s.cache_hits == 0) {
    printf("FAIL %s, cuda_graphs 1: no cache hit over the sequence (no graph replayed)\n",
           attn_backend_name(b));
    failures++;
  }
  if (failures == before && graphs && capacity && capacity < N_CASES && !s.cache_evictions) {
    printf("FAIL %s, cache_capacity %zu: no eviction over %d problems\n", attn_backend_name(b),
           capacity, N_CASES);
    failures++;
  }
  if (failures == before) {
    passes++;
    printf("ok   %-14s cuda_graphs %d cache_capacity %zu: %d steps x 3 calls matched; cache %zu "
           "entries, %llu hits, %llu misses, %llu evictions\n",
           attn_backend_name(b), graphs, s.cache_capacity, calls, s.cache_entries,
           (unsigned long long)s.cache_hits, (unsigned long long)s.cache_misses,
           (unsigned long long)s.cache_evictions);
  }
  for (int i = 0; i < N_CASES; i++) gpu_case_destroy(&c[i]);
  attn_ctx_destroy(ctx);
}

static void all_sequences(void) {
  cudaStream_t streams[3] = {NULL, NULL, NULL};
  if (cudaStreamCreate(&streams[1]) != cudaSuccess ||
      cudaStreamCreate(&streams[2]) != cudaSuccess) {
    printf("FAIL: cudaStreamCreate\n");
    failures++;
    return;
  }
  attn_backend_info info[32];
  size_t n = attn_backend_list(info, 32);
  for (size_t i = 0; i < n && i < 32; i++) {
    if (info[i].device_kind < 0) continue;
    sequence(info[i].backend, 0, 0, streams);
    if (is_baseline(info[i].backend)) sequence(info[i].backend, 1, 0, streams);
    if (info[i].backend == ATTN_BACKEND_MATH) sequence(info[i].backend, 1, 2, streams);
  }
  cudaStreamDestroy(streams[1]);
  cudaStreamDestroy(streams[2]);
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct {
  attn_ctx *ctx;
  uint64_t seed;
  int passed, wanted;
  char failure[800];
} worker;

/* Random plain problems (gpu_problem_draw) on math, efficient, flash and
 * AUTO in turn, each checked. */
static void *work(void *arg) {
  worker *w = arg;
  static const attn_backend bs[] = {ATTN_BACKEND_MATH, ATTN_BACKEND_EFFICIENT, ATTN_BACKEND_FLASH,
                                    ATTN_BACKEND_AUTO};
  uint64_t rng = w->seed;
  for (int i = 0; i < w->wanted; i++) {
    gpu_problem p = gpu_problem_draw(&rng, i % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16, 1);
    gpu_case c;
    gpu_outcome o;
    char desc[256];
    gpu_problem_describe(&p, desc, sizeof desc);
    if (gpu_case_create(&c, &p, 0, &rng)) {
      snprintf(w->failure, sizeof w->failure, "could not set up %s", desc);
      return NULL;
    }
    attn_backend b = bs[i % 4];
    int rc = gpu_case_run(w->ctx, &c, b, tol(p.dtype), 0, &o);
    gpu_case_destroy(&c);
    if (rc != GPU_RUN_PASSED) {
      snprintf(w->failure, sizeof w->failure, "%s%s on %.250s: %.500s", attn_backend_name(b),
               rc == GPU_RUN_REFUSED ? " refused" : "", desc, o.failure);
      return NULL;
    }
    w->passed++;
  }
  return NULL;
}

static void two_threads(const char *what, worker *w) {
  pthread_t t[2];
  int started = 0;
  for (int i = 0; i < 2; i++) started += pthread_create(&t[i], NULL, work, &w[i]) == 0;
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  int bad = started != 2;
  for (int i = 0; i < 2; i++)
    if (w[i].failure[0] || w[i].passed != w[i].wanted) {
      printf("FAIL %s, thread %d: %d of %d passed; %s\n", what, i, w[i].passed, w[i].wanted,
             w[i].failure);
      bad = 1;
    }
  if (bad) failures++;
  else passes++, printf("ok   %s: %d + %d problems matched\n", what, w[0].passed, w[1].passed);
}

static void threads(void) {
  attn_ctx *a = gpu_engine_new(NULL), *b = gpu_engine_new(NULL);
  worker w[2] = {{a, 1001, 0, 16, ""}, {b, 2002, 0, 16, ""}};
  two_threads("two handles, two threads", w);
  attn_ctx_destroy(a), attn_ctx_destroy(b);
  attn_ctx_opts o = attn_ctx_opts_default();
  o.locked = 1;
  attn_ctx *shared = gpu_engine_new(&o);
  worker s[2] = {{shared, 3003, 0, 16, ""}, {shared, 4004, 0, 16, ""}};
  two_threads("one locked handle, two threads", s);
  attn_ctx_destroy(shared);
}

/* ---- AUTO ------------------------------------------------------------------------
 * The rule, from the documented limits (attn.h, README, each backend's file
 * comment), in the preference cudnn, flash, efficient, math: the fixed order
 * where nothing was measured, and on the H200 the order its measured sweep
 * ranks at the causal points nearest this grid (S = 128 is nearest S = 1024
 * or 4096: scripts/auto_table/sweep-h200.txt ranks flash,
 * cudnn, efficient, math there at D64 (S 1024) and D128 (S 4096), and
 * D256 (S 4096: the rule's flash first, cuDNN allowed);
 * tests/attn/test_auto_table.c checks the table against the same file). A
 * regenerated table that ranks otherwise at these points must change this
 * rule too.
 *   cudnn     f16/bf16, no mask, D contiguous, D % 8 == 0, D <= 256; which
 *             head dims have an engine is cuDNN's to say, and D 64 and 128
 *             always do (test_cudnn_gpu requires them), so elsewhere the pick
 *             may be cudnn or the next;
 *   flash     f16/bf16, no mask, D contiguous, D in {64, 96, 128, 256};
 *   efficient any dtype, any mask, any strides, D <= 256;
 *   math      the rest (its scores fit here). */
typedef struct {
  attn_backend want, also; /* also: allowed instead when cuDNN decides */
} auto_rule;

static auto_rule expected_gpu(const gpu_problem *p, int have_cudnn) {
  int half = p->dtype != ATTN_DTYPE_F32, d_contig = p->layout != GPU_LAYOUT_D_STRIDED;
  int plain = half && p->mask == ATTN_MASK_NONE && d_contig;
  int flash_d = p->d == 64 || p->d == 96 || p->d == 128 || p->d == 256;
  attn_backend next = plain && flash_d ? ATTN_BACKEND_FLASH
                      : p->d <= 256    ? ATTN_BACKEND_EFFICIENT
                                       : ATTN_BACKEND_MATH;
  if (plain && (p->d == 64 || p->d == 128)) /* measured: flash first, and it always takes these */
    return (auto_rule){ATTN_BACKEND_FLASH, ATTN_BACKEND_FLASH};
  if (have_cudnn && plain && p->d % 8 == 0 && p->d <= 256)
    return (auto_rule){next, ATTN_BACKEND_CUDNN};
  return (auto_rule){next, next};
}

static void auto_grid(void) {
  static const attn_dtype dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
  static const int64_t dims[] = {64, 80, 128, 256, 320};
  static const int layouts[] = {GPU_LAYOUT_BHSD, GPU_LAYOUT_D_STRIDED};
  attn_backend_info info[32];
  size_t n = attn_backend_list(info, 32);
  int have_cudnn = 0, cells = 0, bad = 0;
  for (size_t i = 0; i < n && i < 32; i++)
    have_cudnn |= info[i].backend == ATTN_BACKEND_CUDNN && info[i].device_kind >= 0;
  attn_ctx *ctx = gpu_engine_new(NULL);
  uint64_t rng = 777;
  for (int di = 0; di < 3; di++)
    for (int ki = 0; ki < 5; ki++)
      for (int m = 0; m < 2; m++)
        for (int li = 0; li < 2; li++, cells++) {
          gpu_problem p = {.b = 1,
                           .hq = 2,
                           .hkv = 2,
                           .sq = 128,
                           .sk = 128,
                           .d = dims[ki],
                           .dtype = dts[di],
                           .causal = ATTN_CAUSAL_TOP_LEFT,
                           .layout = layouts[li],
                           .lse = 1};
          p.mask = m ? ATTN_MASK_BOOL : ATTN_MASK_NONE;
          p.mask_dtype = ATTN_DTYPE_BOOL;
          auto_rule r = expected_gpu(&p, have_cudnn);
          gpu_case c;
          char desc[256], log[4096] = "";
          gpu_problem_describe(&p, desc, sizeof desc);
          if (gpu_case_create(&c, &p, 0, &rng)) {
            bad++;
            continue;
          }
          attn_backend got = ATTN_BACKEND_COUNT;
          attn_status st = attn_select(ctx, &c.dev, &got, log, sizeof log);
          if (st || (got != r.want && got != r.also)) {
            printf("FAIL AUTO on %s: picked %s (%s), the rule says %s%s%s; its log:\n%s", desc,
                   st ? "nothing" : attn_backend_name(got), attn_status_string(st),
                   attn_backend_name(r.want), r.also != r.want ? " or " : "",
                   r.also != r.want ? attn_backend_name(r.also) : "", log);
            bad++;
          } else {
            gpu_outcome o; /* and what AUTO runs is right */
            if (gpu_case_run(ctx, &c, ATTN_BACKEND_AUTO, tol(p.dtype), 0, &o) != GPU_RUN_PASSED) {
              printf("FAIL AUTO's output on %s: %s\n", desc, o.failure);
              bad++;
            }
          }
          gpu_case_destroy(&c);
        }
  attn_ctx_destroy(ctx);
  printf("%s AUTO: %d inputs, %d against the rule (cudnn %s)\n", bad ? "FAIL" : "ok  ", cells, bad,
         have_cudnn ? "compiled in" : "not in this build");
  bad ? failures++ : passes++;
}

int main(void) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  printf("device: %s\n", attn_cuda_device_name(0));
  all_sequences();
  threads();
  auto_grid();
  printf("%d passed, %d failed: %s\n", passes, failures, failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
