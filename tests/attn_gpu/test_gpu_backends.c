/* Every CUDA backend in the table (attn_backend_list) against the fp64
 * reference, per dtype, on random problems until each backend that takes
 * the dtype has passed at least 100 of them. Half the draws are "wild"
 * (edges: S = 1, odd sizes, Sq != Sk, GQA, both causal alignments, fully
 * masked rows, bool/additive masks with broadcast, BSHD / padded / D-strided
 * layouts, lse), half "plain" (what fused backends take), so a backend that
 * registers later is covered without touching this file.
 *
 * Bounds (relative error over rows that are not fully masked, and lse
 * relative to max(1, |lse|), the lse's at least 256 fp32 u: gpu_check.c):
 * k unit roundoffs u of the dtype, k in bound_k with its reason.
 * Each backend runs every problem three times in a row on one handle, made
 * from the environment (gpu_check.c: with ATTNPROF_CUDA_GRAPHS=1, as ctest's
 * test_gpu_backends sets, the baselines capture the second call into a CUDA
 * graph and replay it for the third; test_gpu_backends_eager runs them
 * eagerly); before each call output and lse are poisoned with 0xFF, after it
 * they are checked fully written and compared. Fully masked rows: NaN for
 * naive and naive_inplace (their plain
 * softmax, as on the CPU and in PyTorch's composition), 0 and lse -inf for
 * every other backend.
 *
 * No GPU (or no CUDA in this build): prints the reason and exits 77, which
 * ctest reports as Skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include "attn/backend.h"
#include "attnprof/device.h"
#include "attn_gpu/gpu_harness.h"

enum { RUNS_WANTED = 100, MAX_DRAWS = 1200, MAX_BACKENDS = 16, MAX_PRINTED = 5 };

typedef struct {
  attn_backend backend;
  const char *impl;
  int taken; /* takes this dtype and can run here */
  int runs, refused, failed;
  double worst;
  char worst_problem[256], last_refusal[640], skip[256];
} tally;

static attn_ctx *g_ctx;

static double bound_k(attn_dtype dt) {
  /* f32: no TF32 anywhere (TF32 would land near 5000u); fp32 sums over up
   * to 256 keys and dims in a blocked order grow like sqrt(n) u. Worst seen
   * on the H200 (2026-11-30): 4.7u. */
  if (dt == ATTN_DTYPE_F32) return 64;
  /* f16/bf16: up to three roundings to the dtype in a chain (naive: scores,
   * probabilities, out; fused kernels: P before the PV product, out), each
   * <= u. Worst seen on the H200 (2026-11-30): 1.2u (naive, f16). */
  return 4;
}

static double tolerance(attn_dtype dt) { return bound_k(dt) * gpu_unit_roundoff(dt); }

static int nan_rows(attn_backend b) {
  return b == ATTN_BACKEND_NAIVE || b == ATTN_BACKEND_NAIVE_INPLACE;
}

/* $ATTNPROF_GPU_TEST_ONLY, a comma-separated list of implementation names
 * (e.g. "naive_cuda,math_cuda"), narrows a focused run; unset: all. */
