/* The test kit's host tensors (attnprof/testing.h): storage conversions and
 * element access through strides, over the core's inline forms
 * (core/elements.h). */
#include "attnprof/testing.h"
#include "core/elements.h"

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
    case ATTN_DTYPE_F32:
      ((float *)data)[off] = v;
      break;
    case ATTN_DTYPE_F16:
      ((uint16_t *)data)[off] = attn_cpu_f32_to_f16(v);
      break;
    case ATTN_DTYPE_BF16:
      ((uint16_t *)data)[off] = attn_cpu_f32_to_bf16(v);
      break;
    default:
      ((uint8_t *)data)[off] = v != 0;
      break;
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
