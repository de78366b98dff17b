/* Synthetic event builders and file helpers for the profiler tests. */
#include "prof/prof_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int64_t synth_host(prof_trace *t, prof_cat cat, const char *name, int64_t tid, int64_t start,
                   int64_t dur) {
  prof_event e = prof_event_init(cat, name);
  e.pid = TEST_PID, e.tid = tid, e.start_ns = start, e.dur_ns = dur;
  int64_t index = -1;
  prof_trace_append(t, &e, &index);
  return index;
}

int64_t synth_range(prof_trace *t, const char *name, int64_t tid, int64_t start, int64_t dur) {
  return synth_host(t, PROF_CAT_USER_ANNOTATION, name, tid, start, dur);
}

int64_t synth_op(prof_trace *t, const char *name, prof_kind kind, int64_t tid, int64_t start,
                 int64_t dur) {
  prof_event e = prof_event_init(PROF_CAT_CPU_OP, name);
  e.pid = TEST_PID, e.tid = tid, e.start_ns = start, e.dur_ns = dur, e.kind = kind;
  int64_t index = -1;
  prof_trace_append(t, &e, &index);
  return index;
}

int64_t synth_launch(prof_trace *t, prof_cat cat, const char *name, int64_t tid, int64_t start,
                     int64_t dur, int64_t correlation) {
  prof_event e = prof_event_init(cat, name);
  e.pid = TEST_PID, e.tid = tid, e.start_ns = start, e.dur_ns = dur;
  e.correlation = correlation;
  e.cbid = cat == PROF_CAT_CUDA_RUNTIME ? 211 : 307;
  int64_t index = -1;
  prof_trace_append(t, &e, &index);
  return index;
}

int64_t synth_gpu(prof_trace *t, prof_cat cat, const char *name, int device, int stream,
                  int64_t start, int64_t dur, int64_t correlation) {
  prof_event e = prof_event_init(cat, name);
  e.pid = device, e.tid = stream, e.device = device, e.stream = stream;
  e.start_ns = start, e.dur_ns = dur, e.correlation = correlation;
  e.kind = cat == PROF_CAT_KERNEL       ? PROF_KIND_KERNEL
           : cat == PROF_CAT_GPU_MEMCPY ? PROF_KIND_MEMCPY
                                        : PROF_KIND_MEMSET;
  int64_t index = -1;
  prof_trace_append(t, &e, &index);
  return index;
}

/* A trace of one forward on a GPU with a CPU op, a launch without GPU work,
 * and a GPU activity without a launch. */
prof_trace *synth_gpu_sample(void) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_trace_set_process(t, TEST_PID, "python3");
  prof_trace_set_epoch_offset(t, 0);
  prof_device d = {.id = 0,
                   .name = "NVIDIA H200",
                   .compute_major = 9,
                   .num_sms = 132,
                   .max_threads_per_block = 1024,
                   .max_threads_per_sm = 2048,
                   .regs_per_block = 65536,
                   .regs_per_sm = 65536,
                   .warp_size = 32,
                   .shared_memory_per_block = 49152,
                   .shared_memory_per_block_optin = 232448,
                   .shared_memory_per_sm = 233472,
                   .total_global_mem = 150109880320LL,
                   .max_blocks_per_sm = 32,
                   .reserved_shared_memory_per_block = 1024};
  prof_trace_add_device(t, &d);
  prof_event e = prof_event_init(PROF_CAT_CPU_OP, "gemm_qk");
  e.pid = TEST_PID, e.tid = 11, e.start_ns = T0 + 1234567, e.dur_ns = 1001, e.kind = PROF_KIND_GEMM;
  e.bytes = 4096, e.flops = 2.5e9;
  prof_trace_append(t, &e, NULL);
  synth_launch(t, PROF_CAT_CUDA_DRIVER, "cuLaunchKernelEx", 11, T0 + 2000000, 5000, 91);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaMemcpyAsync", 12, T0 + 2100000, 3000, 92);
  synth_launch(t, PROF_CAT_CUDA_RUNTIME, "cudaGetDevice", 11, T0 + 2200000, 100, 93);
  e = prof_event_init(PROF_CAT_KERNEL, "nvjet_sm90_tst");
  e.pid = 0, e.tid = 7, e.device = 0, e.stream = 7, e.correlation = 91;
  e.start_ns = T0 + 3000001, e.dur_ns = 999;
  e.fp = (prof_footprint){.grid = {264, 1, 1},
                          .block = {384, 1, 1},
                          .cluster = {2, 1, 1},
                          .registers_per_thread = 168,
                          .static_shared_memory = 0,
                          .dynamic_shared_memory = 213188,
                          .occupancy_pct_in_file = 0};
  prof_trace_append(t, &e, NULL);
  synth_gpu(t, PROF_CAT_GPU_MEMCPY, "Memcpy DtoD (Device -> Device)", 0, 7, T0 + 4000000, 2000, 92);
  prof_event *m = (prof_event *)prof_trace_at(t, prof_trace_count(t) - 1);
  m->bytes = 268435456;
  synth_gpu(t, PROF_CAT_GPU_MEMSET, "Memset (Device)", 0, 8, T0 + 5000000, 10, 555); /* no launch */
  synth_range(t, "attn_fwd", 11, T0, 6000000);
  return t;
}

char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) free(s), s = NULL;
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}
