/* Argument validation and the small facts every backend asks of attn_args:
 * dimensions, scale, the causal rule, FLOPs and the S x S buffer size. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attn/backend.h"
#include "attn/seqs.h"

/* Larger than any real problem, small enough that products of four stay in
 * int64 and the error can say what would be accepted. */
#define ATTN_MAX_DIM ((int64_t)1 << 24)

static const char *const dtype_names[ATTN_DTYPE_COUNT] = {"f32", "f16", "bf16", "bool"};
static const size_t dtype_sizes[ATTN_DTYPE_COUNT] = {4, 2, 2, 1};

const char *attn_dtype_name(attn_dtype d) {
  return (unsigned)d < ATTN_DTYPE_COUNT ? dtype_names[d] : "?";
}

size_t attn_dtype_size(attn_dtype d) { return (unsigned)d < ATTN_DTYPE_COUNT ? dtype_sizes[d] : 0; }

attn_status attn_dtype_from_name(const char *name, attn_dtype *out) {
  static const struct {
    const char *name;
    attn_dtype d;
  } names[] = {
      {"f32", ATTN_DTYPE_F32},   {"float32", ATTN_DTYPE_F32},   {"fp32", ATTN_DTYPE_F32},
      {"f16", ATTN_DTYPE_F16},   {"float16", ATTN_DTYPE_F16},   {"fp16", ATTN_DTYPE_F16},
      {"bf16", ATTN_DTYPE_BF16}, {"bfloat16", ATTN_DTYPE_BF16},
  };
  for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i].name) == 0) {
      *out = names[i].d;
      return ATTN_STATUS_OK;
    }
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "unknown dtype '%s': accepted are f32, f16, bf16",
                   name ? name : "(null)");
}

static const char *const backend_names[ATTN_BACKEND_COUNT] = {
    "auto", "naive", "naive_inplace", "math", "efficient", "flash", "cudnn"};

const char *attn_backend_name(attn_backend b) {
  return (unsigned)b < ATTN_BACKEND_COUNT ? backend_names[b] : "?";
}

attn_status attn_backend_from_name(const char *name, attn_backend *out) {
  for (int i = 0; name && i < ATTN_BACKEND_COUNT; i++)
    if (strcmp(name, backend_names[i]) == 0) {
      *out = (attn_backend)i;
      return ATTN_STATUS_OK;
    }
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "unknown backend '%s': accepted are auto, naive, naive_inplace, math, "
                   "efficient, flash, cudnn",
                   name ? name : "(null)");
}

attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int device, int64_t b, int64_t h,
                             int64_t s, int64_t d) {
  attn_tensor t = {.data = data,
                   .dtype = dtype,
                   .device = device,
                   .shape = {b, h, s, d},
                   .strides = {h * s * d, s * d, d, 1}};
  return t;
}

attn_args attn_args_make(attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out) {
  attn_args a;
  memset(&a, 0, sizeof a);
  a.q = q, a.k = k, a.v = v, a.out = out;
  a.causal = ATTN_CAUSAL_NONE;
  a.mask_kind = ATTN_MASK_NONE;
  return a;
}

int64_t attn_batch(const attn_args *a) { return a->q.shape[0]; }
int64_t attn_heads_q(const attn_args *a) { return a->q.shape[1]; }
int64_t attn_heads_kv(const attn_args *a) { return a->k.shape[1]; }
int64_t attn_seq_q(const attn_args *a) { return a->q.shape[2]; }
int64_t attn_seq_k(const attn_args *a) { return a->k.shape[2]; }
int64_t attn_head_dim(const attn_args *a) { return a->q.shape[3]; }

double attn_scale_of(const attn_args *a) {
  return a->scale != 0 ? a->scale : 1.0 / sqrt((double)attn_head_dim(a));
}

int64_t attn_causal_last_key(const attn_args *a, int64_t i) {
  int64_t sk = attn_seq_k(a);
  switch (a->causal) {
    case ATTN_CAUSAL_TOP_LEFT:
      return i < sk - 1 ? i : sk - 1;
    case ATTN_CAUSAL_BOTTOM_RIGHT: {
      int64_t last = i + sk - attn_seq_q(a);
      return last < sk - 1 ? last : sk - 1;
    }
    default:
      return sk - 1;
  }
}

