/* flash on the CPU: one fused pass of tiled online softmax; the S x S
 * scores never exist, extra memory is O(threads x tile).
 *
 * Work item = (b, query head h, query tile of FL_BQ = 64 rows). OpenMP hands
 * items out dynamically, heaviest first (under a causal rule the last query
 * tiles see the most keys). For each key tile of FL_BK = 64 keys:
 *
 *   St[BK x BQ] = K_tile (c Q_tile)^T       c = scale * log2(e), so exp2 below
 *   hidden keys -> -inf (causal, bool mask), additive mask * log2(e) added
 *   m' = max(m, column max of St)           NaN-propagating
 *   P = exp2(St - m'), l = l * 2^(m - m') + column sums of P
 *   O[BQ x Dp] = O * 2^(m - m') + P^T V_tile
 *
 * and at the end out = O / l, lse = (m + log2 l) ln 2. A row with no visible
 * key keeps m = -inf and l = 0: it gets 0 and lse -inf (exp2 uses 0 instead
 * of m = -inf, so -inf - -inf never happens).
 *
 * Scores are kept key-major (transposed) so every softmax step is an
 * elementwise loop along the 64 queries of the tile: no horizontal
 * reductions, which gcc would not vectorize without -ffast-math.
 *
 * Tile sizes: St is 64 x 64 fp32 = 16 KiB (L1 is 48 KiB here); Q^T, the K
 * and V tiles and O are 64 x D fp32 = 16 KiB each at D = 64, 64 KiB at
 * D = 256: one thread's working set (<= 272 KiB) stays in L2, and each K/V
 * tile is reused by 64 queries. Both GEMMs go through one register-blocked
 * microkernel C[MR x NR] (+)= A[MR x k] B[k x NR] whose accumulators stay in
 * registers. The library is built without -march=native, so the kernel is
 * compiled three times and the CPU picks at run time:
 *   portable (SSE2)  4 x 8,  8 of the 16 xmm registers accumulate
 *   AVX2 + FMA       4 x 16, 8 of the 16 ymm registers
 *   AVX-512          8 x 32, 16 of the 32 zmm registers
 * (64 is a multiple of every MR and NR; D is padded up to NR.) */
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"
#include "attn/cpu/seqs_cpu.h"

enum { FL_BQ = 64, FL_BK = 64, FL_MR_MAX = 8, FL_NR_MAX = 32, FL_MAX_D = 256 };

#define FL_INLINE static inline __attribute__((always_inline))

typedef struct {
  const attn_args *a;
  int64_t hq, group, sq, sk, d, dp; /* dp: D rounded up to NR */
  int64_t q_tiles, causal_off;
  float c; /* scale * log2(e) */
  int k_direct, v_direct;
  const attn_cpu_pages *pg; /* a paged sequence, read in place; NULL: dense */
} fl_problem;

/* Per-thread tiles, fp32. */
typedef struct {
  float *qt;  /* [D][BQ]   c * Q_tile^T */
  float *kb;  /* [BK][D]   K tile when it cannot be read in place */
  float *vb;  /* [BK][Dp]  V tile, D zero-padded to Dp */
  float *st;  /* [BK][BQ]  scores, then probabilities, key-major */
  float *o;   /* [BQ][Dp]  output accumulator */
  float *row; /* [max(D, BK)] one row on its way in or out */
  float m[FL_BQ], l[FL_BQ], mu[FL_BQ], alpha[FL_BQ], rsum[FL_BQ];
} fl_work;

/* The instruction set a kernel clone is compiled for: its microkernel is
 * MR x NR, and whether it has FMA. Compile-time constants in each clone. */
typedef struct {
  int mr, nr, fma;
} fl_isa;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FL_HAVE_X86_CLONES 1
#endif

/* C[MR x NR] = (acc ? C : 0) + A[MR x k] B[k x NR]; A(r, p) = a[r*ars + p*acs].
 * "omp simd" on the NR loop makes gcc vectorize it before it unrolls it;
 * otherwise it vectorizes the k loop with shuffles, 20x slower. The flat
 * accumulator array becomes registers once MR and NR are constants. gcc in
 * ISO C mode does not contract a*b + c (-ffp-contract=off): the FMA clones
 * call fmaf, which becomes the instruction there. */
