/* Random attention problems for the backend tests, and the check of one run
 * against the fp64 reference (see attn_testutil.h). Only the public API is
 * used: the tests look at the library from the outside. */
#include "attn/attn_testutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- RNG: splitmix64 ----------------------------------------------------- */

uint64_t test_rng_next(test_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double test_rng_uniform(test_rng *r) { return (double)(test_rng_next(r) >> 11) * 0x1p-53; }

int64_t test_rng_int(test_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(test_rng_next(r) % (uint64_t)(hi - lo + 1));
}

double test_rng_normal(test_rng *r) { /* Box-Muller */
  double u = test_rng_uniform(r), v = test_rng_uniform(r);
  return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

uint64_t test_seed(uint64_t fallback) {
  const char *e = getenv("ATTNPROF_TEST_SEED");
  return e && *e ? strtoull(e, NULL, 0) : fallback;
}

/* ---- specs ---------------------------------------------------------------- */

static int64_t pick_d(test_rng *r) {
  static const int64_t ds[] = {1,  2,  3,  5,  8,   16,  31,  32,  33,  48,  63,  64,
                               64, 65, 80, 96, 100, 127, 128, 129, 160, 192, 255, 256};
  return ds[test_rng_int(r, 0, (int64_t)(sizeof ds / sizeof ds[0]) - 1)];
}

static int64_t pick_s(test_rng *r) {
  double u = test_rng_uniform(r);
  return u < 0.3   ? test_rng_int(r, 1, 8)
         : u < 0.8 ? test_rng_int(r, 9, 80)
                   : test_rng_int(r, 81, 200);
}

problem_spec problem_random(test_rng *r) {
  problem_spec s;
  memset(&s, 0, sizeof s);
  s.dtype = (attn_dtype)test_rng_int(r, 0, 2);
  s.b = test_rng_int(r, 1, 2);
  s.hkv = test_rng_int(r, 1, 3);
  s.hq = s.hkv * test_rng_int(r, 1, 3);
  s.d = pick_d(r);
  s.sq = pick_s(r);
  s.sk = test_rng_uniform(r) < 0.2 ? s.sq : pick_s(r);
  /* keep one problem under ~3 MFLOP so the sweep stays fast under ASan */
  while (s.b * s.hq * s.sq * s.sk * s.d > 3000000) {
    if (s.sq > 1) s.sq = (s.sq + 1) / 2;
    if (s.sk > 1) s.sk = (s.sk + 1) / 2;
  }
  double u = test_rng_uniform(r);
  s.causal = u < 0.4 ? ATTN_CAUSAL_NONE : u < 0.7 ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_BOTTOM_RIGHT;
  u = test_rng_uniform(r);
  s.mask = u < 0.5 ? ATTN_MASK_NONE : u < 0.75 ? ATTN_MASK_BOOL : ATTN_MASK_ADDITIVE;
  s.mask_dtype = s.mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : (attn_dtype)test_rng_int(r, 0, 2);
  s.mask_b1 = (int)test_rng_int(r, 0, 1);
  s.mask_h1 = (int)test_rng_int(r, 0, 1);
  s.mask_zero_stride = (int)test_rng_int(r, 0, 1);
  s.masked_rows = test_rng_uniform(r) < 0.3;
  s.layout = (test_layout)test_rng_int(r, 0, LAYOUT_COUNT - 1);
  s.lse = test_rng_uniform(r) < 0.7;
  s.scale = test_rng_uniform(r) < 0.7 ? 0.0 : 0.05 + 0.95 * test_rng_uniform(r);
  return s;
}

void problem_describe(const problem_spec *s, char *buf, size_t n) {
  static const char *const causal[] = {"none", "top-left", "bottom-right"};
  static const char *const mask[] = {"none", "bool", "additive"};
  static const char *const layout[] = {"bhsd", "bshd", "bhsd+pad", "bhds"};
  snprintf(buf, n,
           "%s B=%lld Hq=%lld Hkv=%lld Sq=%lld Sk=%lld D=%lld causal=%s mask=%s%s%s%s%s%s%s "
           "layout=%s lse=%d scale=%g",
           attn_dtype_name(s->dtype), (long long)s->b, (long long)s->hq, (long long)s->hkv,
           (long long)s->sq, (long long)s->sk, (long long)s->d, causal[s->causal], mask[s->mask],
           s->mask == ATTN_MASK_ADDITIVE ? "/" : "",
           s->mask == ATTN_MASK_ADDITIVE ? attn_dtype_name(s->mask_dtype) : "",
           s->mask && s->mask_b1 ? " bcast-B" : "", s->mask && s->mask_h1 ? " bcast-H" : "",
           s->mask && s->mask_zero_stride ? " (stride 0)" : "",
           s->mask && s->masked_rows ? " +masked rows" : "", layout[s->layout], s->lse, s->scale);
}

/* ---- tensors -------------------------------------------------------------- */

static const uint32_t POISON_F32 = 0x7fa5a5a5u;
static const uint16_t POISON_F16 = 0x7d5au, POISON_BF16 = 0x7fa5u;

static attn_tensor layout_tensor(attn_dtype dt, test_layout l, int64_t b, int64_t h, int64_t s,
                                 int64_t d) {
  attn_tensor t = attn_tensor_bhsd(NULL, dt, ATTN_DEVICE_CPU, b, h, s, d);
  int64_t ld = d + 3;
  switch (l) {
    case LAYOUT_BSHD:
      t.strides[0] = s * h * d, t.strides[1] = d, t.strides[2] = h * d;
      break;
    case LAYOUT_BHSD_PADDED:
      t.strides[0] = h * s * ld, t.strides[1] = s * ld, t.strides[2] = ld;
      break;
    case LAYOUT_BHDS:
      t.strides[2] = 1, t.strides[3] = s;
      break;
    default:
      break;
  }
  return t;
}

/* Writes the poison NaN into every element of storage [0, n). */
static void poison_fill(void *mem, attn_dtype dt, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (dt == ATTN_DTYPE_F32) memcpy((char *)mem + 4 * i, &POISON_F32, 4);
    else if (dt == ATTN_DTYPE_F16) memcpy((char *)mem + 2 * i, &POISON_F16, 2);
    else memcpy((char *)mem + 2 * i, &POISON_BF16, 2);
  }
}

static int is_poison(const void *mem, attn_dtype dt, int64_t off) {
  uint32_t u32 = 0;
  uint16_t u16 = 0;
  if (dt == ATTN_DTYPE_F32) return memcpy(&u32, (const char *)mem + 4 * off, 4), u32 == POISON_F32;
  memcpy(&u16, (const char *)mem + 2 * off, 2);
  return u16 == (dt == ATTN_DTYPE_F16 ? POISON_F16 : POISON_BF16);
}

/* Allocates t's storage (plus a guard of 16 elements), poisoned. */
static int tensor_alloc(attn_tensor *t, void **mem, size_t *bytes) {
  size_t n = (size_t)attn_tensor_span(t) + 16, es = attn_dtype_size(t->dtype);
  *bytes = n * es;
  if (!(*mem = malloc(*bytes))) return -1;
  if (t->dtype == ATTN_DTYPE_BOOL) memset(*mem, 0xcd, *bytes);
  else poison_fill(*mem, t->dtype, n);
  t->data = *mem;
  return 0;
}

static void fill_normal(attn_tensor *t, test_rng *r) {
  for (int64_t b = 0; b < t->shape[0]; b++)
    for (int64_t h = 0; h < t->shape[1]; h++)
      for (int64_t s = 0; s < t->shape[2]; s++)
        for (int64_t d = 0; d < t->shape[3]; d++)
          attn_tensor_set(t, b, h, s, d, test_rng_normal(r));
}

/* The mask: [B|1, H|1, Sq, Sk] (or full size with stride-0 dims). Bool: 80%
 * attend; additive: N(0, 1.5^2) with 10% -inf. masked_rows: about a quarter
 * of the query rows hidden completely. */
static int make_mask(test_problem *p, test_rng *r) {
  const problem_spec *s = &p->spec;
  int64_t mb = s->mask_b1 ? 1 : s->b, mh = s->mask_h1 ? 1 : s->hq;
  attn_tensor m = attn_tensor_bhsd(NULL, s->mask_dtype, ATTN_DEVICE_CPU, mb, mh, s->sq, s->sk);
  if (tensor_alloc(&m, &p->mem[4], &p->mem_bytes[4])) return -1;
  for (int64_t i = 0; i < s->sq; i++) {
    int hide_row = s->masked_rows && test_rng_uniform(r) < 0.25;
    for (int64_t b = 0; b < mb; b++)
      for (int64_t h = 0; h < mh; h++)
        for (int64_t j = 0; j < s->sk; j++) {
          double v = s->mask == ATTN_MASK_BOOL   ? (double)(test_rng_uniform(r) < 0.8)
                     : test_rng_uniform(r) < 0.1 ? -INFINITY
                                                 : 1.5 * test_rng_normal(r);
          if (hide_row) v = s->mask == ATTN_MASK_BOOL ? 0.0 : -INFINITY;
          attn_tensor_set(&m, b, h, i, j, v);
        }
  }
  if (s->mask_zero_stride) { /* the same data seen at full size through stride 0 */
    if (s->mask_b1) m.shape[0] = s->b, m.strides[0] = 0;
    if (s->mask_h1) m.shape[1] = s->hq, m.strides[1] = 0;
  }
  p->args.mask = m;
  p->args.mask_kind = s->mask;
  return 0;
}

int problem_make(test_problem *p, const problem_spec *s, test_rng *r) {
  memset(p, 0, sizeof *p);
  p->spec = *s;
  attn_tensor t[4] = {layout_tensor(s->dtype, s->layout, s->b, s->hq, s->sq, s->d),
                      layout_tensor(s->dtype, s->layout, s->b, s->hkv, s->sk, s->d),
                      layout_tensor(s->dtype, s->layout, s->b, s->hkv, s->sk, s->d),
                      layout_tensor(s->dtype, s->layout, s->b, s->hq, s->sq, s->d)};
  for (int i = 0; i < 4; i++) {
    if (tensor_alloc(&t[i], &p->mem[i], &p->mem_bytes[i])) return -1;
    if (i < 3) fill_normal(&t[i], r); /* gaps between rows stay NaN: never read */
  }
  p->args = attn_args_make(t[0], t[1], t[2], t[3]);
  p->args.causal = s->causal;
  p->args.scale = s->scale;
  if (s->mask != ATTN_MASK_NONE && make_mask(p, r)) return -1;
  p->lse_n = (size_t)(s->b * s->hq * s->sq);
  size_t out_n = p->lse_n * (size_t)s->d;
  p->ref = malloc(out_n * sizeof(double));
  p->lse_ref = malloc(p->lse_n * sizeof(double));
  p->out_snapshot = malloc(p->mem_bytes[3]);
  if (s->lse) p->args.lse = malloc((p->lse_n + 16) * sizeof(float));
  if (!p->ref || !p->lse_ref || !p->out_snapshot || (s->lse && !p->args.lse)) return -1;
  return attn_reference_f64(&p->args, p->ref, p->lse_ref) == ATTN_STATUS_OK ? 0 : -1;
}

void problem_free(test_problem *p) {
  for (int i = 0; i < 5; i++) free(p->mem[i]);
  free(p->ref);
  free(p->lse_ref);
  free(p->out_snapshot);
  free(p->args.lse);
  memset(p, 0, sizeof *p);
}

void problem_poison(test_problem *p) {
  size_t n = p->mem_bytes[3] / attn_dtype_size(p->spec.dtype);
  poison_fill(p->mem[3], p->spec.dtype, n);
  memcpy(p->out_snapshot, p->mem[3], p->mem_bytes[3]);
  if (p->args.lse) poison_fill(p->args.lse, ATTN_DTYPE_F32, p->lse_n + 16);
}

double test_unit_roundoff(attn_dtype dt) {
  return dt == ATTN_DTYPE_F32 ? 0x1p-24 : dt == ATTN_DTYPE_F16 ? 0x1p-11 : 0x1p-8;
}

/* ---- the engine handle ---------------------------------------------------- */

attn_ctx *test_engine_new(const attn_ctx_opts *opts) {
  attn_ctx_opts o = attn_ctx_opts_default();
  attn_ctx *ctx = NULL;
  if (!opts && attn_ctx_opts_from_env(&o) != ATTN_STATUS_OK) {
    fprintf(stderr, "test: the environment's engine options: %s\n", attn_last_error());
    exit(1);
  }
  if (attn_ctx_create(opts ? opts : &o, &ctx) != ATTN_STATUS_OK) {
    fprintf(stderr, "test: attn_ctx_create: %s\n", attn_last_error());
    exit(1);
  }
  return ctx;
}

static attn_ctx *g_engine;

static void engine_destroy(void) {
  attn_ctx_destroy(g_engine);
  g_engine = NULL;
}

attn_ctx *test_engine(void) {
  if (!g_engine) {
    g_engine = test_engine_new(NULL);
    atexit(engine_destroy);
  }
  return g_engine;
}

/* ---- the check ------------------------------------------------------------ */

typedef struct {
  double diff2, ref2;
  unsigned char *logical; /* byte map of out: 1 where a logical element lies */
} check_acc;

__attribute__((format(printf, 2, 3))) static int fail(check_result *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why, sizeof c->why, fmt, ap);
  va_end(ap);
  c->ok = 0;
  return 0;
}

