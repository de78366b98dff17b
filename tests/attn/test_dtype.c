/* Storage conversions and tensor utilities of attn.h, checked against
 * independent definitions: every f16 and bf16 bit pattern decoded by ldexp,
 * f32 -> f16/bf16 rounding checked as "nearest, ties to even" against the
 * decoded neighbours (every exact halfway point, and a stride through all
 * 2^32 f32 patterns), and the span / get / set / rel_error helpers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attnprof/attn.h"
#include "attnprof/testing.h"

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* f16 by its definition: (-1)^s 2^(e-15) 1.m, subnormals 2^-14 0.m. */
static double f16_value(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

static double bf16_value(uint16_t h) {
  int s = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
  return s ? -v : v;
}

typedef struct {
  const char *name;
  double (*value)(uint16_t);
  float (*to_f32)(uint16_t);
  uint16_t (*from_f32)(float);
  uint16_t inf; /* bits of +inf */
} half_format;

static const half_format F16 = {"f16", f16_value, attn_f16_to_f32, attn_f32_to_f16, 0x7c00};
static const half_format BF16 = {"bf16", bf16_value, attn_bf16_to_f32, attn_f32_to_bf16, 0x7f80};

static void check_decode_all(const half_format *f) {
  for (uint32_t h = 0; h < 65536; h++) {
    double want = f->value((uint16_t)h);
    float got = f->to_f32((uint16_t)h);
    if (isnan(want) ? !isnan(got) : (double)got != want || !!signbit(got) != (h >> 15 != 0))
      fail_msg("%s 0x%04x decodes to %.9g, expected %.9g", f->name, h, (double)got, want);
    if (!isnan(want) && f->from_f32(got) != h)
      fail_msg("%s 0x%04x -> %.9g -> 0x%04x: the round trip changed it", f->name, h, (double)got,
               f->from_f32(got));
    if (isnan(want) && !isnan(f->value(f->from_f32(got))))
      fail_msg("%s NaN 0x%04x did not stay NaN", f->name, h);
  }
}

/* h = from_f32(x) is the nearest value to x, ties to an even mantissa;
 * beyond the largest finite value (by half an ulp or more) it is Inf. */
static void check_rounding(const half_format *f, float x) {
  uint16_t h = f->from_f32(x);
  double v = f->value(h), xd = x;
  if (isnan(xd)) {
    if (!isnan(v)) fail_msg("%s: NaN became %g", f->name, v);
    return;
  }
  if (!!signbit(v) != !!signbit(xd)) fail_msg("%s: %.9g rounded to %g: sign lost", f->name, xd, v);
  uint16_t mag = h & 0x7fff;
  double below = mag > 0 ? fabs(f->value((uint16_t)(mag - 1))) : 0;
  double above = mag < f->inf ? fabs(f->value((uint16_t)(mag + 1))) : INFINITY;
  if (mag == f->inf - 1 && isinf(above)) /* next after the max: where Inf begins */
    above = 2 * fabs(v) - below;
  double err = fabs(fabs(xd) - fabs(v));
  if (isinf(v) && !isinf(xd)) {
    double max = fabs(f->value((uint16_t)(f->inf - 1)));
    double half_ulp = (max - fabs(f->value((uint16_t)(f->inf - 2)))) / 2;
    if (fabs(xd) < max + half_ulp) fail_msg("%s: %.9g overflowed to Inf", f->name, xd);
    return;
  }
  if (err > fabs(fabs(xd) - below) || (!isinf(above) && err > fabs(above - fabs(xd))))
    fail_msg("%s: %.9g rounded to %.9g, not the nearest", f->name, xd, v);
  int tie = err == fabs(fabs(xd) - below) || err == fabs(above - fabs(xd));
  if (tie && err > 0 && (h & 1)) fail_msg("%s: tie %.9g went to odd 0x%04x", f->name, xd, h);
}

static void check_halfway_points(const half_format *f) {
  for (uint16_t h = 0; h < f->inf - 1; h++) {
    double mid = (f->value(h) + f->value((uint16_t)(h + 1))) / 2;
    check_rounding(f, (float)mid); /* exact in fp32: one more bit than the half format */
    check_rounding(f, -(float)mid);
    check_rounding(f, nextafterf((float)mid, 0));
    check_rounding(f, nextafterf((float)mid, INFINITY));
  }
}

static void test_f16(void **state) {
  check_decode_all(&F16);
  check_halfway_points(&F16);
  for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4099)
    check_rounding(&F16, bits_f32((uint32_t)u));
  assert_int_equal(attn_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(attn_f32_to_f16(65519.99f), 0x7bff);
  assert_int_equal(attn_f32_to_f16(65520.0f), 0x7c00);
  assert_int_equal(attn_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(attn_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(attn_f32_to_f16(0x1p-25f), 0x0000); /* tie to even: 0 */
  assert_int_equal(attn_f32_to_f16(-0.0f), 0x8000);
}

static void test_bf16(void **state) {
  check_decode_all(&BF16);
  check_halfway_points(&BF16);
  for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4099)
    check_rounding(&BF16, bits_f32((uint32_t)u));
  assert_int_equal(attn_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
  assert_int_equal(attn_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  assert_int_equal(attn_f32_to_bf16(bits_f32(0x7f7fffffu)), 0x7f80); /* FLT_MAX rounds to Inf */
  assert_true(
      isnan(attn_bf16_to_f32(attn_f32_to_bf16(bits_f32(0x7f800001u))))); /* sNaN stays NaN */
}

static void test_tensor_helpers(void **state) {
  uint16_t buf[64];
  memset(buf, 0, sizeof buf);
  /* [B=1, H=2, S=3, D=4] laid out as [B, S, H, D] */
  attn_tensor t = {buf, ATTN_DTYPE_BF16, ATTN_DEVICE_CPU, {1, 2, 3, 4}, {24, 4, 8, 1}};
  assert_int_equal(attn_tensor_span(&t), 24);
  attn_tensor_set(&t, 0, 1, 2, 3, 1.5);
  assert_int_equal(buf[1 * 4 + 2 * 8 + 3], attn_f32_to_bf16(1.5f));
  assert_true(attn_tensor_get(&t, 0, 1, 2, 3) == 1.5);
  attn_tensor bc = {buf, ATTN_DTYPE_F16, ATTN_DEVICE_CPU, {4, 1, 3, 5}, {0, 0, 5, 1}};
  assert_int_equal(attn_tensor_span(&bc), 15); /* a stride-0 dim adds nothing */
  attn_tensor empty = t;
  empty.shape[2] = 0;
  assert_int_equal(attn_tensor_span(&empty), 0);
}

static void test_rel_error(void **state) {
  float out[6] = {1, 2, 3, 4, 5, 6};
  double ref[6] = {1, 2, 3, 4, 5, 6};
  attn_tensor t = attn_tensor_bhsd(out, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, 1, 2, 3);
  assert_true(attn_rel_error(&t, ref) == 0.0);
  out[5] = 6.5f; /* ||diff|| = 0.5, ||ref|| = sqrt(91) */
  assert_true(fabs(attn_rel_error(&t, ref) - 0.5 / sqrt(91.0)) < 1e-15);
  out[0] = NAN;
  assert_true(isnan(attn_rel_error(&t, ref))); /* NaN where the reference is finite */
  ref[0] = NAN;                                /* both NaN there: compare the rest */
  assert_true(fabs(attn_rel_error(&t, ref) - 0.5 / sqrt(90.0)) < 1e-15);
  ref[0] = INFINITY;
  assert_true(isnan(attn_rel_error(&t, ref))); /* NaN against Inf is a mismatch */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16),
      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_tensor_helpers),
      cmocka_unit_test(test_rel_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
