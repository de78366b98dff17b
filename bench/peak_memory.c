/* bench_peak_memory: peak resident memory of one forward of each CPU backend
 * at S = 8192 (default B=1, H=4, D=64, f32), each in a fresh child process
 * (fork) so that one backend's high-water mark cannot hide another's. The
 * child reports getrusage's ru_maxrss after allocating the inputs (the
 * baseline) and after the forward; the difference is what the backend
 * itself needed. flash's stays O(S) (per-thread tiles); naive's and math's
 * grow with S^2 (the fp32 score buffers: 4*B*H*S^2 bytes each).
 *
 *   bench_peak_memory [--seq S] [--heads H] [--dim D] [--causal]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnprof/attn.h"

enum { MAX_BACKENDS = 32 };

static double maxrss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* Linux reports KiB */
}

/* Inputs touched page by page so they count in the baseline. */
static float *alloc_inputs(size_t n) {
  float *p = malloc(n * sizeof *p);
  for (size_t i = 0; p && i < n; i++) p[i] = (float)((i * 2654435761u) % 1001) / 1000.0f - 0.5f;
  return p;
}

/* In the child: one forward; prints one table row. */
static int child(const attn_backend_info *bk, int64_t h, int64_t s, int64_t d, int causal) {
  size_t n = (size_t)(h * s * d);
  float *q = alloc_inputs(n), *k = alloc_inputs(n), *v = alloc_inputs(n), *o = alloc_inputs(n);
  if (!q || !k || !v || !o) return 1;
  attn_args a = attn_args_make(attn_tensor_bhsd(q, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, h, s, d),
                               attn_tensor_bhsd(k, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, h, s, d),
                               attn_tensor_bhsd(v, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, h, s, d),
                               attn_tensor_bhsd(o, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, h, s, d));
  a.causal = causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  attn_ctx *ctx = NULL;
  if (attn_ctx_create(NULL, &ctx))
    return printf("| %-14s | %s |\n", bk->name, attn_last_error()), 1;
  double base = maxrss_mib();
  attn_status st = attn_forward(ctx, bk->backend, &a);
  double peak = maxrss_mib();
  if (st != ATTN_STATUS_OK) printf("| %-14s | refused: %s |\n", bk->name, attn_last_error());
  else
    printf("| %-14s | %9.1f | %9.1f | %12.1f | %14.1f |\n", bk->name, base, peak, peak - base,
           4.0 * (double)h * (double)s * (double)s / 1048576.0);
  fflush(stdout);
  attn_ctx_destroy(ctx);
  return st != ATTN_STATUS_OK;
}

int main(int argc, char **argv) {
  int64_t h = 4, s = 8192, d = 64;
  int causal = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--causal") == 0) causal = 1;
    else if (i + 1 < argc && strcmp(argv[i], "--seq") == 0) s = atoll(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--heads") == 0) h = atoll(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--dim") == 0) d = atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--seq S] [--heads H] [--dim D] [--causal]\n", argv[0]);
      return 2;
    }
  }
  attn_backend_info all[MAX_BACKENDS];
  size_t n = attn_backend_list(all, MAX_BACKENDS);
  printf("B=1 H=%lld S=%lld D=%lld f32%s; one forward per fresh process; MiB\n\n", (long long)h,
         (long long)s, (long long)d, causal ? " causal" : "");
  printf("| backend        | inputs    | peak      | forward used | one S x S fp32 |\n");
  printf("|---|---|---|---|---|\n");
  fflush(stdout);
  int failures = 0;
  for (size_t i = 0; i < n && i < MAX_BACKENDS; i++) {
    if (all[i].device_kind != ATTN_DEVICE_CPU) continue;
    pid_t pid = fork();
    if (pid == 0) _exit(child(&all[i], h, s, d, causal));
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
      failures++;
  }
  return failures ? 1 : 0;
}
