/* The fused backends (flash, efficient) on the shapes their kernels treat
 * specially, through the GPU harness of tests/attn_gpu (poisoned output,
 * fully-written check, fp64 reference; bound k unit roundoffs of the dtype,
 * k in bound_k with its reason):
 *
 *  - flash must take and pass every D in {64, 96, 128, 256} x bf16/f16 x
 *    causal none / top-left / bottom-right x Sq, Sk pairs around the tiles
 *    (1, 63, 64, 65, 127, 129, 200, 300, and 257-700 for several 128-key
 *    tiles; Sq > Sk gives fully masked rows under bottom-right) x GQA x
 *    BHSD/BSHD, with lse; once on a handle whose opts.flash_kernel is auto
 *    (ws on compute capability 9.0), once with mma_sync forced and, on
 *    compute capability 9.0, once with wgmma forced, so every kernel is
 *    checked on a H200;
 *  - on compute capability 9.0, the warp-specialized kernel forced
 *    (opts.flash_kernel = ws) over its own sweep (ws_sweep) (an unknown ATTNPROF_FLASH_KERNEL
 *    value is refused by attn_ctx_opts_from_env: tests/attn/test_ctx.c);
 *  - efficient's scalar kernel, forced on 16-bit inputs, agrees too;
 *  - efficient must take and pass odd head dims (1..255, padded inside or on
 *    the scalar path), f32, boolean and additive masks in every dtype with
 *    size-1 and stride-0 broadcast, padded and D-strided layouts, custom and
 *    negative scales;
 *  - the refusals say why and name the backend that would take the inputs.
 * AUTO's choice is tested against a written rule in tests/attn_gpu/test_gpu_ctx.c.
 *
 * FUSED_TEST_QUICK=1 runs a few cases of each (for compute-sanitizer);
 * FUSED_TEST_ONLY=flash runs the flash kernels only, =ws the ws sweep only.
 * No GPU: prints the reason and exits 77 (Skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTNPROF_HAVE_CUDA
#include <math.h>

#include "attnprof/device.h"
#include "attn/cuda/fused/fused_params.h"
#include "attn_gpu/gpu_harness.h"

static int quick;
static int failures, passes;
static attn_ctx *g_ctx; /* the handle the checks run on */

static double bound_k(attn_dtype dt) {
  /* f32 (efficient): no TF32; fp32 sums over <= 700 keys, ~sqrt(n) u. */
  if (dt == ATTN_DTYPE_F32) return 64;
  /* 16-bit: P rounded to the dtype before the PV product, then out: two
   * roundings of <= u each, plus fp32 accumulation; k = 4 leaves a margin
   * (worst seen on the H200, 2026-11-30: 0.64u). */
  return 4;
}

static double tol(attn_dtype dt) { return bound_k(dt) * gpu_unit_roundoff(dt); }

/* Runs backend b on p; a refusal counts as a failure (these shapes are the
 * backend's to take). */
static void expect_pass(attn_backend b, const gpu_problem *p, uint64_t *rng) {
  gpu_case c;
  gpu_outcome o;
  char desc[256];
  gpu_problem_describe(p, desc, sizeof desc);
  if (gpu_case_create(&c, p, 0, rng)) {
    printf("FAIL setup: %s\n", desc);
    failures++;
    return;
  }
  int rc = gpu_case_run(g_ctx, &c, b, tol(p->dtype), 0, &o);
  if (rc != GPU_RUN_PASSED) {
    if (failures++ < 60)
      printf("FAIL %s%s: %s\n     problem: %s\n", attn_backend_name(b),
             rc == GPU_RUN_REFUSED ? " refused" : "", o.failure, desc);
  } else {
    passes++;
  }
  gpu_case_destroy(&c);
}

