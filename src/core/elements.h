/* Host tensors element by element, for every layer: fp32 <-> bf16/f16
 * storage conversions (inline, so row loops over f16/bf16 stay cheap; round
 * to nearest even, NaN, Inf and subnormals exact) and element addressing
 * through strides. */
#ifndef ATTNPROF_SRC_CORE_ELEMENTS_H
#define ATTNPROF_SRC_CORE_ELEMENTS_H

#include <stdint.h>
#include <string.h>

#include "attnprof/attn.h"

static inline uint32_t attn_cpu_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float attn_cpu_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float attn_cpu_bf16_to_f32(uint16_t v) {
  return attn_cpu_bits_f32((uint32_t)v << 16);
}

/* Round to nearest even on the 16 dropped bits; a NaN stays a (quiet) NaN
 * instead of rounding into Inf. Overflow rounds to Inf as IEEE says. */
static inline uint16_t attn_cpu_f32_to_bf16(float f) {
  uint32_t x = attn_cpu_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float attn_cpu_f16_to_f32(uint16_t v) {
  uint32_t sign = (uint32_t)(v & 0x8000u) << 16;
  uint32_t em = v & 0x7fffu;
  if (em >= 0x7c00u) /* Inf or NaN: keep the payload */
    return attn_cpu_bits_f32(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
  if (em >= 0x0400u) /* normal: rebias the exponent from 15 to 127 */
    return attn_cpu_bits_f32(sign | ((em << 13) + ((127u - 15u) << 23)));
  /* zero or subnormal: the value is em * 2^-24, exact in fp32 */
  return attn_cpu_bits_f32(sign | attn_cpu_f32_bits((float)em * 0x1p-24f));
}

/* Subnormal halves: m * 2^-shift rounded to nearest even, as an integer. */
static inline uint32_t attn_cpu_shift_rne(uint32_t m, uint32_t shift) {
  if (shift > 25) return 0;
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return q + (rem > half || (rem == half && (q & 1u)));
}

static inline uint16_t attn_cpu_f32_to_f16(float f) {
  uint32_t x = attn_cpu_f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  if (x >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: Inf */
  if (x < 0x38800000u) { /* below 2^-14: a subnormal half (or zero) */
    uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | attn_cpu_shift_rne(m, 126u - e));
  }
  x -= (127u - 15u) << 23; /* rebias, then round the 13 dropped bits */
  return (uint16_t)(sign | ((x + 0xfffu + ((x >> 13) & 1u)) >> 13));
}

/* Offset in elements of element (b, h, s, d); size-1 dims broadcast. */
static inline int64_t attn_cpu_offset(const attn_tensor *t, int64_t b, int64_t h, int64_t s,
                                      int64_t d) {
  const int64_t *n = t->shape, *st = t->strides;
  return (n[0] == 1 ? 0 : b) * st[0] + (n[1] == 1 ? 0 : h) * st[1] + (n[2] == 1 ? 0 : s) * st[2] +
         (n[3] == 1 ? 0 : d) * st[3];
}

/* Element `off` of a host buffer of dtype dt, as float (BOOL: 0 or 1). */
static inline float attn_cpu_load(const void *data, attn_dtype dt, int64_t off) {
  switch (dt) {
    case ATTN_DTYPE_F32:
      return ((const float *)data)[off];
    case ATTN_DTYPE_F16:
      return attn_cpu_f16_to_f32(((const uint16_t *)data)[off]);
    case ATTN_DTYPE_BF16:
      return attn_cpu_bf16_to_f32(((const uint16_t *)data)[off]);
    default:
      return ((const uint8_t *)data)[off] != 0;
  }
}

#endif
