/* Test helpers for the attention engine: a seeded RNG, random problems
 * described by a spec (dtype, shapes, GQA, causal rule, masks and their
 * broadcast, memory layout), poisoned outputs, and the comparison of a
 * backend's result with the fp64 reference. */
#ifndef ATTNPROF_TESTS_ATTN_TESTUTIL_H
#define ATTNPROF_TESTS_ATTN_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/attn.h"
#include "attnprof/testing.h"

typedef struct {
  uint64_t s;
} test_rng;

uint64_t test_rng_next(test_rng *r);
double test_rng_uniform(test_rng *r);                      /* [0, 1) */
int64_t test_rng_int(test_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */
double test_rng_normal(test_rng *r);
/* The seed: ATTNPROF_TEST_SEED from the environment, else `fallback`. */
uint64_t test_seed(uint64_t fallback);

/* How q, k, v and out lie in memory. */
typedef enum {
  LAYOUT_BHSD,        /* contiguous [B, H, S, D] */
  LAYOUT_BSHD,        /* [B, S, H, D] through strides */
  LAYOUT_BHSD_PADDED, /* rows of D + 3 elements */
  LAYOUT_BHDS,        /* D-major: stride along D is S */
  LAYOUT_COUNT
} test_layout;

typedef struct {
  attn_dtype dtype;
  int64_t b, hq, hkv, sq, sk, d;
  attn_causal causal;
  attn_mask_kind mask;
  attn_dtype mask_dtype; /* additive masks */
  int mask_b1, mask_h1;  /* broadcast over B / H */
  int mask_zero_stride;  /* broadcast by stride 0 at full size, not size 1 */
  int masked_rows;       /* mask some query rows completely */
  test_layout layout;
  int lse;
  double scale;
} problem_spec;

typedef struct {
  problem_spec spec;
  attn_args args;
  void *mem[5]; /* q, k, v, out, mask storage */
  size_t mem_bytes[5];
  unsigned char *out_snapshot; /* out's bytes after poisoning */
  size_t lse_n;
  double *ref, *lse_ref;
} test_problem;

/* A random spec (sizes kept small enough for the sanitizer build). */
problem_spec problem_random(test_rng *r);
/* One line describing the spec. */
void problem_describe(const problem_spec *s, char *buf, size_t n);
/* Allocates and fills inputs with fresh random values and computes the
 * fp64 reference. Returns 0 on success. */
int problem_make(test_problem *p, const problem_spec *s, test_rng *r);
void problem_free(test_problem *p);
/* Fills out and lse with a NaN of a marked payload (and remembers out's bytes). */
void problem_poison(test_problem *p);

/* Result of comparing a run with the reference. */
typedef struct {
  double rel_err;      /* ||out - ref|| / ||ref|| over the rows compared */
  double lse_err;      /* max |lse - ref| / (1 + |ref|) over those rows */
  int64_t masked_rows; /* rows with no visible key (lse_ref = -inf) */
  int ok;
  char why[512];
} check_result;

/* Checks the output of a run: every logical element written (none left
 * poisoned), nothing outside the logical elements touched, fully masked rows
 * as `masked_nan` says (1: all NaN, lse NaN; 0: all zero, lse -inf), the rest
 * within tol of the reference (||out - ref|| / ||ref||), and each lse within
 * lse_tol (|lse - ref| / (1 + |ref|)). */
check_result problem_check(const test_problem *p, int masked_nan, double tol, double lse_tol);

/* The unit roundoff of a storage dtype: 2^-24 f32, 2^-11 f16, 2^-8 bf16.
 * Every test states its bound on ||out - ref|| / ||ref|| as k times this
 * (k next to its reason), so the bound follows the dtype's rounding. */
double test_unit_roundoff(attn_dtype dt);

/* The engine handle of a test: made on first use from attn_ctx_opts_from_env,
 * so that ctest's ENVIRONMENT (ATTNPROF_CPU_ISA=portable, ATTNPROF_CUDA_GRAPHS=1)
 * chooses its options, and destroyed at exit. A value the environment holds
 * that is not understood ends the test (exit 1) with the reason. */
attn_ctx *test_engine(void);
/* A new handle from opts (NULL: the environment's, as above); exits 1 with
 * the reason if it cannot be made. The caller destroys it. */
attn_ctx *test_engine_new(const attn_ctx_opts *opts);

#endif