FL_INLINE void fl_micro_body(int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                             int64_t ldb, float *c, int64_t ldc, int acc, const fl_isa isa) {
  const int mr = isa.mr, nr = isa.nr;
  float t[FL_MR_MAX * FL_NR_MAX];
  for (int n = 0; n < mr * nr; n++) t[n] = 0.0f;
  for (int64_t p = 0; p < k; p++) {
    const float *bp = b + p * ldb;
    for (int r = 0; r < mr; r++) {
      float ar = a[r * ars + p * acs];
#pragma omp simd
      for (int n = 0; n < nr; n++)
        t[r * nr + n] = isa.fma ? fmaf(ar, bp[n], t[r * nr + n]) : t[r * nr + n] + ar * bp[n];
    }
  }
  for (int r = 0; r < mr; r++)
#pragma omp simd
    for (int n = 0; n < nr; n++) c[r * ldc + n] = (acc ? c[r * ldc + n] : 0.0f) + t[r * nr + n];
}

/* One out-of-line microkernel per clone: inlined into the whole kernel,
 * clang 14 kept the AVX-512 accumulators on the stack (10x slower); as its
 * own function every compiler keeps them in registers. */
#define FL_MICRO_ARGS                                                                         \
  int64_t k, const float *a, int64_t ars, int64_t acs, const float *b, int64_t ldb, float *c, \
      int64_t ldc, int acc
static __attribute__((noinline)) void fl_micro_portable(FL_MICRO_ARGS) {
  fl_micro_body(k, a, ars, acs, b, ldb, c, ldc, acc, (fl_isa){4, 8, 0});
}
#ifdef FL_HAVE_X86_CLONES
__attribute__((noinline, target("avx2,fma"))) static void fl_micro_avx2(FL_MICRO_ARGS) {
  fl_micro_body(k, a, ars, acs, b, ldb, c, ldc, acc, (fl_isa){4, 16, 1});
}
__attribute__((noinline, target("avx512f"))) static void fl_micro_avx512(FL_MICRO_ARGS) {
  fl_micro_body(k, a, ars, acs, b, ldb, c, ldc, acc, (fl_isa){8, 32, 1});
}
#endif