static int wanted(const char *impl) {
  const char *only = getenv("ATTNPROF_GPU_TEST_ONLY");
  size_t n = strlen(impl);
  for (const char *p = only; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
    if (strncmp(p, impl, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
  }
  return !only || !*only;
}

static int cuda_backends(tally *t) {
  attn_backend_info info[32];
  size_t n = attn_backend_list(info, 32);
  int count = 0;
  for (size_t i = 0; i < n && i < 32 && count < MAX_BACKENDS; i++)
    if (info[i].device_kind >= 0 && wanted(info[i].impl))
      t[count++] = (tally){.backend = info[i].backend, .impl = info[i].impl};
  return count;
}

static void reset(tally *t, attn_dtype dt) {
  const attn_backend_impl *impl = attn_backend_find(t->backend, 0);
  *t = (tally){.backend = t->backend, .impl = t->impl};
  t->taken = impl && (impl->dtypes & ATTN_DTYPE_BIT(dt));
  if (t->taken && impl->available && impl->available(t->skip, sizeof t->skip)) t->taken = 0;
}

static int done(const tally *t, int n) {
  for (int i = 0; i < n; i++)
    if (t[i].taken && t[i].runs < RUNS_WANTED) return 0;
  return 1;
}

static void run_one(tally *t, gpu_case *c) {
  gpu_outcome o;
  int rc = gpu_case_run(g_ctx, c, t->backend, tolerance(c->p.dtype), nan_rows(t->backend), &o);
  char desc[256];
  gpu_problem_describe(&c->p, desc, sizeof desc);
  if (rc == GPU_RUN_REFUSED) {
    t->refused++;
    snprintf(t->last_refusal, sizeof t->last_refusal, "%s", o.failure);
  } else if (rc == GPU_RUN_FAILED) {
    if (t->failed++ < MAX_PRINTED)
      printf("FAIL %s: %s\n     problem: %s\n", t->impl, o.failure, desc);
  } else {
    t->runs++;
    if (o.err >= t->worst)
      t->worst = o.err, snprintf(t->worst_problem, sizeof t->worst_problem, "%s", desc);
  }
}

/* Returns the number of backends that failed for this dtype. */
static int sweep_dtype(attn_dtype dt, tally *t, int n, uint64_t *rng) {
  int draws = 0, bad = 0;
  for (int i = 0; i < n; i++) reset(&t[i], dt);
  for (; draws < MAX_DRAWS && !done(t, n); draws++) {
    gpu_problem p = gpu_problem_draw(rng, dt, draws % 2);
    gpu_case c;
    if (gpu_case_create(&c, &p, 0, rng)) return n;
    for (int i = 0; i < n; i++)
      if (t[i].taken) run_one(&t[i], &c);
    gpu_case_destroy(&c);
  }
  printf("%s: %d problems drawn, bound %.0fu = %.3e\n", attn_dtype_name(dt), draws, bound_k(dt),
         tolerance(dt));
  for (int i = 0; i < n; i++) {
    if (!t[i].taken && t[i].skip[0]) {
      /* In the table and a GPU here: a library that does not load is a fault
       * of this machine or build, not a reason to pass. */
      printf("FAIL %s: compiled in but not available on this GPU machine: %s\n", t[i].impl,
             t[i].skip);
      bad++;
      continue;
    }
    if (!t[i].taken) {
      printf("  %-20s not run: does not take this dtype\n", t[i].impl);
      continue;
    }
    printf("  %-20s %4d passed, %4d failed, %4d refused; worst rel err %.3e on %s\n", t[i].impl,
           t[i].runs, t[i].failed, t[i].refused, t[i].worst, t[i].worst_problem);
    if (t[i].refused) printf("  %-20s last refusal: %s\n", "", t[i].last_refusal);
    if (t[i].runs < RUNS_WANTED)
      printf("FAIL %s: only %d problems passed (at least %d wanted)\n", t[i].impl, t[i].runs,
             RUNS_WANTED);
    bad += t[i].failed > 0 || t[i].runs < RUNS_WANTED;
  }
  return bad;
}

int main(void) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  tally t[MAX_BACKENDS];
  int n = cuda_backends(t), bad = 0;
  g_ctx = gpu_engine_new(NULL);
  printf("device: %s; %d CUDA backends in the table%s; cuda_graphs %d\n", attn_cuda_device_name(0),
         n, getenv("ATTNPROF_GPU_TEST_ONLY") ? " (narrowed by ATTNPROF_GPU_TEST_ONLY)" : "",
         attn_ctx_options(g_ctx)->cuda_graphs);
  if (n == 0) {
    printf("FAIL: a GPU is here but the table has no CUDA backend\n");
    return 1;
  }
  uint64_t rng = 20241105;
  const attn_dtype dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
  for (int i = 0; i < 3; i++) bad += sweep_dtype(dts[i], t, n, &rng);
  printf("%s\n", bad ? "FAILED" : "all passed");
  attn_ctx_destroy(g_ctx);
  return bad ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
