/* How fast the trace reader loads a big trace, and with how much memory
 * (docs/design/reader.md has the figures).
 *
 *   bench_reader_load gen OUT.json[.gz] MB   a Kineto-shaped trace of about MB
 *                                            megabytes (pretty-printed as
 *                                            torch.profiler writes it)
 *   bench_reader_load load FILE              prof_read_chrome_trace, then the
 *                                            range summary: time, peak RSS
 *   bench_reader_load jansson FILE           json_load_file of the same file,
 *                                            for comparison (the tree parser)
 *
 * Run each load in its own process: peak RSS (getrusage) is per process. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zlib.h>

#include "attnprof/prof.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) so far: on a shared machine wall time also
 * counts the other processes' turns, CPU time does not. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

/* ---- the generator --------------------------------------------------------- */

typedef struct {
  gzFile gz; /* zlib writes plain text too ("wbT"): one code path */
  long long bytes;
  int first;
} gen;

__attribute__((format(printf, 2, 3))) static void put(gen *g, const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  gzwrite(g->gz, buf, (unsigned)n);
  g->bytes += n;
}

static const char *const kernels[] = {
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
    ("void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::BFloat16, "
     "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
     "std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, "
     "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)"),
    "void at::native::elementwise_kernel<128, 4, masked_fill_kernel>(int)",
    ("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, "
     "false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)"),
    "nvjet_sm90_tst_64x512_64x2_1x2_h_bz_coopB_NNT"};

static void event(gen *g, const char *cat, const char *name, int pid, int tid, double ts,
                  double dur, const char *args) {
  put(g,
      "%s\n  {\n    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
      "    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      %s\n    }\n  }",
      g->first ? "" : ",", cat, name, pid, tid, ts, dur, args);
  g->first = 0;
}

static void flow(gen *g, const char *ph, long long id, int pid, int tid, double ts) {
  put(g,
      ",\n  {\n    \"ph\": \"%s\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %.3f,\n"
      "    \"cat\": \"ac2g\", \"name\": \"ac2g\"%s\n  }",
      ph, id, pid, tid, ts, ph[0] == 'f' ? ", \"bp\": \"e\"" : "");
}

/* One profiled step: a range, an attn_fwd with CPU ops, launches and GPU work. */
static void step(gen *g, long long k, long long *ext, long long *corr) {
  double t0 = 5132418966000.0 + (double)k * 1100.0;
  char args[1024], name[64];
  snprintf(name, sizeof name, "ProfilerStep#%lld", k);
  ++*ext;
  snprintf(args, sizeof args, "\"External id\": %lld,\"Record function id\": 0, \"Ev Idx\": %lld",
           *ext, *ext);
  event(g, "user_annotation", name, 496, 496, t0, 1000.0, args);
  event(g, "user_annotation", "attn_fwd", 496, 496, t0 + 10, 900.0, args);
  for (int i = 0; i < 20; i++) {
    ++*ext;
    snprintf(args, sizeof args,
             "\"External id\": %lld,\"Record function id\": 0, \"Ev Idx\": %lld, "
             "\"Input Dims\": [[8, 16, 1024, 64], [8, 16, 64, 1024]], \"Input type\": "
             "[\"c10::BFloat16\", "
             "\"c10::BFloat16\"], \"Input Strides\": [[1048576, 65536, 64, 1], [1048576, 65536, 1, "
             "64]], "
             "\"Concrete Inputs\": [\"\", \"\"]",
             *ext, *ext);
    event(g, "cpu_op", i % 3 ? "aten::matmul" : "aten::as_strided", 496, 496, t0 + 20 + i * 40,
          30.0, args);
  }
  for (int i = 0; i < 7; i++) {
    long long c = ++*corr;
    double lt = t0 + 30 + i * 110, gt = t0 + 200 + i * 130;
    const char *api = i == 5       ? "cudaMemcpyAsync"
                      : i == 6     ? "cudaMemsetAsync"
                      : i % 4 == 0 ? "cuLaunchKernelEx"
                                   : "cudaLaunchKernel";
    snprintf(args, sizeof args, "\"External id\": %lld, \"cbid\": 211, \"correlation\": %lld", *ext,
             c);
    event(g, i % 4 == 0 && i < 5 ? "cuda_driver" : "cuda_runtime", api, 496, 496, lt, 8.5, args);
    if (i < 5)
      snprintf(args, sizeof args,
               "\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, "
               "\"correlation\": %lld, \"registers per thread\": 168, \"shared memory\": 213188, "
               "\"blocks per SM\": 1.0, \"warps per SM\": 12.0, \"grid\": [2, 66, 1], \"block\": "
               "[384, 1, 1], "
               "\"est. achieved occupancy %%\": 0",
               c);
    else
      snprintf(args, sizeof args,
               "\"External id\": %lld, \"device\": 0, \"context\": 1, \"stream\": 7, "
               "\"correlation\": %lld, \"bytes\": 268435456, \"memory bandwidth (GB/s)\": 2116.73",
               *ext, c);
    event(g,
          i < 5    ? "kernel"
          : i == 5 ? "gpu_memcpy"
                   : "gpu_memset",
          i < 5    ? kernels[i]
          : i == 5 ? "Memcpy DtoD (Device -> Device)"
                   : "Memset (Device)",
          0, 7, gt, 120.25, args);
    flow(g, "s", c, 496, 496, lt);
    flow(g, "f", c, 0, 7, gt);
  }
}