FL_INLINE void fl_micro(int64_t k, const float *a, int64_t ars, int64_t acs, const float *b,
                        int64_t ldb, float *c, int64_t ldc, int acc, const fl_isa isa) {
#ifdef FL_HAVE_X86_CLONES
  if (isa.nr == 32) fl_micro_avx512(k, a, ars, acs, b, ldb, c, ldc, acc);
  else if (isa.nr == 16) fl_micro_avx2(k, a, ars, acs, b, ldb, c, ldc, acc);
  else
#endif
    fl_micro_portable(k, a, ars, acs, b, ldb, c, ldc, acc);
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* c * Q rows i0 .. i0+mq-1, transposed into qt; columns mq .. nq-1 zero. */
static void fl_load_q(const fl_problem *p, fl_work *w, int64_t b, int64_t h, int64_t i0, int64_t mq,
                      int64_t nq) {
  for (int64_t i = 0; i < nq; i++) {
    if (i < mq) attn_cpu_load_row(&p->a->q, b, h, i0 + i, p->d, w->row);
    for (int64_t d = 0; d < p->d; d++) w->qt[d * FL_BQ + i] = i < mq ? w->row[d] * p->c : 0.0f;
  }
}

/* Key row j of t, or of the pool's page that holds it (paged sequence). */
static void fl_key_row(const fl_problem *p, const attn_tensor *t, const attn_tensor *pool,
                       int64_t b, int64_t hk, int64_t j, float *dst) {
  if (!pool) {
    attn_cpu_load_row(t, b, hk, j, p->d, dst);
    return;
  }
  int64_t ps = p->pg->page_size;
  attn_cpu_load_row(pool, p->pg->pages[j / ps], hk, j % ps, p->d, dst);
}

/* The K tile as rows of D fp32: in place when possible, else converted with
 * zero rows up to a multiple of mr (the microkernel's row block). */
static const float *fl_load_k(const fl_problem *p, fl_work *w, int64_t b, int64_t hk, int64_t j0,
                              int64_t nk, int mr, int64_t *ld) {
  const attn_tensor *k = &p->a->k;
  if (p->k_direct && nk % mr == 0) {
    *ld = k->strides[2];
    return (const float *)k->data + attn_cpu_offset(k, b, hk, j0, 0);
  }
  for (int64_t j = 0; j < nk; j++)
    fl_key_row(p, k, p->pg ? p->pg->k_pool : NULL, b, hk, j0 + j, w->kb + j * p->d);
  memset(w->kb + nk * p->d, 0, (size_t)((round_up(nk, mr) - nk) * p->d) * sizeof(float));
  *ld = p->d;
  return w->kb;
}

/* The V tile as rows of Dp fp32 (in place when D is already a multiple of NR). */
static const float *fl_load_v(const fl_problem *p, fl_work *w, int64_t b, int64_t hk, int64_t j0,
                              int64_t nk, int64_t *ld) {
  const attn_tensor *v = &p->a->v;
  if (p->v_direct) {
    *ld = v->strides[2];
    return (const float *)v->data + attn_cpu_offset(v, b, hk, j0, 0);
  }
  for (int64_t j = 0; j < nk; j++) {
    float *dst = w->vb + j * p->dp;
    fl_key_row(p, v, p->pg ? p->pg->v_pool : NULL, b, hk, j0 + j, dst);
    for (int64_t d = p->d; d < p->dp; d++) dst[d] = 0.0f;
  }
  *ld = p->dp;
  return w->vb;
}

/* Hidden keys of the tile -> -inf; the additive mask added (in log2 units).
 * Key j hides queries i < j - causal_off: a prefix of each key row. */
static void fl_mask_tile(const fl_problem *p, fl_work *w, int64_t b, int64_t h, int64_t i0,
                         int64_t mq, int64_t j0, int64_t nk) {
  const attn_args *a = p->a;
  if (a->causal != ATTN_CAUSAL_NONE)
    for (int64_t j = 0; j < nk; j++) {
      int64_t hidden = j0 + j - p->causal_off - i0;
      hidden = hidden < 0 ? 0 : hidden > mq ? mq : hidden;
      for (int64_t i = 0; i < hidden; i++) w->st[j * FL_BQ + i] = -INFINITY;
    }
  if (a->mask_kind == ATTN_MASK_NONE) return;
  for (int64_t i = 0; i < mq; i++) {
    attn_cpu_mask_row(a, b, h, i0 + i, j0, nk, (float)ATTN_CPU_LOG2E, w->row);
    for (int64_t j = 0; j < nk; j++) {
      float *s = &w->st[j * FL_BQ + i];
      *s = attn_cpu_add_bias(*s, w->row[j]);
    }
  }
}

/* Online softmax over the tile's nk key rows, for the nq query columns. */
FL_INLINE void fl_softmax_tile(fl_work *w, int64_t nk, int64_t nq) {
  float mx[FL_BQ];
  for (int64_t i = 0; i < nq; i++) mx[i] = w->m[i];
  for (int64_t j = 0; j < nk; j++) {
    const float *s = w->st + j * FL_BQ;
    for (int64_t i = 0; i < nq; i++) mx[i] = (s[i] > mx[i] || s[i] != s[i]) ? s[i] : mx[i];
  }
  for (int64_t i = 0; i < nq; i++) {
    w->mu[i] = mx[i] == -INFINITY ? 0.0f : mx[i];
    w->alpha[i] = attn_cpu_exp2(w->m[i] - w->mu[i]);
    w->m[i] = mx[i];
    w->rsum[i] = 0.0f;
  }
  for (int64_t j = 0; j < nk; j++) {
    float *s = w->st + j * FL_BQ;
    for (int64_t i = 0; i < nq; i++) {
      s[i] = attn_cpu_exp2(s[i] - w->mu[i]);
      w->rsum[i] += s[i];
    }
  }
  for (int64_t i = 0; i < nq; i++) w->l[i] = w->l[i] * w->alpha[i] + w->rsum[i];
}

/* O = alpha O + P^T V for the query rows (padded to mr) of the tile. */
FL_INLINE void fl_pv(const fl_problem *p, fl_work *w, const float *v, int64_t ldv, int64_t nk,
                     int64_t mq, const fl_isa isa) {
  int64_t rows = round_up(mq, isa.mr);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t d = 0; d < p->dp; d++) w->o[i * p->dp + d] *= w->alpha[i];
  for (int64_t i = 0; i < rows; i += isa.mr)
    for (int64_t d = 0; d < p->dp; d += isa.nr)
      fl_micro(nk, w->st + i, 1, FL_BQ, v + d, ldv, w->o + i * p->dp + d, p->dp, 1, isa);
}