static void flash_sweep(uint64_t *rng, const char *kernel) {
  static const int64_t dims[] = {64, 96, 128, 256};
  static const int64_t seq[][2] = {{1, 1},     {64, 64},  {63, 65}, {129, 200}, {200, 129},
                                   {127, 300}, {300, 17}, {65, 1},  {257, 700}, {700, 385}};
  static const attn_dtype dts[] = {ATTN_DTYPE_BF16, ATTN_DTYPE_F16};
  int before = failures, n = 0;
  for (int di = 0; di < 4; di++)
    for (int ti = 0; ti < 2; ti++)
      for (int c = 0; c < 3; c++)
        for (int si = 0; si < 10; si++, n++) {
          if (quick && n % 13) continue;
          if (dims[di] == 96 && !strcmp(kernel, "wgmma")) continue; /* wgmma: D 64/128/256 */
          gpu_problem p = {.dtype = dts[ti], .d = dims[di], .causal = (attn_causal)c};
          p.sq = seq[si][0], p.sk = seq[si][1];
          p.b = 1 + (n % 2);
          p.hkv = 1 + (n % 2);
          p.hq = p.hkv * (1 + (n / 2) % 3); /* GQA groups of 1, 2, 3 */
          p.layout = n % 3 == 1 ? GPU_LAYOUT_BSHD : GPU_LAYOUT_BHSD;
          p.lse = n % 4 != 3;
          p.scale = n % 5 == 4 ? 0.3 : 0; /* custom positive scale */
          expect_pass(ATTN_BACKEND_FLASH, &p, rng);
        }
  printf("flash (opts.flash_kernel %s): %d shapes, %d failed\n", kernel, n, failures - before);
}

/* A handle whose opts.flash_kernel is k. */
static attn_ctx *ctx_with(attn_flash_kernel k) {
  attn_ctx_opts o = attn_ctx_opts_default();
  o.flash_kernel = k;
  return gpu_engine_new(&o);
}

/* Causal problems with more than 44 (batch, head) pairs (132 SMs, 128-row
 * tiles) and more tiles than SMs, where the ws schedule pairs each head's m
 * blocks (long with short; with an odd count the middle ones two heads at a
 * time) and a CTA runs several tiles, handing each Q buffer back under the
 * next tile's first product. The first runs in the quick set too (the
 * sanitizers see it). */
static void ws_paired(uint64_t *rng, int *n) {
  static const gpu_problem cases[] = {
      /* D64: 3 m blocks (odd) x 48 heads = 144 tiles, GQA 4 */
      {.dtype = ATTN_DTYPE_BF16,
       .b = 2,
       .hq = 24,
       .hkv = 6,
       .sq = 320,
       .sk = 320,
       .d = 64,
       .causal = ATTN_CAUSAL_TOP_LEFT,
       .lse = 1},
      /* D128 bottom-right, Sq > Sk (the first 100 rows see no key), 5 m blocks, BSHD */
      {.dtype = ATTN_DTYPE_F16,
       .b = 2,
       .hq = 24,
       .hkv = 6,
       .sq = 600,
       .sk = 500,
       .d = 128,
       .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
       .layout = GPU_LAYOUT_BSHD,
       .lse = 1},
      /* D256: 4 m blocks x 48 heads = 192 tiles, padded rows */
      {.dtype = ATTN_DTYPE_BF16,
       .b = 1,
       .hq = 48,
       .hkv = 48,
       .sq = 400,
       .sk = 400,
       .d = 256,
       .causal = ATTN_CAUSAL_TOP_LEFT,
       .layout = GPU_LAYOUT_PADDED,
       .pad = 8},
      /* D64: 10 m blocks x 60 heads = 300 pairs, where the end-short order (hopper/ws_sched.h,
       * ws_sched_make) runs one round of pairs and deals the other 336 m blocks one by one (head 26
       * from its third pair on, then every later head); bottom-right with Sk < Sq, so most tiles see no key
       * (each must still write its rows) and the reference stays small */
      {.dtype = ATTN_DTYPE_BF16,
       .b = 2,
       .hq = 30,
       .hkv = 15,
       .sq = 1280,
       .sk = 400,
       .d = 64,
       .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
       .lse = 1}};
  for (int i = 0; i < (quick ? 1 : 4); i++, (*n)++) expect_pass(ATTN_BACKEND_FLASH, &cases[i], rng);
}

/* Scale 2: scores with a spread of 8-15 log2 units (inputs in [-1, 1], D 64
 * to 256), so a row's max rises between key tiles by more than the softmax lets m lag
 * (8 log2 units in the lazy rule; the stale-max variant's sum check, which
 * then recomputes the warp's S) in many rows. The first runs in the quick
 * set too. */
