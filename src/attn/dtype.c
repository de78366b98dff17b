/* Storage dtypes and host-tensor utilities: fp32 <-> bf16/f16 conversions
 * (round to nearest even; NaN, Inf and subnormals exact), element access
 * through strides, the span a tensor's strides reach, the relative error the
 * tests and the CLI report. */
#include <math.h>
#include <stdlib.h>

#include "attn/cpu/cpu_common.h"

float attn_bf16_to_f32(uint16_t v) { return attn_cpu_bf16_to_f32(v); }
uint16_t attn_f32_to_bf16(float v) { return attn_cpu_f32_to_bf16(v); }
float attn_f16_to_f32(uint16_t v) { return attn_cpu_f16_to_f32(v); }
uint16_t attn_f32_to_f16(float v) { return attn_cpu_f32_to_f16(v); }

double attn_tensor_get(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d) {
  return attn_cpu_load(t->data, t->dtype, attn_cpu_offset(t, b, h, s, d));
}

/* Writes the element, rounding to the storage dtype (bool: nonzero -> 1). */
static void store_element(void *data, attn_dtype dt, int64_t off, float v) {
  switch (dt) {
  case ATTN_DTYPE_F32: ((float *)data)[off] = v; break;
  case ATTN_DTYPE_F16: ((uint16_t *)data)[off] = attn_cpu_f32_to_f16(v); break;
  case ATTN_DTYPE_BF16: ((uint16_t *)data)[off] = attn_cpu_f32_to_bf16(v); break;
  default: ((uint8_t *)data)[off] = v != 0; break;
  }
}

void attn_tensor_set(attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d, double v) {
  store_element(t->data, t->dtype, attn_cpu_offset(t, b, h, s, d), (float)v);
}

int64_t attn_tensor_span(const attn_tensor *t) {
  int64_t span = 1;
  for (int i = 0; i < 4; i++) {
    if (t->shape[i] <= 0) return 0;
    int64_t st = t->strides[i] < 0 ? -t->strides[i] : t->strides[i];
    span += (t->shape[i] - 1) * st;
  }
  return span;
}

/* Both non-finite in the same way (both NaN, or the same infinity): such
 * positions are left out of the norms. */
static int same_nonfinite(double a, double b) {
  return (isnan(a) && isnan(b)) || (isinf(a) && a == b);
}

double attn_rel_error(const attn_tensor *out, const double *ref) {
  const int64_t *n = out->shape;
  double diff2 = 0, ref2 = 0;
  int64_t idx = 0;
  for (int64_t b = 0; b < n[0]; b++)
    for (int64_t h = 0; h < n[1]; h++)
      for (int64_t s = 0; s < n[2]; s++)
        for (int64_t d = 0; d < n[3]; d++, idx++) {
          double o = attn_tensor_get(out, b, h, s, d), r = ref[idx];
          if (isfinite(o) && isfinite(r)) {
            diff2 += (o - r) * (o - r);
            ref2 += r * r;
          } else if (!same_nonfinite(o, r)) {
            return NAN;
          }
        }
  /* An all-zero reference (every row fully masked): the absolute error. */
  return ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
}
