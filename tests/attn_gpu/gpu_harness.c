/* The GPU correctness harness (see gpu_harness.h): problem draws, host and
 * device copies of the inputs, the fp64 reference, one checked run. */
#include "attn_gpu/gpu_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/testing.h"

uint64_t gpu_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t gpu_rand_range(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(gpu_rand(s) % (uint64_t)(hi - lo + 1));
}

static double uniform(uint64_t *s) { return (double)(gpu_rand(s) >> 11) * 0x1.0p-53; }

static int64_t pick(uint64_t *s, const int64_t *v, int n) { return v[gpu_rand_range(s, 0, n - 1)]; }

/* Sequence lengths: the edges (1, odd, one past a tile) and random ones. */
static int64_t draw_seq(uint64_t *s) {
  static const int64_t edges[] = {1, 2, 7, 16, 31, 64, 65, 100, 128, 129};
  return gpu_rand_range(s, 0, 2) ? pick(s, edges, 10) : gpu_rand_range(s, 1, 160);
}

static gpu_problem draw_wild(uint64_t *s, attn_dtype dt) {
  static const int64_t dims[] = {1, 2, 3, 8, 16, 31, 32, 40, 64, 80, 96, 128, 256};
  static const attn_dtype mask_dts[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
  gpu_problem p = {.dtype = dt};
  p.b = gpu_rand_range(s, 1, 3);
  p.hkv = gpu_rand_range(s, 1, 3);
  p.hq = p.hkv * gpu_rand_range(s, 1, 3);
  p.sq = draw_seq(s), p.sk = draw_seq(s);
  p.d = pick(s, dims, 13);
  p.causal = (attn_causal)gpu_rand_range(s, 0, 2);
  int m = (int)gpu_rand_range(s, 0, 3);
  p.mask = m < 2 ? ATTN_MASK_NONE : m == 2 ? ATTN_MASK_BOOL : ATTN_MASK_ADDITIVE;
  p.mask_dtype = p.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : mask_dts[gpu_rand_range(s, 0, 2)];
  p.mask_b1 = (int)gpu_rand_range(s, 0, 1), p.mask_h1 = (int)gpu_rand_range(s, 0, 1);
  p.mask_zero_stride = !p.mask_b1 && !p.mask_h1 && gpu_rand_range(s, 0, 1);
  p.layout = (int)gpu_rand_range(s, 0, GPU_LAYOUT_COUNT - 1);
  p.pad = (int)gpu_rand_range(s, 1, 9);
  p.lse = (int)gpu_rand_range(s, 0, 1);
  /* A custom scale keeps scores of order 1, as 1/sqrt(D) does: 16-bit
   * score storage (naive) rounds large scores coarsely, which is the
   * dtype's limit, not a bug. */
  p.scale = gpu_rand_range(s, 0, 2) ? 0 : (0.5 + 1.5 * uniform(s)) / sqrt((double)p.d);
  return p;
}

static gpu_problem draw_plain(uint64_t *s, attn_dtype dt) {
  static const int64_t seqs[] = {64, 128, 192}, dims[] = {64, 128}, heads[] = {1, 2, 4};
  gpu_problem p = {.dtype = dt, .mask = ATTN_MASK_NONE, .layout = GPU_LAYOUT_BHSD};
  p.b = gpu_rand_range(s, 1, 2);
  p.hq = p.hkv = pick(s, heads, 3);
  p.sq = p.sk = pick(s, seqs, 3);
  p.d = pick(s, dims, 2);
  p.causal = gpu_rand_range(s, 0, 1) ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  return p;
}

gpu_problem gpu_problem_draw(uint64_t *rng, attn_dtype dt, int plain) {
  /* Redraw wild problems whose fp64 reference would take long on the host. */
  for (;;) {
    gpu_problem p = plain ? draw_plain(rng, dt) : draw_wild(rng, dt);
    if ((double)p.b * p.hq * p.sq * p.sk * p.d <= 1.5e7) return p;
  }
}

void gpu_problem_describe(const gpu_problem *p, char *buf, size_t len) {
  static const char *const causal[] = {"none", "top-left", "bottom-right"};
  static const char *const mask[] = {"none", "bool", "additive"};
  static const char *const layout[] = {"bhsd", "bshd", "padded", "d-strided"};
  snprintf(buf, len,
           "%s B=%lld Hq=%lld Hkv=%lld Sq=%lld Sk=%lld D=%lld causal=%s mask=%s%s%s%s "
           "layout=%s%s scale=%g",
           attn_dtype_name(p->dtype), (long long)p->b, (long long)p->hq, (long long)p->hkv,
           (long long)p->sq, (long long)p->sk, (long long)p->d, causal[p->causal], mask[p->mask],
           p->mask ? "/" : "", p->mask ? attn_dtype_name(p->mask_dtype) : "",
           p->mask_zero_stride                     ? "(stride-0 broadcast)"
           : p->mask && (p->mask_b1 || p->mask_h1) ? "(size-1 broadcast)"
                                                   : "",
           layout[p->layout], p->lse ? " lse" : "", p->scale);
}

/* A [B, H, S, D] tensor in the problem's layout (data set later). */
static attn_tensor shaped(const gpu_problem *p, int64_t h, int64_t s) {
  int64_t d = p->d, row = p->layout == GPU_LAYOUT_PADDED ? d + p->pad : d;
  int64_t e = p->layout == GPU_LAYOUT_D_STRIDED ? 2 : 1;
  attn_tensor t = {.dtype = p->dtype, .device = ATTN_DEVICE_CPU, .shape = {p->b, h, s, d}};
  if (p->layout == GPU_LAYOUT_BSHD) {
    int64_t st[4] = {s * h * d, d, h * d, 1};
    memcpy(t.strides, st, sizeof st);
  } else {
    int64_t st[4] = {h * s * row * e, s * row * e, row * e, e};
    memcpy(t.strides, st, sizeof st);
  }
  return t;
}

static attn_tensor mask_shaped(const gpu_problem *p) {
  int64_t mb = p->mask_b1 ? 1 : p->b, mh = p->mask_h1 ? 1 : p->hq;
  attn_tensor t = {.dtype = p->mask_dtype,
                   .device = ATTN_DEVICE_CPU,
                   .shape = {mb, mh, p->sq, p->sk},
                   .strides = {mh * p->sq * p->sk, p->sq * p->sk, p->sk, 1}};
  if (p->mask_zero_stride) t.strides[0] = t.strides[1] = 0;
  return t;
}

static void fill_random(attn_tensor *t, uint64_t *s) {
  for (int64_t b = 0; b < t->shape[0]; b++)
    for (int64_t h = 0; h < t->shape[1]; h++)
      for (int64_t i = 0; i < t->shape[2]; i++)
        for (int64_t d = 0; d < t->shape[3]; d++)
          attn_tensor_set(t, b, h, i, d, 2 * uniform(s) - 1);
}

/* bool: about 1 in 5 keys hidden; additive: [-2, 2] with 1 in 10 at -inf. */
static void fill_mask(attn_tensor *t, attn_mask_kind kind, uint64_t *s) {
  for (int64_t b = 0; b < t->shape[0]; b++)
    for (int64_t h = 0; h < t->shape[1]; h++)
      for (int64_t i = 0; i < t->shape[2]; i++)
        for (int64_t j = 0; j < t->shape[3]; j++) {
          double u = uniform(s);
          attn_tensor_set(t, b, h, i, j,
                          kind == ATTN_MASK_BOOL ? (u >= 0.2)
                          : u < 0.1              ? -INFINITY
                                                 : 4 * u - 2);
        }
}

/* Host and device buffers of slot i holding t's span; the host copy is
 * filled with 0xFF so that gaps between rows hold a known pattern. */
static int alloc_slot(gpu_case *c, int i, attn_tensor *t) {
  c->bytes[i] = (size_t)attn_tensor_span(t) * attn_dtype_size(t->dtype);
  if (!(c->hbuf[i] = malloc(c->bytes[i]))) return -1;
  memset(c->hbuf[i], 0xff, c->bytes[i]);
  if (attn_cuda_malloc(c->device, c->bytes[i], &c->dbuf[i])) return -1;
  t->data = c->hbuf[i];
  return 0;
}

static int make_tensors(gpu_case *c, uint64_t *rng) {
  const gpu_problem *p = &c->p;
  attn_tensor q = shaped(p, p->hq, p->sq), k = shaped(p, p->hkv, p->sk),
              v = shaped(p, p->hkv, p->sk), o = shaped(p, p->hq, p->sq);
  if (alloc_slot(c, 0, &q) || alloc_slot(c, 1, &k) || alloc_slot(c, 2, &v) || alloc_slot(c, 3, &o))
    return -1;
  fill_random(&q, rng), fill_random(&k, rng), fill_random(&v, rng);
  c->host = attn_args_make(q, k, v, o);
  c->host.causal = p->causal, c->host.scale = p->scale;
  if (p->mask != ATTN_MASK_NONE) {
    attn_tensor m = mask_shaped(p);
    if (alloc_slot(c, 4, &m)) return -1;
    fill_mask(&m, p->mask, rng);
    c->host.mask = m, c->host.mask_kind = p->mask;
  }
  if (p->lse) {
    attn_tensor l = {.dtype = ATTN_DTYPE_F32,
                     .shape = {p->b, p->hq, p->sq, 1},
                     .strides = {p->hq * p->sq, p->sq, 1, 1}};
    if (alloc_slot(c, 5, &l)) return -1;
    c->host.lse = c->hbuf[5];
  }
  return 0;
}

/* The device args: the same tensors pointing at device copies. */
static int to_device(gpu_case *c) {
  attn_tensor *ts[5] = {&c->dev.q, &c->dev.k, &c->dev.v, &c->dev.out, &c->dev.mask};
  c->dev = c->host;
  for (int i = 0; i < 5; i++) {
    if (!c->dbuf[i]) continue;
    ts[i]->data = c->dbuf[i], ts[i]->device = c->device;
    if (attn_cuda_to_device(c->device, c->dbuf[i], c->hbuf[i], c->bytes[i])) return -1;
  }
  c->dev.lse = c->dbuf[5];
  return 0;
}

int gpu_case_create(gpu_case *c, const gpu_problem *p, int device, uint64_t *rng) {
  memset(c, 0, sizeof *c);
  c->p = *p, c->device = device;
  size_t rows = (size_t)(p->b * p->hq * p->sq);
  c->ref_out = malloc(rows * (size_t)p->d * sizeof(double));
  c->ref_lse = malloc(rows * sizeof(double));
  if (!c->ref_out || !c->ref_lse || make_tensors(c, rng) || to_device(c) ||
      attn_reference_f64(&c->host, c->ref_out, c->ref_lse)) {
    fprintf(stderr, "harness: could not set up a case: %s\n", attn_last_error());
    return -1;
  }
  return 0;
}

int gpu_case_refill(gpu_case *c, uint64_t *rng) {
  attn_tensor *t[3] = {&c->host.q, &c->host.k, &c->host.v};
  for (int i = 0; i < 3; i++) {
    fill_random(t[i], rng);
    if (attn_cuda_to_device(c->device, c->dbuf[i], c->hbuf[i], c->bytes[i])) return -1;
  }
  return attn_reference_f64(&c->host, c->ref_out, c->ref_lse) == ATTN_STATUS_OK ? 0 : -1;
}

double gpu_unit_roundoff(attn_dtype dt) {
  return dt == ATTN_DTYPE_F32 ? 0x1p-24 : dt == ATTN_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
}

attn_ctx *gpu_engine_new(const attn_ctx_opts *opts) {
  attn_ctx_opts o = attn_ctx_opts_default();
  attn_ctx *ctx = NULL;
  if (opts) o = *opts;
  else if (attn_ctx_opts_from_env(&o)) {
    fprintf(stderr, "harness: the environment's engine options: %s\n", attn_last_error());
    exit(1);
  }
  if (attn_ctx_create(&o, &ctx)) {
    fprintf(stderr, "harness: attn_ctx_create: %s\n", attn_last_error());
    exit(1);
  }
  return ctx;
}

void gpu_case_destroy(gpu_case *c) {
  for (int i = 0; i < 6; i++) {
    free(c->hbuf[i]);
    attn_cuda_free(c->device, c->dbuf[i]);
  }
  free(c->ref_out);
  free(c->ref_lse);
  memset(c, 0, sizeof *c);
}
