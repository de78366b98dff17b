/* The GPU correctness harness: random attention problems (edges included),
 * the same inputs in host and device memory, the fp64 reference, and one
 * checked run of a backend (output poisoned first, checked fully written,
 * compared with the reference). */
#ifndef ATTNPROF_TESTS_ATTN_GPU_GPU_HARNESS_H
#define ATTNPROF_TESTS_ATTN_GPU_GPU_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "attnprof/attn.h"

/* Memory layouts of Q, K, V and out, all through strides. */
enum {
  GPU_LAYOUT_BHSD,
  GPU_LAYOUT_BSHD,      /* [B, S, H, D] memory, no transpose copy */
  GPU_LAYOUT_PADDED,    /* BHSD rows D + pad apart: gaps must stay unwritten */
  GPU_LAYOUT_D_STRIDED, /* every other element along D */
  GPU_LAYOUT_COUNT
};

typedef struct {
  int64_t b, hq, hkv, sq, sk, d;
  attn_dtype dtype;
  attn_causal causal;
  attn_mask_kind mask;
  attn_dtype mask_dtype;
  int mask_b1, mask_h1; /* mask dims of size 1 (broadcast) */
  int mask_zero_stride; /* full-size mask dims with stride 0 instead */
  int layout, pad;
  int lse;
  double scale;
} gpu_problem;

/* splitmix64 */
uint64_t gpu_rand(uint64_t *s);
int64_t gpu_rand_range(uint64_t *s, int64_t lo, int64_t hi); /* inclusive */

/* A random problem: "wild" (edges: S of 1, odd sizes, Sq != Sk, GQA,
 * bottom-right causal with fully masked rows, masks, strides, lse) or
 * "plain" (what fused backends take: D 64/128, S a multiple of 64, no mask). */
gpu_problem gpu_problem_draw(uint64_t *rng, attn_dtype dt, int plain);
void gpu_problem_describe(const gpu_problem *p, char *buf, size_t len);

typedef struct {
  gpu_problem p;
  int device;
  attn_args host, dev;     /* the same problem in host and in device memory */
  void *hbuf[6], *dbuf[6]; /* q, k, v, out, mask, lse */
  size_t bytes[6];
  double *ref_out, *ref_lse; /* fp64 reference, [B, Hq, Sq, D] and [B, Hq, Sq] */
} gpu_case;

/* Random inputs, copied to the device, and the reference. 0 on success;
 * otherwise prints why and returns -1. */
int gpu_case_create(gpu_case *c, const gpu_problem *p, int device, uint64_t *rng);
void gpu_case_destroy(gpu_case *c);

typedef struct {
  double err;        /* relative error over rows that are not fully masked */
  double lse_err;    /* largest |lse - ref| / max(1, |ref|), or 0 */
  int masked_rows;   /* fully masked rows in the problem */
  char failure[640]; /* what went wrong, when the run failed */
} gpu_outcome;

enum { GPU_RUN_PASSED = 0, GPU_RUN_REFUSED = 1, GPU_RUN_FAILED = -1 };

/* New random q, k, v in the same host and device buffers (pointers kept,
 * contents changed) and the reference again. 0 on success. */
int gpu_case_refill(gpu_case *c, uint64_t *rng);

/* Runs backend b on the case, on the handle ctx, three times and checks each
 * call: out and lse poisoned (0xFF bytes) first; every logical element
 * written and every gap left alone; ||out - ref|| / ||ref|| <= tol, and
 * |lse - ref| / max(1, |ref|) <= max(tol, 256 fp32 unit roundoffs). nan_rows: the backend's convention for
 * a fully masked row is NaN (the plain softmax of naive); otherwise 0 and
 * lse -inf. */
int gpu_case_run(attn_ctx *ctx, gpu_case *c, attn_backend b, double tol, int nan_rows,
                 gpu_outcome *o);
/* One such checked call (no why-not check first). */
int gpu_case_run_once(attn_ctx *ctx, gpu_case *c, attn_backend b, double tol, int nan_rows,
                      gpu_outcome *o);

/* The unit roundoff of a storage dtype: 2^-24 f32, 2^-11 f16, 2^-8 bf16. */
double gpu_unit_roundoff(attn_dtype dt);
/* An engine handle for a GPU test: opts as given, or (opts NULL) the
 * defaults filled by attn_ctx_opts_from_env, so that ctest's
 * ATTNPROF_CUDA_GRAPHS=1 reaches it. Exits 1 with the reason when it cannot
 * be made; the caller destroys it. */
attn_ctx *gpu_engine_new(const attn_ctx_opts *opts);

#endif
