/* Why the first profiled forward of `attnprof run` read slow: each
 * forward's kernel time from the trace (CUPTI) and from CUDA events, forward
 * by forward, under the conditions around a profiling session. Figures only.
 *
 *   bench_first_forward [--shape BxHxSxD] [--backends B,B..] [--forwards K]
 *                       [--primer none|empty|fill] [--primer-at start|session]
 *                       [--non-causal]
 *
 * B is flash, cudnn or efficient (default flash), measured in the order
 * given, in one process. For each, after 20 warm-up forwards and 50
 * synchronized ones (what `run` does before it profiles), each variant runs
 * K forwards back to back (default 6), CUDA events around each, and prints
 * both times per forward index:
 *   plain      no collector (the control)
 *   session    prof_start, then the forwards, as `run` profiles them; two
 *              sessions in a row (is only the process's first one slow?)
 *   settled    prof_start, synchronize, 20 ms asleep, then the forwards
 *   l2-flushed no collector; 256 MiB written just before (a cold L2)
 * --primer runs one session before any of that (--primer-at start) or just
 * before the first profiled session's start (session): empty (the collector
 * started and stopped) or fill (one small fill kernel traced). Inputs are
 * random bf16 in [-1, 1), causal top-left (--non-causal: none), BHSD.
 * Findings: docs/gpu-tracing.md and docs/design/profiler-cost.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnprof/attn.h"
#include "attnprof/device.h"
#include "attnprof/prof.h"
#include "bench_clock.h"

enum { MAX_FWD = 32 };
static attn_ctx *g_ctx;
static attn_backend g_backend;
static char backends_[256] = "flash";
static int64_t b_ = 8, h_ = 16, s_ = 1024, d_ = 64;
static int fwd_ = 6, causal_ = 1;
static const char *primer_ = "none";
static int primer_at_session, primed;
static void *g_scratch;
static const size_t kScratch = (size_t)256 << 20;

static int setup(attn_args *a) {
  size_t n = (size_t)(b_ * h_ * s_ * d_);
  attn_tensor t[4];
  for (int i = 0; i < 4; i++) {
    void *p;
    if (attn_cuda_malloc(0, n * 2, &p) ||
        attn_cuda_fill_uniform(0, p, ATTN_DTYPE_BF16, n, 7u + (uint64_t)i))
      return -1;
    t[i] = attn_tensor_bhsd(p, ATTN_DTYPE_BF16, 0, b_, h_, s_, d_);
  }
  *a = attn_args_make(t[0], t[1], t[2], t[3]);
  a->causal = causal_ ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  return attn_cuda_malloc(0, kScratch, &g_scratch) ? -1 : 0;
}

/* K forwards back to back, events 2i and 2i+1 around forward i. */
static int forwards(const attn_args *a, double *ev_us) {
  attn_cuda_timer *t;
  if (attn_cuda_timer_create(0, 2 * fwd_, &t)) return -1;
  int rc = 0;
  for (int i = 0; i < fwd_ && !rc; i++) {
    prof_range_push("attn_fwd");
    rc = attn_cuda_timer_mark(t, 2 * i, a->stream) || attn_forward(g_ctx, g_backend, a) ||
         attn_cuda_timer_mark(t, 2 * i + 1, a->stream);
    prof_range_pop();
  }
  rc = rc || attn_cuda_synchronize(0);
  for (int i = 0; i < fwd_ && !rc; i++)
    rc = attn_cuda_timer_us(t, 2 * i, 2 * i + 1, &ev_us[i]) != 0;
  attn_cuda_timer_destroy(t);
  return rc ? -1 : 0;
}

static int by_start(const void *x, const void *y) {
  const prof_event *a = *(const prof_event *const *)x, *b = *(const prof_event *const *)y;
  return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

/* The trace's kernels in start order, durations summed per forward (kernels
 * per forward = kernels / K, which the backend keeps constant). */
static int kernel_us(const prof_trace *tr, double *us) {
  size_t n = prof_trace_count(tr), k = 0;
  const prof_event **ks = malloc(sizeof *ks * (n ? n : 1));
  if (!ks) return -1;
  for (size_t i = 0; i < n; i++)
    if (prof_trace_at(tr, i)->cat == PROF_CAT_KERNEL) ks[k++] = prof_trace_at(tr, i);
  qsort(ks, k, sizeof *ks, by_start);
  int per = (int)(k / (size_t)fwd_);
  if (per < 1 || k % (size_t)fwd_) {
    fprintf(stderr, "%zu kernels for %d forwards\n", k, fwd_);
    free(ks);
    return -1;
  }
  for (int f = 0; f < fwd_; f++) {
    us[f] = 0;
    for (int j = 0; j < per; j++) us[f] += (double)ks[f * per + j]->dur_ns / 1e3;
  }
  free(ks);
  return 0;
}

static void print_row(const char *name, const char *what, const double *v) {
  printf("%-12s %-7s", name, what);
  for (int i = 0; i < fwd_; i++) printf(" %7.2f", v[i]);
  printf("\n");
}

static int sync_forwards(const attn_args *a) {
  for (int i = 0; i < 50; i++)
    if (attn_cuda_synchronize(0) || attn_forward(g_ctx, g_backend, a)) return -1;
  return attn_cuda_synchronize(0) ? -1 : 0;
}

/* A session before the measured ones, its trace dropped. */
static int prime(int fill) {
  prof_trace *tr = NULL;
  prof_trace_create(&tr);
  if (!tr || prof_start(tr, PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL)) return -1;
  int rc = fill && (attn_cuda_fill_uniform(0, g_scratch, ATTN_DTYPE_BF16, 1024, 1) ||
                    attn_cuda_synchronize(0));
  prof_stop();
  printf("primer %s: %zu events\n", fill ? "fill" : "empty", prof_trace_count(tr));
  prof_trace_destroy(tr);
  return rc ? -1 : 0;
}

static int profiled(const attn_args *a, const char *name, int settle) {
  double ev[MAX_FWD], k[MAX_FWD];
  prof_trace *tr = NULL;
  prof_trace_create(&tr);
  int prime_now = primer_at_session && !primed++ && strcmp(primer_, "none");
  if (!tr || sync_forwards(a) || (prime_now && prime(!strcmp(primer_, "fill"))) ||
      prof_start(tr, PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL)) {
    fprintf(stderr, "%s: %s\n", name, attn_last_error());
    prof_trace_destroy(tr);
    return -1;
  }
  if (settle) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    attn_cuda_synchronize(0);
    nanosleep(&ts, NULL);
  }
  int rc = forwards(a, ev);
  prof_stop();
  rc = rc || kernel_us(tr, k);
  if (!rc) print_row(name, "cupti", k), print_row(name, "events", ev);
  prof_trace_destroy(tr);
  return rc;
}