/* One row of out: written, masked-row convention, error accumulated. */
static int check_row(const test_problem *p, check_acc *acc, check_result *c, int64_t b, int64_t h,
                     int64_t i, int masked, int masked_nan) {
  const attn_tensor *o = &p->args.out;
  size_t es = attn_dtype_size(o->dtype);
  int64_t row = (b * p->spec.hq + h) * p->spec.sq + i;
  for (int64_t d = 0; d < p->spec.d; d++) {
    int64_t off = b * o->strides[0] + h * o->strides[1] + i * o->strides[2] + d * o->strides[3];
    memset(acc->logical + off * (int64_t)es, 1, es);
    double got = attn_tensor_get(o, b, h, i, d), want = p->ref[row * p->spec.d + d];
    if (is_poison(o->data, o->dtype, off))
      return fail(c, "out[%lld,%lld,%lld,%lld] never written (still poison %g; ref %g)",
                  (long long)b, (long long)h, (long long)i, (long long)d, got, want);
    if (masked && (masked_nan ? !isnan(got) : got != 0.0))
      return fail(c, "out[%lld,%lld,%lld,%lld] = %g in a fully masked row: expected %g",
                  (long long)b, (long long)h, (long long)i, (long long)d, got,
                  masked_nan ? NAN : 0.0);
    if (masked && masked_nan) continue;
    if (!isfinite(got) && isfinite(want))
      return fail(c, "out[%lld,%lld,%lld,%lld] = %g but the reference is %g", (long long)b,
                  (long long)h, (long long)i, (long long)d, got, want);
    acc->diff2 += (got - want) * (got - want);
    acc->ref2 += want * want;
  }
  return 1;
}

