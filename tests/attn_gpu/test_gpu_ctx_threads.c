/* Two engine handles on two threads at once on one GPU (label "gpu"; exits
 * 77 without one): each thread makes its own handle and its own stream and
 * runs flash, efficient, naive (and cudnn where it is compiled in and loads)
 * for a few rounds over its own shapes, the two threads sharing none. Every
 * call runs three times, out and lse poisoned first and checked against the
 * fp64 reference (gpu_case_run). The threads start together behind a
 * barrier, so their launches overlap: state kept outside the handle (a
 * shared-memory opt-in, a plan, a cached map) that one thread sets and the
 * other relies on shows up as a refused or wrong call, and the test fails.
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

enum { ROUNDS = 2, N_SHAPES = 3, MAX_BACKENDS = 4 };

static double bound_k(attn_dtype dt) {
  (void)dt;
  /* 16-bit: up to three roundings to the dtype in a chain (naive: scores,
   * probabilities, out; fused: P before the PV product, out), each <= u. */
  return 4;
}

/* Inside every listed backend's limits (f16/bf16, D 64 or 128, no mask, D
 * contiguous, rows 16-byte aligned), each thread with its own shapes. */
static const gpu_problem shapes[2][N_SHAPES] = {
    {{.b = 2,
      .hq = 4,
      .hkv = 2,
      .sq = 128,
      .sk = 128,
      .d = 64,
      .dtype = ATTN_DTYPE_BF16,
      .causal = ATTN_CAUSAL_TOP_LEFT,
      .layout = GPU_LAYOUT_BHSD,
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
      .lse = 0}},
    {{.b = 1,
      .hq = 4,
      .hkv = 4,
      .sq = 256,
      .sk = 256,
      .d = 128,
      .dtype = ATTN_DTYPE_BF16,
      .causal = ATTN_CAUSAL_TOP_LEFT,
      .layout = GPU_LAYOUT_BSHD,
      .lse = 1},
     {.b = 3,
      .hq = 2,
      .hkv = 1,
      .sq = 64,
      .sk = 192,
      .d = 64,
      .dtype = ATTN_DTYPE_F16,
      .causal = ATTN_CAUSAL_NONE,
      .layout = GPU_LAYOUT_PADDED,
      .pad = 8,
      .lse = 1},
     {.b = 2,
      .hq = 2,
      .hkv = 2,
      .sq = 128,
      .sk = 64,
      .d = 128,
      .dtype = ATTN_DTYPE_F16,
      .causal = ATTN_CAUSAL_NONE,
      .layout = GPU_LAYOUT_BHSD,
      .lse = 1}},
};

typedef struct {
  int thread;
  attn_ctx *ctx;
  pthread_barrier_t *start;
  const attn_backend *backends;
  int n_backends;
  int passed, wanted;
  char failure[900];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  gpu_case c[N_SHAPES];
  cudaStream_t stream = NULL;
  int made = 0;
  if (cudaStreamCreate(&stream) != cudaSuccess)
    snprintf(w->failure, sizeof w->failure, "cudaStreamCreate failed");
  for (uint64_t rng = 2900 + 100 * (uint64_t)w->thread; !w->failure[0] && made < N_SHAPES; made++)
    if (gpu_case_create(&c[made], &shapes[w->thread][made], 0, &rng)) {
      snprintf(w->failure, sizeof w->failure, "could not set up shape %d", made);
      break;
    }
  pthread_barrier_wait(w->start); /* both threads reach here, whatever happened */
  for (int round = 0; round < ROUNDS && !w->failure[0]; round++)
    for (int i = 0; i < N_SHAPES && !w->failure[0]; i++)
      for (int k = 0; k < w->n_backends && !w->failure[0]; k++) {
        attn_backend b = w->backends[k];
        gpu_outcome o;
        c[i].dev.stream = stream;
        const double tol = bound_k(c[i].p.dtype) * gpu_unit_roundoff(c[i].p.dtype);
        int rc = gpu_case_run(w->ctx, &c[i], b, tol, b == ATTN_BACKEND_NAIVE, &o);
        if (rc == GPU_RUN_PASSED) {
          w->passed++;
          continue;
        }
        char desc[256];
        gpu_problem_describe(&c[i].p, desc, sizeof desc);
        snprintf(w->failure, sizeof w->failure, "%s%s, round %d, shape %d (%.250s): %.500s",
                 attn_backend_name(b), rc == GPU_RUN_REFUSED ? " refused" : "", round, i, desc,
                 o.failure);
      }
  for (int i = 0; i < made; i++) gpu_case_destroy(&c[i]);
  if (stream) cudaStreamDestroy(stream);
  return NULL;
}

/* cudnn joins when it is compiled in and takes the first shape here (its
 * library loads); the fused backends and naive always run. */
static int pick_backends(attn_backend *bs) {
  int n = 0;
  bs[n++] = ATTN_BACKEND_FLASH, bs[n++] = ATTN_BACKEND_EFFICIENT, bs[n++] = ATTN_BACKEND_NAIVE;
  attn_backend_info info[32];
  size_t k = attn_backend_list(info, 32);
  for (size_t i = 0; i < k && i < 32; i++) {
    if (info[i].backend != ATTN_BACKEND_CUDNN || info[i].device_kind < 0) continue;
    gpu_case c;
    uint64_t rng = 1;
    char why[512] = "";
    attn_ctx *ctx = gpu_engine_new(NULL);
    if (gpu_case_create(&c, &shapes[0][0], 0, &rng) == 0) {
      if (attn_why_not(ctx, ATTN_BACKEND_CUDNN, &c.dev, why, sizeof why) == ATTN_STATUS_OK)
        bs[n++] = ATTN_BACKEND_CUDNN;
      else printf("note: cudnn left out: %s\n", why);
      gpu_case_destroy(&c);
    }
    attn_ctx_destroy(ctx);
  }
  return n;
}

int main(void) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  printf("device: %s\n", attn_cuda_device_name(0));
  attn_backend bs[MAX_BACKENDS];
  const int nb = pick_backends(bs);
  pthread_barrier_t start;
  if (pthread_barrier_init(&start, NULL, 2)) return printf("FAIL: pthread_barrier_init\n"), 1;
  worker w[2];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 2; i++) {
    w[i].thread = i, w[i].start = &start, w[i].backends = bs, w[i].n_backends = nb;
    w[i].wanted = ROUNDS * N_SHAPES * nb;
    w[i].ctx = gpu_engine_new(NULL);
  }
  pthread_t t[2];
  int started = 0;
  for (int i = 0; i < 2; i++) started += pthread_create(&t[i], NULL, work, &w[i]) == 0;
  if (started != 2) return printf("FAIL: pthread_create\n"), 1; /* the barrier would never open */
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start);
  int failed = 0;
  for (int i = 0; i < 2; i++) {
    attn_ctx_destroy(w[i].ctx);
    if (w[i].failure[0] || w[i].passed != w[i].wanted) {
      printf("FAIL thread %d: %d of %d calls matched; %s\n", i, w[i].passed, w[i].wanted,
             w[i].failure);
      failed++;
    } else {
      printf("ok   thread %d: %d calls x 3 runs matched (%d backends, stream of its own)\n", i,
             w[i].passed, nb);
    }
  }
  printf("%d passed, %d failed: %s\n", 2 - failed, failed, failed ? "FAILED" : "all passed");
  return failed ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
