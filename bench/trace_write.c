/* The injected tracer's cost per event on the CPU, without a GPU: N launches
 * of the CUDA loop (bench/launch_loop.cuh: empty_kernel<<<1, 32>>>), each a
 * cudaLaunchKernel API record and its kernel record, built as CUPTI hands
 * them over and taken the way the collector takes them (cupti_buffers.c:
 * cupti_conv_record, prof_trace_append into the chunk, a chunk of 65,536
 * events to the streamed writer, chrome_stream.c) into a Kineto JSON file.
 * Prints CPU ns per event (convert + append, stream write, both) for each
 * run and the median (91a2132:bench/TRACE_COST.md, "The writer on the CPU").
 * usage: bench_trace_write [N_LAUNCHES (default 200000)] [RUNS (default 7)] [PATH]
 *        [KERNEL_NAME (default the CUDA loop's; PyTorch's run to 100-200 bytes)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prof/collect/cupti_records.h"
#include "prof/io/chrome_stream.h"

enum { CHUNK_EVENTS = 1 << 16, BUFFER_LAUNCHES = 4096, CBID_LAUNCH_KERNEL = 211 };

/* CPU seconds of this process: the neighbours' time is not ours. */
static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *name_of(CUpti_CallbackDomain dom, uint32_t cbid) {
  (void)dom;
  return cbid == CBID_LAUNCH_KERNEL ? "cudaLaunchKernel" : NULL; /* as cupti_cbid_name caches it */
}

static void add_device(prof_trace *t) {
  prof_device d = {.id = 0,
                   .compute_major = 9,
                   .num_sms = 132,
                   .max_threads_per_block = 1024,
                   .max_threads_per_sm = 2048,
                   .max_blocks_per_sm = 32,
                   .regs_per_block = 65536,
                   .regs_per_sm = 65536,
                   .warp_size = 32,
                   .shared_memory_per_block = 49152,
                   .shared_memory_per_block_optin = 232448,
                   .shared_memory_per_sm = 233472,
                   .reserved_shared_memory_per_block = 1024,
                   .total_global_mem = 150754820096LL};
  snprintf(d.name, sizeof d.name, "NVIDIA H200");
  prof_trace_add_device(t, &d);
}

/* Launch i of the loop: the call about 4 us apart, its kernel 2 us long. */
static const char *kernel_name = "_Z12empty_kernelPff";

static void records(int64_t i, CUpti_ActivityAPI *a, CUpti_ActivityKernel10 *k) {
  uint64_t t = 1000000000000ull + (uint64_t)i * 4013u;
  memset(a, 0, sizeof *a);
  a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a->cbid = CBID_LAUNCH_KERNEL;
  a->start = t, a->end = t + 2711u + (uint64_t)(i % 97);
  a->processId = 31337, a->threadId = 31337;
  a->correlationId = (uint32_t)(i + 1);
  memset(k, 0, sizeof *k);
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->name = kernel_name;
  k->start = t + 5003u, k->end = k->start + 1984u + (uint64_t)(i % 89);
  k->deviceId = 0, k->contextId = 1, k->streamId = 7;
  k->correlationId = (uint32_t)(i + 1);
  k->gridX = k->gridY = k->gridZ = 1;
  k->blockX = 32, k->blockY = k->blockZ = 1;
  k->registersPerThread = 16;
  k->shmemLimitConfig = CUPTI_FUNC_SHMEM_LIMIT_DEFAULT;
}

typedef struct {
  double convert_s, write_s;
  int64_t events;
} run_times;

static int take(cupti_conv *cv, const CUpti_Activity *rec, prof_trace *chunk) {
  prof_event e;
  return cupti_conv_record(cv, rec, &e) > 0 && !prof_trace_append(chunk, &e, NULL);
}

static prof_trace *new_chunk(void) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  if (t) add_device(t);
  return t;
}

/* One run: kernels of a buffer first, then its launch calls (the collector
 * drains the callback records after each completed buffer). */
static int one_run(int64_t n, const char *path, run_times *rt) {
  char why[256];
  chrome_stream *s =
      chrome_stream_open(path, 1700000000000000000LL, 1699999000000000000LL, why, sizeof why);
  cupti_conv *cv = cupti_conv_create(name_of);
  prof_trace *chunk = new_chunk();
  if (!s || !cv || !chunk) return fprintf(stderr, "%s\n", s ? "no memory" : why), 1;
  static CUpti_ActivityAPI api[BUFFER_LAUNCHES];
  static CUpti_ActivityKernel10 ker[BUFFER_LAUNCHES];
  int err = 0;
  for (int64_t i0 = 0; i0 < n && !err; i0 += BUFFER_LAUNCHES) {
    int m = n - i0 < BUFFER_LAUNCHES ? (int)(n - i0) : BUFFER_LAUNCHES;
    for (int j = 0; j < m; j++) records(i0 + j, &api[j], &ker[j]);
    double t0 = cpu_s();
    for (int j = 0; j < m; j++) rt->events += take(cv, (const CUpti_Activity *)&ker[j], chunk);
    for (int j = 0; j < m; j++) rt->events += take(cv, (const CUpti_Activity *)&api[j], chunk);
    double t1 = cpu_s();
    rt->convert_s += t1 - t0;
    if (prof_trace_count(chunk) >= CHUNK_EVENTS) {
      err = chrome_stream_chunk(s, chunk);
      chunk = new_chunk();
      rt->write_s += cpu_s() - t1;
    }
  }
  double t1 = cpu_s();
  err = err ? err : chrome_stream_chunk(s, chunk);
  int closed = chrome_stream_close(s, 0, 31337, "trace_overhead_prog");
  rt->write_s += cpu_s() - t1;
  cupti_conv_destroy(cv);
  return err || closed;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 200000;
  int runs = argc > 2 ? atoi(argv[2]) : 7;
  const char *path = argc > 3 ? argv[3] : "/tmp/bench_trace_write.json";
  if (argc > 4) kernel_name = argv[4];
  if (n <= 0 || runs <= 0 || runs > 99)
    return fprintf(stderr, "usage: bench_trace_write [N>0] [RUNS 1..99] [PATH]\n"), 2;
  double conv[99], write[99], total[99];
  for (int r = 0; r < runs; r++) {
    run_times rt = {0};
    if (one_run(n, path, &rt)) return 1;
    double per = 1e9 / (double)rt.events;
    conv[r] = rt.convert_s * per, write[r] = rt.write_s * per, total[r] = conv[r] + write[r];
    printf("run %d: %lld events  convert+append %.1f  stream write %.1f  total %.1f ns/event\n",
           r + 1, (long long)rt.events, conv[r], write[r], total[r]);
  }
  qsort(conv, (size_t)runs, sizeof *conv, cmp);
  qsort(write, (size_t)runs, sizeof *write, cmp);
  qsort(total, (size_t)runs, sizeof *total, cmp);
  printf("median of %d: convert+append %.1f  stream write %.1f  total %.1f ns/event\n", runs,
         conv[runs / 2], write[runs / 2], total[runs / 2]);
  return 0;
}
