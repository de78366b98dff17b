/* Helpers shared by the CPU backends and the fp64 reference: storage
 * conversions and element addressing (core/elements.h), row loads/stores in any dtype, mask rows as an
 * fp32 additive bias, fp32 operands and GEMM loops for BLAS, and
 * branch-free exp2/selects that gcc vectorizes at -O3 without -ffast-math
 * (libm's expf does not vectorize there). */
#ifndef ATTNPROF_SRC_ATTN_CPU_COMMON_H
#define ATTNPROF_SRC_ATTN_CPU_COMMON_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn/backend.h"
#include "attn/op_trace.h"
#include "core/elements.h" /* conversions, attn_cpu_offset, attn_cpu_load */

/* "#pragma omp simd" below (and in flash_cpu.c) is a hint for gcc's
 * vectorizer. clang takes it too, but warns (-Wpass-failed) where it cannot
 * follow it, as under ASan; the hint is optional, so that warning is off in
 * the files that include this header. */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

/* Loads n elements of row (b, h, s) starting at d = 0 into dst as fp32. */
void attn_cpu_load_row(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t n,
                       float *dst);
/* Stores n fp32 values into row (b, h, s) of t, converting to t's dtype. */
void attn_cpu_store_row(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t n,
                        const float *src);
/* Keys j0 .. j0+n-1 of query row i of the mask as an fp32 additive bias,
 * times `mul`: bool masks give 0 (attend) or -inf; additive masks their
 * value * mul, where -inf stays -inf. Writes zeros when there is no mask. */
void attn_cpu_mask_row(const attn_args *a, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t n,
                       float mul, float *bias);
/* The key offset of the causal rule: query i sees keys j <= i + offset. */
int64_t attn_cpu_causal_offset(const attn_args *a);
/* Size in bytes of a tensor's logical elements in its storage dtype. */
double attn_cpu_tensor_bytes(const attn_tensor *t);

/* fp32 rows of a [B, H, S, D] operand as BLAS sees them: row (b, h, s) starts
 * at base + b*sb + h*sh + s*ld and its D elements are contiguous. */
typedef struct {
  float *base;
  int64_t sb, sh, ld;
} attn_cpu_mat;

/* Whether t can be handed to BLAS as it is: fp32, unit stride along D, rows
 * not overlapping, leading dimension within BLAS's int. */
int attn_cpu_rows_direct(const attn_tensor *t);
/* t's own memory viewed as an attn_cpu_mat (only when rows_direct). */
attn_cpu_mat attn_cpu_mat_of(const attn_tensor *t);
/* A contiguous fp32 [B, H, S, D] buffer viewed as an attn_cpu_mat. */
attn_cpu_mat attn_cpu_mat_packed(float *buf, const attn_tensor *shape_of);
/* Converts a whole tensor into a contiguous fp32 [B, H, S, D] buffer, and
 * back (OpenMP over rows). */
void attn_cpu_to_f32(const attn_tensor *t, float *dst);
void attn_cpu_from_f32(const attn_tensor *t, const float *src);
/* An fp32 operand for BLAS: t itself when rows_direct (*owned = NULL), else
 * a converted copy the caller frees (*owned). OUT_OF_MEMORY with a message. */
attn_status attn_cpu_operand(const attn_tensor *t, const char *what, attn_cpu_mat *m,
                             float **owned);

/* scores[b, h] = Q[b, h] K[b, h / group]^T for every (b, h): one sgemm each. */
void attn_cpu_gemm_qk(const attn_args *a, const attn_cpu_mat *q, const attn_cpu_mat *k,
                      float *scores);
/* out[b, h] = P[b, h] V[b, h / group] for every (b, h). */
void attn_cpu_gemm_pv(const attn_args *a, const float *p, const attn_cpu_mat *v,
                      const attn_cpu_mat *out);

/* Elements of the [B, Hq, Sq, Sk] score tensor. */
size_t attn_cpu_score_elems(const attn_args *a);
/* The memory check of the backends that materialize S x S: refuses, with
 * the bytes needed and available, when n_buffers score buffers do not fit. */
attn_status attn_cpu_scores_why_not(const attn_args *a, int n_buffers, const char *impl, char *why,
                                    size_t len);
/* The softmax op of naive and math: `rows` rows of n scores in place (OpenMP
 * over rows), each row's lse into lse (NULL: none), recorded as one SOFTMAX
 * op. nan_safe (math): a row whose max is -inf (fully masked) gives zeros and
 * lse -inf, and a NaN score wins the max. Plain (naive, as PyTorch's
 * composition): the max skips NaN, but a NaN score or a fully masked row
 * still makes the row NaN through exp and the sum. */
void attn_cpu_softmax_op(float *scores, int64_t rows, int64_t n, float *lse, int nan_safe);