static void ws_peaked(uint64_t *rng, int *n) {
  static const gpu_problem cases[] = {{.dtype = ATTN_DTYPE_BF16,
                                       .b = 1,
                                       .hq = 2,
                                       .hkv = 1,
                                       .sq = 300,
                                       .sk = 700,
                                       .d = 64,
                                       .lse = 1,
                                       .scale = 2.0},
                                      {.dtype = ATTN_DTYPE_F16,
                                       .b = 2,
                                       .hq = 2,
                                       .hkv = 2,
                                       .sq = 257,
                                       .sk = 1000,
                                       .d = 128,
                                       .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
                                       .layout = GPU_LAYOUT_BSHD,
                                       .lse = 1,
                                       .scale = 2.0},
                                      {.dtype = ATTN_DTYPE_BF16,
                                       .b = 1,
                                       .hq = 4,
                                       .hkv = 1,
                                       .sq = 700,
                                       .sk = 700,
                                       .d = 256,
                                       .causal = ATTN_CAUSAL_TOP_LEFT,
                                       .lse = 1,
                                       .scale = 2.0}};
  for (int i = 0; i < (quick ? 1 : 3); i++, (*n)++) expect_pass(ATTN_BACKEND_FLASH, &cases[i], rng);
}

/* The first key tile's softmax on its kept keys only (hopper/tile_traits.cuh
 * kWsDiagHalf, D64 and D128): where a consumer's 64 rows see none of the tile's last
 * keys. Sq = Sk a multiple of 128 (consumer 0 on every diagonal tile, several
 * m blocks per head); bottom-right with Sq - Sk = 64 (consumer 1 only:
 * consumer 0's rows of the first m block see no key); D256's 64-key tiles
 * (consumer 0's diagonal tile wholly masked). The second runs in the quick
 * set too. */
static void ws_diag(uint64_t *rng, int *n) {
  static const gpu_problem cases[] = {{.dtype = ATTN_DTYPE_BF16,
                                       .b = 1,
                                       .hq = 4,
                                       .hkv = 2,
                                       .sq = 1024,
                                       .sk = 1024,
                                       .d = 64,
                                       .causal = ATTN_CAUSAL_TOP_LEFT,
                                       .lse = 1},
                                      {.dtype = ATTN_DTYPE_F16,
                                       .b = 2,
                                       .hq = 2,
                                       .hkv = 1,
                                       .sq = 576,
                                       .sk = 512,
                                       .d = 128,
                                       .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
                                       .layout = GPU_LAYOUT_BSHD,
                                       .lse = 1},
                                      {.dtype = ATTN_DTYPE_BF16,
                                       .b = 1,
                                       .hq = 2,
                                       .hkv = 2,
                                       .sq = 512,
                                       .sk = 512,
                                       .d = 256,
                                       .causal = ATTN_CAUSAL_BOTTOM_RIGHT,
                                       .lse = 1}};
  for (int i = 0; i < 3; i++)
    if (!quick || i == 1) expect_pass(ATTN_BACKEND_FLASH, &cases[i], rng), (*n)++;
}

/* The warp-specialized kernel (opts.flash_kernel = ws, compute capability 9.0
 * only) on the shapes its TMA loads and persistent schedule treat specially:
 * every D x both dtypes x causal none / top-left / bottom-right x S in
 * {1, 7, 257, 700, 4097} with Sq != Sk (ragged tiles filled by TMA, rows past
 * Sq clipped by its store, fully masked rows), GQA groups 1/2/4/8, BHSD, BSHD
 * and padded rows, lse on and off; more tiles than SMs (the persistent loop)
 * with B = 3 at Sq = 4097. Runs on g_ctx (the caller's ws handle). */