double attn_flops(const attn_args *a) {
  if (a->seqs) { /* per sequence: only the pairs each one sees */
    attn_seqs_view v;
    if (attn_seqs_view_make(a, &v)) return 0;
    double f = attn_seqs_flops(a, &v);
    attn_seqs_view_free(&v);
    return f;
  }
  double f = 4.0 * (double)attn_batch(a) * (double)attn_heads_q(a) * (double)attn_seq_q(a) *
             (double)attn_seq_k(a) * (double)attn_head_dim(a);
  return a->causal != ATTN_CAUSAL_NONE ? f / 2 : f;
}

static double logical_bytes(const attn_tensor *t) {
  return (double)t->shape[0] * (double)t->shape[1] * (double)t->shape[2] * (double)t->shape[3] *
         (double)attn_dtype_size(t->dtype);
}

double attn_bytes(const attn_args *a) {
  if (attn_args_check(a)) return 0;
  if (a->seqs) {
    attn_seqs_view v;
    if (attn_seqs_view_make(a, &v)) return 0;
    double b = attn_seqs_bytes(a, &v);
    attn_seqs_view_free(&v);
    return b;
  }
  /* Under a causal rule only the keys some query sees must be read: rows
   * 0..last key of the last query (top-left with Sq < Sk leaves most of K/V
   * unread, and counting it would put a row above the copy roof). */
  double kv = logical_bytes(&a->k) + logical_bytes(&a->v);
  if (a->causal != ATTN_CAUSAL_NONE) {
    int64_t sk = attn_seq_k(a), seen = attn_causal_last_key(a, attn_seq_q(a) - 1) + 1;
    seen = seen < 0 ? 0 : seen > sk ? sk : seen;
    kv *= sk > 0 ? (double)seen / (double)sk : 0;
  }
  double b = logical_bytes(&a->q) + kv + logical_bytes(&a->out);
  return a->mask_kind != ATTN_MASK_NONE ? b + logical_bytes(&a->mask) : b;
}

size_t attn_scores_bytes(const attn_args *a, int n_buffers) {
  double bytes = (double)attn_batch(a) * (double)attn_heads_q(a) * (double)attn_seq_q(a) *
                 (double)attn_seq_k(a) * 4.0 * n_buffers;
  return bytes >= (double)SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}

/* ---- validation -------------------------------------------------------- */

static attn_status check_tensor(const char *name, const attn_tensor *t, int allow_zero_stride) {
  if (!t->data) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s: data pointer is NULL", name);
  if ((unsigned)t->dtype >= ATTN_DTYPE_COUNT)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "%s: dtype %d unknown: accepted are f32, f16, bf16%s", name, (int)t->dtype,
                     allow_zero_stride ? ", bool" : "");
  for (int i = 0; i < 4; i++) {
    if (t->shape[i] <= 0 || t->shape[i] > ATTN_MAX_DIM)
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                       "%s: shape[%d] = %lld: each of B, H, S, D must be in 1..%lld", name, i,
                       (long long)t->shape[i], (long long)ATTN_MAX_DIM);
    if (t->strides[i] < 0 || t->strides[i] > ((int64_t)1 << 40) ||
        (t->strides[i] == 0 && !allow_zero_stride && t->shape[i] > 1))
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                       "%s: stride[%d] = %lld: strides must be positive element counts "
                       "(0 only to broadcast a mask dimension)",
                       name, i, (long long)t->strides[i]);
  }
  return ATTN_STATUS_OK;
}