static int unprofiled(const attn_args *a, const char *name, int flush) {
  double ev[MAX_FWD];
  if (sync_forwards(a)) return -1;
  if (flush && (attn_cuda_fill_bytes(0, g_scratch, 0x11, kScratch) || attn_cuda_synchronize(0)))
    return -1;
  if (forwards(a, ev)) return -1;
  print_row(name, "events", ev);
  return 0;
}

/* One backend's variants, in the order the header lists them. */
static int measure(const char *name, const attn_args *a) {
  if (!strcmp(name, "flash")) g_backend = ATTN_BACKEND_FLASH;
  else if (!strcmp(name, "cudnn")) g_backend = ATTN_BACKEND_CUDNN;
  else if (!strcmp(name, "efficient")) g_backend = ATTN_BACKEND_EFFICIENT;
  else return fprintf(stderr, "--backends: '%s' is not flash, cudnn or efficient\n", name), -1;
  for (int i = 0; i < 20; i++)
    if (attn_forward(g_ctx, g_backend, a)) return fprintf(stderr, "%s\n", attn_last_error()), -1;
  printf("%s %lldx%lldx%lldx%lld %s; us per forward, index 0..%d\n", name, (long long)b_,
         (long long)h_, (long long)s_, (long long)d_, causal_ ? "causal" : "non-causal", fwd_ - 1);
  int rc = unprofiled(a, "plain", 0);
  for (int s = 0; s < 2 && !rc; s++) rc = profiled(a, "session", 0);
  return rc || profiled(a, "settled", 1) || unprofiled(a, "l2-flushed", 1) ||
         unprofiled(a, "plain", 0);
}

static int parse(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shape") && i + 1 < argc &&
        bench_parse_shape(argv[++i], &b_, &h_, &s_, &d_)) {
      continue;
    } else if (!strcmp(argv[i], "--primer") && i + 1 < argc &&
               (!strcmp(argv[i + 1], "none") || !strcmp(argv[i + 1], "empty") ||
                !strcmp(argv[i + 1], "fill"))) {
      primer_ = argv[++i];
    } else if (!strcmp(argv[i], "--primer-at") && i + 1 < argc &&
               (!strcmp(argv[i + 1], "start") || !strcmp(argv[i + 1], "session"))) {
      primer_at_session = !strcmp(argv[++i], "session");
    } else if (!strcmp(argv[i], "--non-causal")) {
      causal_ = 0;
    } else if (!strcmp(argv[i], "--backends") && i + 1 < argc &&
               strlen(argv[i + 1]) < sizeof backends_) {
      strcpy(backends_, argv[++i]);
    } else if (!strcmp(argv[i], "--forwards") && i + 1 < argc && (fwd_ = atoi(argv[++i])) >= 1 &&
               fwd_ <= MAX_FWD) {
      continue;
    } else {
      fprintf(stderr,
              "usage: bench_first_forward [--shape BxHxSxD] [--backends flash,cudnn,efficient]"
              " [--forwards 1..%d] [--primer none|empty|fill] [--primer-at start|session]"
              " [--non-causal]\n",
              MAX_FWD);
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  char why[512];
  attn_args a;
  if (parse(argc, argv)) return 2;
  if (attn_cuda_probe(why, sizeof why)) {
    printf("skipped: %s\n", why);
    return 0;
  }
  attn_ctx_opts o = attn_ctx_opts_default();
  if (attn_ctx_opts_from_env(&o) || attn_ctx_create(&o, &g_ctx) || setup(&a)) {
    fprintf(stderr, "setup: %s\n", attn_last_error());
    return 1;
  }
  int rc = strcmp(primer_, "none") && !primer_at_session ? prime(!strcmp(primer_, "fill")) : 0;
  for (char *save = NULL, *name = strtok_r(backends_, ",", &save); name && !rc;
       name = strtok_r(NULL, ",", &save))
    rc = measure(name, &a);
  attn_ctx_destroy(g_ctx);
  return rc ? 1 : 0;
}