/* malloc of n fp32 values; NULL with an OUT_OF_MEMORY message naming `what`. */
float *attn_cpu_alloc_f32(size_t n, const char *what);

/* Row reductions written over 16 independent lanes so that gcc vectorizes
 * them without reassociation flags (users compile with -fopenmp). The max is IEEE's "greater" max, which
 * skips NaN; the _nan variant makes NaN win and stick. */
enum { ATTN_CPU_LANES = 16 };

static inline float attn_cpu_row_max(const float *x, int64_t n, int nan_wins) {
  float lane[ATTN_CPU_LANES];
  for (int l = 0; l < ATTN_CPU_LANES; l++) lane[l] = -INFINITY;
  int64_t j = 0;
  for (; j + ATTN_CPU_LANES <= n; j += ATTN_CPU_LANES)
#pragma omp simd /* else gcc unrolls the lanes first and then finds no vectors */
    for (int l = 0; l < ATTN_CPU_LANES; l++) {
      float v = x[j + l];
      lane[l] = (v > lane[l] || (nan_wins && v != v)) ? v : lane[l];
    }
  float m = -INFINITY;
  for (; j < n; j++) m = (x[j] > m || (nan_wins && x[j] != x[j])) ? x[j] : m;
  for (int l = 0; l < ATTN_CPU_LANES; l++)
    m = (lane[l] > m || (nan_wins && lane[l] != lane[l])) ? lane[l] : m;
  return m;
}

static inline float attn_cpu_row_sum(const float *x, int64_t n) {
  float lane[ATTN_CPU_LANES] = {0};
  int64_t j = 0;
  for (; j + ATTN_CPU_LANES <= n; j += ATTN_CPU_LANES)
    for (int l = 0; l < ATTN_CPU_LANES; l++) lane[l] += x[j + l];
  float s = 0;
  for (; j < n; j++) s += x[j];
  for (int l = 0; l < ATTN_CPU_LANES; l++) s += lane[l];
  return s;
}

/* Selects written on the bits: gcc (with its default -ftrapping-math) will
 * not if-convert a select guarded by a float "<" or one whose arm holds a
 * float add, so such loops would stay scalar. Integer selects vectorize. */
static inline __attribute__((always_inline)) int attn_cpu_is_neg_inf(float x) {
  return attn_cpu_f32_bits(x) == 0xff800000u;
}

/* s + bias, except that a -inf bias gives -inf even when s is NaN. */
static inline __attribute__((always_inline)) float attn_cpu_add_bias(float s, float bias) {
  uint32_t hide = -(uint32_t)attn_cpu_is_neg_inf(bias);
  return attn_cpu_bits_f32((attn_cpu_f32_bits(s + bias) & ~hide) | (0xff800000u & hide));
}

/* 2^x, NaN in -> NaN out, 0 for x < -126 (so 2^-inf = 0 exactly). Split
 * x = n + f with n the nearest integer (the 1.5*2^23 add rounds and leaves n
 * in the low mantissa bits), 2^f by its degree-6 Taylor series in f*ln2 on
 * |f| <= 1/2 (relative error < 2e-7), 2^n built in the exponent field.
 * The clamps to [-126, 127] are integer selects on the bits (and "&", not
 * "&&") so that gcc finds no control flow and vectorizes the caller's loop.
 * always_inline: flash inlines it into its AVX2 clone, which only works
 * when no call is kept. */
static inline __attribute__((always_inline)) float attn_cpu_exp2(float x) {
  int32_t ux = (int32_t)attn_cpu_f32_bits(x), mag = ux & 0x7fffffff;
  int not_nan = mag <= 0x7f800000;
  uint32_t under = -(uint32_t)((ux < 0) & (mag > 0x42fc0000) & not_nan); /* x < -126 */
  uint32_t over = -(uint32_t)((ux >= 0) & (mag > 0x42fe0000) & not_nan); /* x > 127 */
  float xc = attn_cpu_bits_f32((attn_cpu_f32_bits(x) & ~(under | over)) | (0xc2fc0000u & under) |
                               (0x42fe0000u & over));
  float t = xc + 12582912.0f;
  float f = xc - (t - 12582912.0f);
  uint32_t e = attn_cpu_f32_bits(t) - 0x4b400000u; /* n, two's complement */
  float p = 1.5403530393381606e-04f;
  p = p * f + 1.3333558146428441e-03f;
  p = p * f + 9.6181291076284772e-03f;
  p = p * f + 5.5504108664821576e-02f;
  p = p * f + 2.4022650695910071e-01f;
  p = p * f + 6.9314718055994531e-01f;
  p = p * f + 1.0f;
  float r = p * attn_cpu_bits_f32((e + 127u) << 23);
  return attn_cpu_bits_f32(attn_cpu_f32_bits(r) & ~under);
}

#define ATTN_CPU_LOG2E 1.4426950408889634
#define ATTN_CPU_LN2 0.6931471805599453

#endif