static int generate(const char *path, double mb) {
  size_t n = strlen(path);
  gen g = {gzopen(path, n > 3 && !strcmp(path + n - 3, ".gz") ? "wb6" : "wbT"), 0,
           1}; /* T: plain, no gzip wrapper */
  if (!g.gz) return fprintf(stderr, "cannot create %s\n", path), 1;
  put(&g, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
          "\"NVIDIA H200\", "
          "\"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132, \"sharedMemPerBlockOptin\": "
          "232448}\n  ],\n"
          "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1790857026000000000,\n  "
          "\"traceEvents\": [");
  long long ext = 0, corr = 0, steps = 0, raw = 0;
  while ((double)g.bytes < mb * 1e6) step(&g, ++steps, &ext, &corr);
  raw = g.bytes;
  put(&g, "\n  ],\n  \"traceName\": \"bench\"\n}\n");
  gzclose(g.gz);
  printf("wrote %s: %lld steps, %.1f MB of JSON\n", path, steps, (double)raw / 1e6);
  return 0;
}

/* ---- loading --------------------------------------------------------------- */

static int load(const char *path) {
  double t0 = now_s();
  prof_trace *t;
  prof_read_stats st;
  if (prof_read_chrome_trace(path, &t, &st)) return fprintf(stderr, "%s\n", attn_last_error()), 1;
  double t1 = now_s(), rss_read = peak_rss_mb(), cpu_read = cpu_s();
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  double t2 = now_s();
  const prof_range_summary *f = prof_range_summary_find(rows, n, "attn_fwd");
  printf("reader: %lld events in %.2f s (%.2f s CPU; %.0f events/s); peak RSS %.0f MB after "
         "reading, %.0f MB after the summary (%.2f s, %.2f s CPU); attn_fwd: %lld calls, %.0f GPU "
         "events per call\n",
         (long long)st.events, t1 - t0, cpu_read, (double)st.events / (t1 - t0), rss_read,
         peak_rss_mb(), t2 - t1, cpu_s() - cpu_read, f ? (long long)f->calls : 0LL,
         f ? f->per_call_total : 0.0);
  free(rows);
  prof_trace_destroy(t);
  return 0;
}

static int load_jansson(const char *path) {
  double t0 = now_s();
  json_error_t err;
  json_t *doc = json_load_file(path, 0, &err);
  if (!doc) return fprintf(stderr, "%s: %s\n", path, err.text), 1;
  printf("jansson tree: %zu events in %.2f s; peak RSS %.0f MB\n",
         json_array_size(json_object_get(doc, "traceEvents")), now_s() - t0, peak_rss_mb());
  json_decref(doc);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "gen")) return generate(argv[2], atof(argv[3]));
  if (argc == 3 && !strcmp(argv[1], "load")) return load(argv[2]);
  if (argc == 3 && !strcmp(argv[1], "jansson")) return load_jansson(argv[2]);
  fprintf(stderr, "usage: bench_reader_load gen OUT.json[.gz] MB | load FILE | jansson FILE\n");
  return 2;
}