static void ws_sweep(uint64_t *rng) {
  static const int64_t dims[] = {64, 128, 256};
  static const int64_t seq[][2] = {{1, 1},   {7, 7},     {257, 257}, {700, 700},  {7, 700},
                                   {700, 7}, {257, 700}, {700, 257}, {4097, 129}, {65, 4097}};
  static const int groups[] = {1, 2, 4, 8};
  int before = failures, n = 0;
  for (int di = 0; di < 3; di++)
    for (int c = 0; c < 3; c++)
      for (int si = 0; si < 10; si++, n++) {
        if (quick && (n % 11 || seq[si][0] > 1000 || seq[si][1] > 1000)) continue;
        gpu_problem p = {.dtype = n % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16,
                         .d = dims[di],
                         .causal = (attn_causal)c};
        p.sq = seq[si][0], p.sk = seq[si][1];
        p.b = 1 + (n % 2);
        p.hkv = 1 + (n / 3) % 2;
        p.hq = p.hkv * groups[n % 4];
        p.layout = n % 3 == 1 ? GPU_LAYOUT_BSHD : n % 5 == 2 ? GPU_LAYOUT_PADDED : GPU_LAYOUT_BHSD;
        p.pad = 8;
        p.lse = n % 4 != 3;
        expect_pass(ATTN_BACKEND_FLASH, &p, rng);
      }
  if (!quick) /* 3 x 33 x 2 = 198 m-tiles at S 4097: more than the SMs, so CTAs loop */
    for (int c = 0; c < 2; c++, n++) {
      gpu_problem p = {.dtype = ATTN_DTYPE_BF16,
                       .b = 3,
                       .hq = 2,
                       .hkv = 1,
                       .sq = 4097,
                       .sk = 700,
                       .d = 64,
                       .causal = (attn_causal)c,
                       .lse = 1};
      expect_pass(ATTN_BACKEND_FLASH, &p, rng);
    }
  ws_paired(rng, &n);
  ws_peaked(rng, &n);
  ws_diag(rng, &n);
  printf("flash (opts.flash_kernel ws): %d shapes, %d failed\n", n, failures - before);
}

/* Whether flash takes a plain problem on a handle that forces kernel k. */
static int kernel_runs_here(attn_flash_kernel k, const char *name, uint64_t *rng) {
  gpu_problem p = {.dtype = ATTN_DTYPE_BF16, .b = 1, .hq = 1, .hkv = 1, .sq = 8, .sk = 8, .d = 64};
  gpu_case c;
  char why[256] = "";
  attn_ctx *ctx = ctx_with(k);
  int ok = 0;
  if (ctx && gpu_case_create(&c, &p, 0, rng) == 0) {
    ok = attn_why_not(ctx, ATTN_BACKEND_FLASH, &c.dev, why, sizeof why) == ATTN_STATUS_OK;
    gpu_case_destroy(&c);
  }
  printf("flash's %s kernel: %s\n", name, ok ? "runs here" : why);
  attn_ctx_destroy(ctx);
  return ok;
}

/* Every flash kernel, each on a handle that asks for it. */
static void flash_kernels(uint64_t *rng) {
  static const attn_flash_kernel kernels[] = {ATTN_FLASH_KERNEL_AUTO, ATTN_FLASH_KERNEL_MMA_SYNC,
                                              ATTN_FLASH_KERNEL_WGMMA};
  static const char *const names[] = {"auto", "mma_sync", "wgmma"};
  attn_ctx *keep = g_ctx;
  /* wgmma runs exactly where ws must: compute capability 9.0, sm_90a build */
  const int hopper = kernel_runs_here(ATTN_FLASH_KERNEL_WGMMA, "wgmma", rng);
  if (hopper && !kernel_runs_here(ATTN_FLASH_KERNEL_WS, "ws", rng)) {
    printf("FAIL flash's ws kernel refuses where the wgmma kernel runs\n");
    failures++;
  }
  if (hopper) {
    g_ctx = ctx_with(ATTN_FLASH_KERNEL_WS);
    ws_sweep(rng);
    attn_ctx_destroy(g_ctx);
  }
  const char *only = getenv("FUSED_TEST_ONLY");
  for (int i = 0; i < (hopper ? 3 : 2) && !(only && !strcmp(only, "ws")); i++) {
    g_ctx = ctx_with(kernels[i]);
    flash_sweep(rng, names[i]);
    attn_ctx_destroy(g_ctx);
  }
  g_ctx = keep;
}

