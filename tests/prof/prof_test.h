/* Shared by the profiler tests: cmocka in the right include order, assertions
 * that print both values, and builders of synthetic events (no GPU needed:
 * GPU activities are plain records, as the CUPTI collector will append). */
#ifndef ATTNPROF_TESTS_PROF_TEST_H
#define ATTNPROF_TESTS_PROF_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "attnprof/prof.h"

#define assert_i64(actual, expected)                                                      \
  do {                                                                                    \
    long long a_ = (long long)(actual), e_ = (long long)(expected);                       \
    if (a_ != e_) fail_msg("%s is %lld, expected %lld (%s)", #actual, a_, e_, #expected); \
  } while (0)

#define assert_near(actual, expected, tol)                                                 \
  do {                                                                                     \
    double a_ = (double)(actual), e_ = (double)(expected);                                 \
    if (!(fabs(a_ - e_) <= (tol)))                                                         \
      fail_msg("%s is %.9g, expected %.9g (%s, tolerance %g)", #actual, a_, e_, #expected, \
               (double)(tol));                                                             \
  } while (0)

#define assert_str(actual, expected)                                                              \
  do {                                                                                            \
    const char *a_ = (actual), *e_ = (expected);                                                  \
    if (!a_ || !e_ || strcmp(a_, e_))                                                             \
      fail_msg("%s is \"%s\", expected \"%s\"", #actual, a_ ? a_ : "(null)", e_ ? e_ : "(null)"); \
  } while (0)

#define assert_contains(haystack, needle)                                 \
  do {                                                                    \
    const char *h_ = (haystack), *n_ = (needle);                          \
    if (!h_ || !strstr(h_, n_))                                           \
      fail_msg("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_); \
  } while (0)

enum { TEST_PID = 4242 };

/* A host event on thread tid of TEST_PID; returns its index. */
int64_t synth_host(prof_trace *t, prof_cat cat, const char *name, int64_t tid, int64_t start,
                   int64_t dur);
int64_t synth_range(prof_trace *t, const char *name, int64_t tid, int64_t start, int64_t dur);
int64_t synth_op(prof_trace *t, const char *name, prof_kind kind, int64_t tid, int64_t start,
                 int64_t dur);
/* A cuda_runtime (or cuda_driver) launch call with a correlation id. */
int64_t synth_launch(prof_trace *t, prof_cat cat, const char *name, int64_t tid, int64_t start,
                     int64_t dur, int64_t correlation);
/* A GPU activity (kernel, gpu_memcpy, gpu_memset) on device/stream. */
int64_t synth_gpu(prof_trace *t, prof_cat cat, const char *name, int device, int stream,
                  int64_t start, int64_t dur, int64_t correlation);

/* Epoch-like times of synth_gpu_sample (its clock offset is 0: events are epoch ns). */
#define T0 1700000000123000000LL
/* One forward on a GPU (device 0 "NVIDIA H200", process TEST_PID "python3"):
 * "attn_fwd" [T0, T0+6ms] on tid 11 around a cpu_op "gemm_qk" (ts 1234.567 µs,
 * dur 1.001 µs), cuLaunchKernelEx (corr 91, tid 11) -> kernel "nvjet_sm90_tst"
 * (stream 7, footprint set), cudaMemcpyAsync (corr 92, tid 12) -> a 256 MiB DtoD
 * memcpy, a launch without GPU work (cudaGetDevice, 93) and a memset whose
 * launch is not in the trace (555, stream 8). */
prof_trace *synth_gpu_sample(void);

/* A new trace; the test fails without one. */
static inline prof_trace *new_trace(void) {
  prof_trace *t = NULL;
  if (prof_trace_create(&t)) fail_msg("%s", attn_last_error());
  return t;
}

/* prof_expect_evaluate's broken count, or -1 when it failed. */
static inline int expect_broken(const prof_expect *e, const prof_trace *t, const char *range,
                                prof_expect_result *out) {
  int broken = -1;
  return prof_expect_evaluate(e, t, range, out, &broken) ? -1 : broken;
}

/* The whole content of a file (malloc'd, NUL-terminated), or NULL. */
char *slurp(const char *path);
/* Whether path exists. */
int file_exists(const char *path);

#endif