static int check_lse(const test_problem *p, check_result *c, int masked_nan, double tol) {
  for (size_t r = 0; p->args.lse && r < p->lse_n; r++) {
    double got = p->args.lse[r], want = p->lse_ref[r];
    long long i = (long long)(r % (size_t)p->spec.sq), bh = (long long)(r / (size_t)p->spec.sq);
    if (is_poison(p->args.lse, ATTN_DTYPE_F32, (int64_t)r))
      return fail(c, "lse[%lld,%lld,%lld] never written (%g; ref %g)", bh / p->spec.hq,
                  bh % p->spec.hq, i, got, want);
    if (want == -INFINITY ? (masked_nan ? !isnan(got) : got != -INFINITY)
                          : !(fabs(got - want) <= tol * (1 + fabs(want))))
      return fail(c, "lse[%lld,%lld,%lld] = %.9g but the reference is %.9g", bh / p->spec.hq,
                  bh % p->spec.hq, i, got, want);
    if (want != -INFINITY && fabs(got - want) / (1 + fabs(want)) > c->lse_err)
      c->lse_err = fabs(got - want) / (1 + fabs(want));
  }
  for (size_t r = p->lse_n; p->args.lse && r < p->lse_n + 16; r++)
    if (!is_poison(p->args.lse, ATTN_DTYPE_F32, (int64_t)r))
      return fail(c, "lse written past its end, at element %zu", r);
  return 1;
}

