/* The relative error of an output against the fp64 oracle (reference.c):
 * what attnprof's --check, the Python package and the tests report. */
#include <math.h>

#include "attnprof/attn.h"
#include "core/elements.h"

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
          double o = attn_cpu_load(out->data, out->dtype, attn_cpu_offset(out, b, h, s, d));
          double r = ref[idx];
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