/* One key tile against the query tile already in w->qt. */
FL_INLINE void fl_key_tile(const fl_problem *p, fl_work *w, int64_t b, int64_t h, int64_t i0,
                           int64_t mq, int64_t j0, int64_t nk, const fl_isa isa) {
  int64_t hk = h / p->group, ldk, ldv, nq = round_up(mq, isa.nr);
  const float *k = fl_load_k(p, w, b, hk, j0, nk, isa.mr, &ldk);
  for (int64_t j = 0; j < nk; j += isa.mr)
    for (int64_t i = 0; i < nq; i += isa.nr)
      fl_micro(p->d, k + j * ldk, ldk, 1, w->qt + i, FL_BQ, w->st + j * FL_BQ + i, FL_BQ, 0, isa);
  fl_mask_tile(p, w, b, h, i0, mq, j0, nk);
  fl_softmax_tile(w, nk, nq);
  const float *v = fl_load_v(p, w, b, hk, j0, nk, &ldv);
  fl_pv(p, w, v, ldv, nk, mq, isa);
}

/* out = O / l and lse for the tile's rows; rows with l = 0 saw no key. */
static void fl_store(const fl_problem *p, fl_work *w, int64_t b, int64_t h, int64_t i0,
                     int64_t mq) {
  const attn_args *a = p->a;
  for (int64_t i = 0; i < mq; i++) {
    float l = w->l[i], inv = l == 0.0f ? 0.0f : 1.0f / l;
    for (int64_t d = 0; d < p->d; d++) w->row[d] = l == 0.0f ? 0.0f : w->o[i * p->dp + d] * inv;
    attn_cpu_store_row(&a->out, b, h, i0 + i, p->d, w->row);
    if (a->lse)
      a->lse[(b * p->hq + h) * p->sq + i0 + i] =
          l == 0.0f ? -INFINITY : (float)((w->m[i] + log2f(l)) * ATTN_CPU_LN2);
  }
}

/* The keys any row of tile [i0, i0+mq) may see: [0, end). */
static int64_t fl_key_end(const fl_problem *p, int64_t i0, int64_t mq) {
  if (p->a->causal == ATTN_CAUSAL_NONE) return p->sk;
  int64_t end = i0 + mq + p->causal_off;
  return end < 0 ? 0 : end > p->sk ? p->sk : end;
}

FL_INLINE void fl_item(const fl_problem *p, fl_work *w, int64_t item, const fl_isa isa) {
  int64_t bh = item / p->q_tiles, b = bh / p->hq, h = bh % p->hq;
  int64_t i0 = (p->q_tiles - 1 - item % p->q_tiles) * FL_BQ; /* heaviest first */
  int64_t mq = p->sq - i0 < FL_BQ ? p->sq - i0 : FL_BQ, end = fl_key_end(p, i0, mq);
  fl_load_q(p, w, b, h, i0, mq, round_up(mq, isa.nr));
  for (int64_t i = 0; i < FL_BQ; i++) w->m[i] = -INFINITY, w->l[i] = 0.0f;
  memset(w->o, 0, (size_t)(FL_BQ * p->dp) * sizeof(float));
  for (int64_t j0 = 0; j0 < end; j0 += FL_BK)
    fl_key_tile(p, w, b, h, i0, mq, j0, end - j0 < FL_BK ? end - j0 : FL_BK, isa);
  fl_store(p, w, b, h, i0, mq);
}

typedef void (*fl_item_fn)(const fl_problem *, fl_work *, int64_t);

/* Clones of the kernel: the portable one (SSE2 at x86-64's baseline), and
 * AVX2+FMA and AVX-512 ones picked at run time. Each inlines the whole
 * kernel, so the target attribute applies to every loop of it. */
static void fl_item_portable(const fl_problem *p, fl_work *w, int64_t item) {
  fl_item(p, w, item, (fl_isa){4, 8, 0});
}

#ifdef FL_HAVE_X86_CLONES
__attribute__((target("avx2,fma"))) static void fl_item_avx2(const fl_problem *p, fl_work *w,
                                                             int64_t item) {
  fl_item(p, w, item, (fl_isa){4, 16, 1});
}

__attribute__((target("avx512f"))) static void fl_item_avx512(const fl_problem *p, fl_work *w,
                                                              int64_t item) {
  fl_item(p, w, item, (fl_isa){8, 32, 1});
}
#endif

/* The clone this CPU runs; *isa says its microkernel shape. The handle's
 * opts.cpu_isa ("portable", "avx2") caps the choice, so that the tests run
 * every clone on a machine that has AVX-512. */
static fl_item_fn fl_pick(const attn_ctx *ctx, fl_isa *isa) {
#ifdef FL_HAVE_X86_CLONES
  const char *cap = ctx->opts.cpu_isa;
  int portable = cap && strcmp(cap, "portable") == 0, avx2 = cap && strcmp(cap, "avx2") == 0;
  if (!portable && !avx2 && __builtin_cpu_supports("avx512f")) {
    *isa = (fl_isa){8, 32, 1};
    return fl_item_avx512;
  }
  if (!portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    *isa = (fl_isa){4, 16, 1};
    return fl_item_avx2;
  }
#else
  (void)ctx;
#endif
  *isa = (fl_isa){4, 8, 0};
  return fl_item_portable;
}

