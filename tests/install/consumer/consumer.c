/* A program that uses an installed attnprof as a stranger would: only the
 * public header and the library. It runs the naive CPU backend on a small
 * random problem and compares the output with the fp64 reference; exit 0
 * only when the relative error is within float's reach. */
#include <attnprof/attn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 1, H = 2, S = 17, D = 8, N = B * H * S * D };

int main(void) {
  static float q[N], k[N], v[N], out[N];
  static double ref[N];
  srand(3);
  for (int i = 0; i < N; i++) {
    q[i] = (float)rand() / RAND_MAX - 0.5f;
    k[i] = (float)rand() / RAND_MAX - 0.5f;
    v[i] = (float)rand() / RAND_MAX - 0.5f;
    out[i] = NAN; /* poisoned: the backend must write every element */
  }
  attn_args a = attn_args_make(attn_tensor_bhsd(q, ATTN_DTYPE_F32, -1, B, H, S, D),
                               attn_tensor_bhsd(k, ATTN_DTYPE_F32, -1, B, H, S, D),
                               attn_tensor_bhsd(v, ATTN_DTYPE_F32, -1, B, H, S, D),
                               attn_tensor_bhsd(out, ATTN_DTYPE_F32, -1, B, H, S, D));
  a.causal = ATTN_CAUSAL_TOP_LEFT;
  attn_ctx *ctx = NULL;
  if (attn_ctx_create(NULL, &ctx) != ATTN_STATUS_OK ||
      attn_forward(ctx, ATTN_BACKEND_NAIVE, &a) != ATTN_STATUS_OK ||
      attn_reference_f64(&a, ref, NULL) != ATTN_STATUS_OK) {
    fprintf(stderr, "consumer: %s\n", attn_last_error());
    attn_ctx_destroy(ctx);
    return 1;
  }
  attn_ctx_destroy(ctx);
  double err = attn_rel_error(&a.out, ref);
  printf("attnprof %s: naive vs fp64 reference, relative error %.2e\n", ATTNPROF_VERSION, err);
  return err < 1e-5 ? 0 : 1;
}