static attn_status check_qkv(const attn_args *a) {
  const attn_tensor *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out;
  /* With seqs, k and v may be packed or a page pool (attn_seqs_check). */
  if ((!a->seqs && (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0])) ||
      o->shape[0] != q->shape[0])
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "batch sizes differ: q %lld, k %lld, v %lld, out %lld (all must match)",
                     (long long)q->shape[0], (long long)k->shape[0], (long long)v->shape[0],
                     (long long)o->shape[0]);
  if (v->shape[1] != k->shape[1] || v->shape[2] != k->shape[2])
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "k is [%lld heads, %lld keys] but v is [%lld, %lld]: they must match",
                     (long long)k->shape[1], (long long)k->shape[2], (long long)v->shape[1],
                     (long long)v->shape[2]);
  if (q->shape[1] % k->shape[1] != 0)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "q has %lld heads, k/v %lld: the query heads must be a multiple of the "
                     "key/value heads (GQA)",
                     (long long)q->shape[1], (long long)k->shape[1]);
  if (k->shape[3] != q->shape[3] || v->shape[3] != q->shape[3])
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "head dims differ: q %lld, k %lld, v %lld (all must match)",
                     (long long)q->shape[3], (long long)k->shape[3], (long long)v->shape[3]);
  for (int i = 0; i < 4; i++)
    if (o->shape[i] != q->shape[i])
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                       "out shape[%d] = %lld but q has %lld: out must be shaped like q", i,
                       (long long)o->shape[i], (long long)q->shape[i]);
  if (k->dtype != q->dtype || v->dtype != q->dtype || o->dtype != q->dtype ||
      q->dtype == ATTN_DTYPE_BOOL)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "dtypes q %s, k %s, v %s, out %s: all four must be one of f32, f16, bf16",
                     attn_dtype_name(q->dtype), attn_dtype_name(k->dtype),
                     attn_dtype_name(v->dtype), attn_dtype_name(o->dtype));
  if (k->device != q->device || v->device != q->device || o->device != q->device)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "q, k, v and out are on different devices (%d, %d, %d, %d): use one",
                     q->device, k->device, v->device, o->device);
  return ATTN_STATUS_OK;
}

static attn_status check_mask(const attn_args *a) {
  const attn_tensor *m = &a->mask;
  if (a->mask_kind == ATTN_MASK_NONE) return ATTN_STATUS_OK;
  if (a->mask_kind != ATTN_MASK_BOOL && a->mask_kind != ATTN_MASK_ADDITIVE)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "mask kind %d unknown: accepted are none, bool, additive", (int)a->mask_kind);
  attn_status st = check_tensor("mask", m, 1);
  if (st) return st;
  if ((a->mask_kind == ATTN_MASK_BOOL) != (m->dtype == ATTN_DTYPE_BOOL))
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "mask dtype %s does not fit a %s mask: bool masks are bool, additive masks "
                     "f32, f16 or bf16",
                     attn_dtype_name(m->dtype),
                     a->mask_kind == ATTN_MASK_BOOL ? "bool" : "additive");
  const int64_t want[4] = {attn_batch(a), attn_heads_q(a), attn_seq_q(a), attn_seq_k(a)};
  for (int i = 0; i < 4; i++)
    if (m->shape[i] != want[i] && !(i < 2 && m->shape[i] == 1))
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                       "mask shape [%lld, %lld, %lld, %lld] does not broadcast to [B=%lld, H=%lld, "
                       "Sq=%lld, Sk=%lld]: B and H may be 1",
                       (long long)m->shape[0], (long long)m->shape[1], (long long)m->shape[2],
                       (long long)m->shape[3], (long long)want[0], (long long)want[1],
                       (long long)want[2], (long long)want[3]);
  if (m->device != a->q.device)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "mask is on device %d but q on %d: use one",
                     m->device, a->q.device);
  return ATTN_STATUS_OK;
}

attn_status attn_args_check(const attn_args *a) {
  if (!a) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "args is NULL");
  static const char *const names[4] = {"q", "k", "v", "out"};
  const attn_tensor *ts[4] = {&a->q, &a->k, &a->v, &a->out};
  for (int i = 0; i < 4; i++) {
    attn_status st = check_tensor(names[i], ts[i], 0);
    if (st) return st;
  }
  attn_status st = check_qkv(a);
  if (st) return st;
  if ((unsigned)a->causal > ATTN_CAUSAL_BOTTOM_RIGHT)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "causal mode %d unknown: accepted are none, top-left, bottom-right",
                     (int)a->causal);
  if (!isfinite(a->scale))
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "scale is %g: give a finite number (0 means 1/sqrt(D))", a->scale);
  if (a->seqs) return attn_seqs_check(a);
  return check_mask(a);
}