static void efficient_sweep(uint64_t *rng) {
  static const int64_t dims[] = {1, 7, 33, 64, 72, 100, 128, 160, 255, 256};
  static const attn_dtype dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
  static const attn_dtype mdts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
  static const int64_t seqs[] = {1, 2, 31, 64, 65, 100, 129};
  int before = failures, n = 0, cases = quick ? 12 : 180;
  for (; n < cases; n++) {
    gpu_problem p = {.dtype = dts[n % 3], .d = dims[(n / 3) % 10]};
    p.causal = (attn_causal)gpu_rand_range(rng, 0, 2);
    p.sq = seqs[gpu_rand_range(rng, 0, 6)], p.sk = seqs[gpu_rand_range(rng, 0, 6)];
    p.b = gpu_rand_range(rng, 1, 2);
    p.hkv = gpu_rand_range(rng, 1, 2);
    p.hq = p.hkv * gpu_rand_range(rng, 1, 2);
    int m = n % 4; /* none, bool, additive (dtype cycles) */
    p.mask = m == 0 ? ATTN_MASK_NONE : m == 1 ? ATTN_MASK_BOOL : ATTN_MASK_ADDITIVE;
    p.mask_dtype = p.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : mdts[(n / 4) % 3];
    p.mask_b1 = (int)gpu_rand_range(rng, 0, 1), p.mask_h1 = (int)gpu_rand_range(rng, 0, 1);
    p.mask_zero_stride = !p.mask_b1 && !p.mask_h1 && gpu_rand_range(rng, 0, 1);
    p.layout = (int)gpu_rand_range(rng, 0, GPU_LAYOUT_COUNT - 1);
    p.pad = (int)gpu_rand_range(rng, 1, 9);
    p.lse = (int)gpu_rand_range(rng, 0, 1);
    /* scores of order 1; one in 6 with a negative scale (efficient takes any) */
    int64_t r = gpu_rand_range(rng, 0, 5);
    p.scale = r < 3 ? 0 : (r == 5 ? -1.0 : 1.0) * 0.7 / (double)(p.d < 16 ? 4 : 8);
    expect_pass(ATTN_BACKEND_EFFICIENT, &p, rng);
  }
  printf("efficient: %d shapes, %d failed\n", n, failures - before);
}

/* efficient's mask tile in shared memory (16-bit Q/K/V, mask rows of 16-byte
 * multiples): every mask dtype, key counts that end a tile exactly, mid-chunk
 * (Sk = 200: a bool row ends 8 bytes into a chunk) and mid-tile, 64- and
 * 32-key tiles (D 64 and 256), rows past Sq, bottom-right causal on top. */
static void efficient_mask_tiles(uint64_t *rng) {
  static const attn_dtype mdts[] = {ATTN_DTYPE_BOOL, ATTN_DTYPE_F32, ATTN_DTYPE_F16,
                                    ATTN_DTYPE_BF16};
  static const int64_t sks[] = {64, 136, 200}, sqs[] = {1, 77}, dims[] = {64, 256};
  int before = failures, n = 0;
  for (int mi = 0; mi < 4; mi++)
    for (int ki = 0; ki < 3; ki++)
      for (int qi = 0; qi < 2; qi++)
        for (int di = 0; di < 2; di++, n++) {
          if (quick && n % 7) continue;
          gpu_problem p = {.dtype = n % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16,
                           .b = 2,
                           .hq = 2,
                           .hkv = 1,
                           .sq = sqs[qi],
                           .sk = sks[ki],
                           .d = dims[di]};
          p.mask = mdts[mi] == ATTN_DTYPE_BOOL ? ATTN_MASK_BOOL : ATTN_MASK_ADDITIVE;
          p.mask_dtype = mdts[mi];
          p.mask_b1 = n % 3 == 0, p.mask_h1 = n % 3 == 1;
          p.causal = n % 4 == 3 ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_NONE;
          p.layout = n % 5 == 2 ? GPU_LAYOUT_BSHD : GPU_LAYOUT_BHSD;
          p.lse = 1;
          expect_pass(ATTN_BACKEND_EFFICIENT, &p, rng);
        }
  printf("efficient, mask tiles: %d shapes, %d failed\n", n, failures - before);
}

/* The scalar kernel on 16-bit inputs the tensor-core kernel would take
 * (forced through attn_efficient_cuda_run_scalar), against the reference. */