/* Bytes of out outside the logical elements (row gaps, the guard) unchanged. */
static int check_untouched(const test_problem *p, const check_acc *acc, check_result *c) {
  const unsigned char *now = p->mem[3];
  for (size_t i = 0; i < p->mem_bytes[3]; i++)
    if (!acc->logical[i] && now[i] != p->out_snapshot[i])
      return fail(c, "out byte %zu, outside the tensor's elements, was written", i);
  return 1;
}

static int check_rows(const test_problem *p, check_acc *acc, check_result *c, int masked_nan) {
  const problem_spec *s = &p->spec;
  for (int64_t b = 0; b < s->b; b++)
    for (int64_t h = 0; h < s->hq; h++)
      for (int64_t i = 0; i < s->sq; i++) {
        int masked = p->lse_ref[(b * s->hq + h) * s->sq + i] == -INFINITY;
        c->masked_rows += masked;
        if (!check_row(p, acc, c, b, h, i, masked, masked_nan)) return 0;
      }
  return 1;
}

check_result problem_check(const test_problem *p, int masked_nan, double tol, double lse_tol) {
  check_result c = {.ok = 1};
  check_acc acc = {0, 0, calloc(p->mem_bytes[3], 1)};
  if (!acc.logical) {
    snprintf(c.why, sizeof c.why, "out of memory in the test");
    c.ok = 0;
    return c;
  }
  if (check_rows(p, &acc, &c, masked_nan) && check_lse(p, &c, masked_nan, lse_tol) &&
      check_untouched(p, &acc, &c)) {
    c.rel_err = acc.ref2 > 0 ? sqrt(acc.diff2 / acc.ref2) : sqrt(acc.diff2);
    if (!(c.rel_err <= tol)) {
      c.ok = 0;
      snprintf(c.why, sizeof c.why, "||out - ref|| / ||ref|| = %.3e exceeds the tolerance %.0e",
               c.rel_err, tol);
    }
  }
  free(acc.logical);
  return c;
}