static int fl_work_alloc(fl_work *w, const fl_problem *p) {
  size_t row = (size_t)(p->d > FL_BK ? p->d : FL_BK);
  w->qt = malloc((size_t)(p->d * FL_BQ) * sizeof(float));
  w->kb = malloc((size_t)(FL_BK * p->d) * sizeof(float));
  w->vb = malloc((size_t)(FL_BK * p->dp) * sizeof(float));
  w->st = malloc((size_t)(FL_BK * FL_BQ) * sizeof(float));
  w->o = malloc((size_t)(FL_BQ * p->dp) * sizeof(float));
  w->row = malloc(row * sizeof(float));
  return w->qt && w->kb && w->vb && w->st && w->o && w->row;
}

static void fl_work_free(fl_work *w) {
  free(w->qt), free(w->kb), free(w->vb), free(w->st), free(w->o), free(w->row);
}

static fl_problem fl_problem_of(const attn_args *a, int nr) {
  fl_problem p = {.a = a,
                  .hq = attn_heads_q(a),
                  .sq = attn_seq_q(a),
                  .sk = attn_seq_k(a),
                  .d = attn_head_dim(a)};
  p.group = p.hq / attn_heads_kv(a);
  p.dp = round_up(p.d, nr);
  p.q_tiles = (p.sq + FL_BQ - 1) / FL_BQ;
  p.causal_off = attn_cpu_causal_offset(a);
  p.c = (float)(attn_scale_of(a) * ATTN_CPU_LOG2E);
  p.k_direct = a->k.dtype == ATTN_DTYPE_F32 && a->k.strides[3] == 1;
  p.v_direct = a->v.dtype == ATTN_DTYPE_F32 && a->v.strides[3] == 1 && p.dp == p.d;
  return p;
}

static attn_status flash_run(attn_ctx *ctx, const attn_args *a, const attn_cpu_pages *pg) {
  fl_isa isa;
  fl_item_fn run_item = fl_pick(ctx, &isa);
  fl_problem p = fl_problem_of(a, isa.nr);
  if (pg) p.pg = pg, p.k_direct = p.v_direct = 0;
  int64_t items = attn_batch(a) * p.hq * p.q_tiles;
  int failed = 0;
  prof_op_scope op = prof_op_begin("flash_fwd_cpu", PROF_KIND_FUSED);
#pragma omp parallel reduction(| : failed)
  {
    fl_work w;
    failed = !fl_work_alloc(&w, &p);
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < items; it++)
      if (!failed) run_item(&p, &w, it);
    fl_work_free(&w);
  }
  prof_op_end(&op,
              (int64_t)(attn_cpu_tensor_bytes(&a->q) + attn_cpu_tensor_bytes(&a->k) +
                        attn_cpu_tensor_bytes(&a->v) + attn_cpu_tensor_bytes(&a->out)),
              attn_flops(a));
  if (failed)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY,
                     "flash_cpu could not allocate its per-thread tiles (%lld bytes)",
                     (long long)((3 * FL_BK + 2 * FL_BQ) * p.dp * 4));
  return ATTN_STATUS_OK;
}

static attn_status flash_dense(attn_ctx *ctx, const attn_args *a) {
  return flash_run(ctx, a, NULL);
}

/* Several sequences: one run each; pages are read where they lie. */
static attn_status flash_forward(attn_ctx *ctx, const attn_args *a) {
  return a->seqs ? attn_cpu_seqs_forward(ctx, a, flash_dense, flash_run) : flash_run(ctx, a, NULL);
}

const attn_backend_impl attn_backend_flash_cpu = {
    .backend = ATTN_BACKEND_FLASH,
    .impl = "flash_cpu",
    .device_kind = ATTN_DEVICE_CPU,
    .summary = "fused tiled online softmax, OpenMP over batch x heads x query tiles, "
               "O(S) memory",
    .dtypes = ATTN_DTYPE_BIT(ATTN_DTYPE_F32) | ATTN_DTYPE_BIT(ATTN_DTYPE_F16) |
              ATTN_DTYPE_BIT(ATTN_DTYPE_BF16),
    .max_head_dim = FL_MAX_D,
    .why_not = NULL,
    .forward = flash_forward,
    .available = NULL,
    .takes_seqs = 1,
};