static void efficient_scalar_forced(uint64_t *rng) {
  int before = failures, n = 0;
  for (; n < (quick ? 2 : 8); n++) {
    gpu_problem p = {.dtype = n % 2 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16,
                     .b = 1,
                     .hq = 2,
                     .hkv = 1,
                     .sq = 70,
                     .sk = 131,
                     .d = n % 4 < 2 ? 64 : 128,
                     .lse = 1};
    p.causal = (attn_causal)(n % 3);
    p.mask = n % 4 == 3 ? ATTN_MASK_ADDITIVE : ATTN_MASK_NONE;
    p.mask_dtype = ATTN_DTYPE_BF16;
    gpu_case c;
    char desc[256];
    gpu_problem_describe(&p, desc, sizeof desc);
    if (gpu_case_create(&c, &p, 0, rng)) {
      failures++;
      continue;
    }
    attn_status st = attn_efficient_cuda_run_scalar(g_ctx, &c.dev);
    double err = INFINITY;
    if (!st && !attn_cuda_synchronize(0) && !attn_cuda_to_host(0, c.hbuf[3], c.dbuf[3], c.bytes[3]))
      err = attn_rel_error(&c.host.out, c.ref_out);
    if (st || !(err <= tol(p.dtype))) {
      printf("FAIL efficient (scalar kernel forced): %s, rel err %.3e (bound %.3e)\n"
             "     problem: %s\n",
             st ? attn_last_error() : "ran", err, tol(p.dtype), desc);
      failures++;
    } else {
      passes++;
    }
    gpu_case_destroy(&c);
  }
  printf("efficient, scalar kernel forced: %d shapes, %d failed\n", n, failures - before);
}

/* A refusal whose reason contains `word`. */
static void expect_refusal(attn_backend b, const gpu_problem *p, const char *word, uint64_t *rng) {
  gpu_case c;
  char why[512] = "";
  if (gpu_case_create(&c, p, 0, rng)) {
    failures++;
    return;
  }
  attn_status st = attn_why_not(g_ctx, b, &c.dev, why, sizeof why);
  if (st == ATTN_STATUS_OK || !strstr(why, word)) {
    printf("FAIL %s should refuse with a reason naming '%s'; got status %s: '%s'\n",
           attn_backend_name(b), word, attn_status_string(st), why);
    failures++;
  } else {
    printf("refused as expected: %s\n", why);
    passes++;
  }
  gpu_case_destroy(&c);
}

static void refusals(uint64_t *rng) {
  gpu_problem base = {
      .dtype = ATTN_DTYPE_BF16, .b = 1, .hq = 2, .hkv = 2, .sq = 64, .sk = 64, .d = 64};
  gpu_problem p = base;
  p.dtype = ATTN_DTYPE_F32; /* the table's dtype check answers */
  expect_refusal(ATTN_BACKEND_FLASH, &p, "dtype f32", rng);
  p = base, p.d = 80;
  expect_refusal(ATTN_BACKEND_FLASH, &p, "head dims 64, 96, 128, 256", rng);
  p = base, p.mask = ATTN_MASK_BOOL, p.mask_dtype = ATTN_DTYPE_BOOL;
  expect_refusal(ATTN_BACKEND_FLASH, &p, "mask", rng);
  p = base, p.layout = GPU_LAYOUT_D_STRIDED;
  expect_refusal(ATTN_BACKEND_FLASH, &p, "stride", rng);
  p = base, p.scale = -0.1;
  expect_refusal(ATTN_BACKEND_FLASH, &p, "positive scale", rng);
}

int main(void) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("SKIP: %s\n", why);
    return 77;
  }
  const char *q = getenv("FUSED_TEST_QUICK");
  quick = q && *q && strcmp(q, "0") != 0;
  printf("device: %s%s\n", attn_cuda_device_name(0), quick ? " (quick)" : "");
  g_ctx = gpu_engine_new(NULL);
  uint64_t rng = 5150;
  flash_kernels(&rng);
  const char *only = getenv("FUSED_TEST_ONLY"); /* "flash": the flash kernels; "ws": ws only */
  if (only && (!strcmp(only, "flash") || !strcmp(only, "ws"))) {
    attn_ctx_destroy(g_ctx);
    printf("%d passed, %d failed: %s\n", passes, failures, failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
  }
  efficient_sweep(&rng);
  efficient_mask_tiles(&rng);
  efficient_scalar_forced(&rng);
  refusals(&rng);
  attn_ctx_destroy(g_ctx);
  printf("%d passed, %d failed: %s\n", passes, failures, failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}

#else

int main(void) {
  printf("SKIP: this build has no CUDA backends (CMake found no CUDA toolkit)\n");
  return 77;
}

#endif
