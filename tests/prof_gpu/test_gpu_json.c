/* GPU events made by hand (no GPU needed), written as Kineto's schema and
 * checked by parsing the file: kernel args with our occupancy (nvjet on an
 * H200: 18.75% where PyTorch writes 0), memcpy/memset args, ac2g flows from
 * launch to activity, gpu_user_annotation spans, GPU lanes; the streamed
 * writer keeps flows across chunks and a repaired stream (the program died
 * mid-chunk) is valid JSON holding every chunk written whole; reading our
 * file back restores the CUPTI-only footprint fields. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attnprof/prof.h"
#include "prof/io/chrome_stream.h"
#include "prof/analysis/occupancy.h"

enum { PID = 4242, TID = 4243, DEV = 0, STREAM = 7 };

static prof_event host(prof_cat cat, const char *name, int64_t start, int64_t dur, int64_t corr) {
  prof_event e = prof_event_init(cat, name);
  e.start_ns = start, e.dur_ns = dur, e.pid = PID, e.tid = TID, e.correlation = corr;
  if (cat == PROF_CAT_CUDA_RUNTIME || cat == PROF_CAT_CUDA_DRIVER) e.cbid = 211;
  return e;
}

static prof_event gpu(prof_cat cat, const char *name, int64_t start, int64_t dur, int64_t corr) {
  prof_event e = prof_event_init(cat, name);
  e.kind = cat == PROF_CAT_KERNEL       ? PROF_KIND_KERNEL
           : cat == PROF_CAT_GPU_MEMCPY ? PROF_KIND_MEMCPY
                                        : PROF_KIND_MEMSET;
  e.start_ns = start, e.dur_ns = dur, e.correlation = corr;
  e.device = DEV, e.stream = STREAM, e.pid = DEV, e.tid = STREAM;
  return e;
}

/* The nvjet GEMM as CUPTI reports it on the H200 (notes §2). */
static prof_event nvjet(int64_t start, int64_t corr) {
  prof_event k = gpu(PROF_CAT_KERNEL, "nvjet_sm90_tst_128x256", start, 40000, corr);
  prof_footprint *f = &k.fp;
  f->grid[0] = 264, f->grid[1] = f->grid[2] = 1;
  f->block[0] = 384, f->block[1] = f->block[2] = 1;
  f->cluster[0] = 2, f->cluster[1] = f->cluster[2] = 1;
  f->registers_per_thread = 168;
  f->dynamic_shared_memory = 213188;
  f->shared_memory_executed = 233472;
  f->shared_memory_limit_optin = 1;
  f->max_active_clusters = 66;
  return k;
}

/* One forward: range "fwd" holding a cuLaunchKernelEx (nvjet), a
 * cudaMemcpyAsync and a cudaMemsetAsync; t0 shifts it in time. */
static void forward(prof_trace *t, int64_t t0, int64_t corr) {
  prof_event r = host(PROF_CAT_USER_ANNOTATION, "fwd", t0, 100000, 0);
  prof_event l1 = host(PROF_CAT_CUDA_DRIVER, "cuLaunchKernelEx", t0 + 1000, 3000, corr);
  prof_event l2 = host(PROF_CAT_CUDA_RUNTIME, "cudaMemcpyAsync", t0 + 5000, 2000, corr + 1);
  prof_event l3 = host(PROF_CAT_CUDA_RUNTIME, "cudaMemsetAsync", t0 + 8000, 2000, corr + 2);
  prof_event m =
      gpu(PROF_CAT_GPU_MEMCPY, "Memcpy DtoD (Device -> Device)", t0 + 50000, 1000, corr + 1);
  m.bytes = 1 << 20, m.memcpy_kind = PROF_MEMCPY_DTOD;
  prof_event s = gpu(PROF_CAT_GPU_MEMSET, "Memset (Device)", t0 + 52000, 500, corr + 2);
  s.bytes = 4096;
  prof_event evs[] = {r, l1, l2, l3, nvjet(t0 + 6000, corr), m, s};
  for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++) prof_trace_append(t, &evs[i], NULL);
}

static prof_trace *trace_with_device(void) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_device d = prof_device_h200();
  prof_trace_add_device(t, &d);
  prof_trace_set_process(t, PID, "python3");
  return t;
}

static json_t *load(const char *path) {
  json_error_t err;
  json_t *doc = json_load_file(path, 0, &err);
  if (!doc) fail_msg("%s is not JSON: %s (line %d)", path, err.text, err.line);
  return doc;
}

/* The i-th event (from 0) with this cat (or ph when cat is NULL) and name. */
static json_t *find(json_t *doc, const char *ph, const char *cat, const char *name, int nth) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    const char *p = json_string_value(json_object_get(e, "ph"));
    const char *n = json_string_value(json_object_get(e, "name"));
    if (p && !strcmp(p, ph) && (!cat || (c && !strcmp(c, cat))) && n && !strcmp(n, name) && !nth--)
      return e;
  }
  return NULL;
}

static double num(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_number(v)) fail_msg("\"%s\" is missing or not a number", key);
  return json_number_value(v);
}

static void kernel_args_and_occupancy(void **state) {
  (void)state;
  prof_trace *t = trace_with_device();
  forward(t, 1000000, 10);
  int64_t added = -1;
  assert_int_equal(prof_add_gpu_annotations(t, &added), ATTN_STATUS_OK);
  assert_int_equal(added, 1); /* one range call, one stream */
  char path[] = "/tmp/attnprof_gpu_json_XXXXXX";
  close(mkstemp(path));
  assert_int_equal(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_t *doc = load(path);
  json_t *k = find(doc, "X", "kernel", "nvjet_sm90_tst_128x256", 0);
  assert_non_null(k);
  json_t *a = json_object_get(k, "args");
  assert_int_equal((int)num(k, "pid"), DEV);
  assert_int_equal((int)num(k, "tid"), STREAM);
  assert_int_equal((int)num(a, "device"), DEV);
  assert_int_equal((int)num(a, "stream"), STREAM);
  assert_int_equal((int)num(a, "correlation"), 10);
  assert_int_equal((int)num(a, "registers per thread"), 168);
  assert_int_equal((int)num(a, "shared memory"), 213188);
  assert_int_equal((int)num(a, "shared memory executed"), 233472);
  assert_int_equal((int)num(a, "shared memory opt-in"), 1);
  assert_int_equal((int)num(a, "max active clusters"), 66);
  assert_float_equal(num(a, "blocks per SM"), 2.0, 1e-12); /* Kineto's: grid / SMs */
  assert_float_equal(num(a, "theoretical occupancy %"), 18.75, 1e-9);
  /* 264 blocks fill the 132 one-block SMs twice: achieved = theoretical. */
  assert_float_equal(num(a, "est. achieved occupancy %"), 18.75, 1e-9);
  json_t *occ = json_object_get(a, "occupancy");
  assert_float_equal(num(occ, "activeBlocksPerMultiprocessor"), 1.0, 0);
  assert_string_equal(json_string_value(json_object_get(occ, "limitingFactors")),
                      "REGS|SMEM|CLUSTER");
  assert_int_equal((int)json_integer_value(json_array_get(json_object_get(a, "grid"), 0)), 264);
  assert_int_equal((int)json_integer_value(json_array_get(json_object_get(a, "cluster"), 0)), 2);
  json_t *m = find(doc, "X", "gpu_memcpy", "Memcpy DtoD (Device -> Device)", 0);
  assert_int_equal((int)num(json_object_get(m, "args"), "bytes"), 1 << 20);
  assert_float_equal(num(json_object_get(m, "args"), "memory bandwidth (GB/s)"), 1048576.0 / 1000,
                     1e-9);
  json_decref(doc);
  unlink(path);
  prof_trace_destroy(t);
}

/* Flows: an "s" on the launch and an "f" (bp "e") on the activity, same id
 * and the activity's ts; the annotation span covers the forward's GPU work. */
static void flows_spans_lanes(void **state) {
  (void)state;
  prof_trace *t = trace_with_device();
  forward(t, 1000000, 10);
  int64_t added = -1;
  assert_int_equal(prof_add_gpu_annotations(t, NULL), ATTN_STATUS_OK);
  assert_int_equal(prof_add_gpu_annotations(t, &added), ATTN_STATUS_OK);
  assert_int_equal(added, 0); /* idempotent */
  char path[] = "/tmp/attnprof_gpu_json_XXXXXX";
  close(mkstemp(path));
  assert_int_equal(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_t *doc = load(path);
  json_t *s = find(doc, "s", "ac2g", "ac2g", 0), *f = find(doc, "f", "ac2g", "ac2g", 0);
  assert_non_null(s);
  assert_non_null(f);
  json_t *k = find(doc, "X", "kernel", "nvjet_sm90_tst_128x256", 0);
  json_t *l = find(doc, "X", "cuda_driver", "cuLaunchKernelEx", 0);
  assert_float_equal(num(s, "id"), 10, 0);
  assert_float_equal(num(s, "ts"), num(l, "ts"), 0);
  assert_float_equal(num(f, "ts"), num(k, "ts"), 0);
  assert_string_equal(json_string_value(json_object_get(f, "bp")), "e");
  assert_non_null(find(doc, "s", "ac2g", "ac2g", 2)); /* memcpy and memset too */
  assert_null(find(doc, "s", "ac2g", "ac2g", 3));
  json_t *g = find(doc, "X", "gpu_user_annotation", "fwd", 0);
  assert_non_null(g);
  assert_int_equal((int)num(g, "tid"), STREAM);
  /* From the kernel (t0+6000) to the memset's end (t0+52500), 1 ns wider each side. */
  assert_float_equal(num(g, "ts"), num(k, "ts") - 0.001, 1e-6);
  assert_float_equal(num(g, "dur"), 46.502, 1e-6);
  json_t *label = find(doc, "M", NULL, "process_labels", 0);
  int gpu_label = 0;
  for (int i = 0; label; label = find(doc, "M", NULL, "process_labels", ++i))
    gpu_label |= !strcmp(
        json_string_value(json_object_get(json_object_get(label, "args"), "labels")), "GPU 0");
  assert_true(gpu_label);
  json_decref(doc);
  unlink(path);
  prof_trace_destroy(t);
}

/* A chunk per event: every launch and its activity land in different chunks,
 * and the flows still join; then the file reads back with the footprint. */
static void stream_keeps_flows_and_footprint(void **state) {
  (void)state;
  prof_trace *all = trace_with_device();
  forward(all, 1000000, 10);
  forward(all, 2000000, 20);
  char path[] = "/tmp/attnprof_gpu_stream_XXXXXX", why[256];
  close(mkstemp(path));
  chrome_stream *s = chrome_stream_open(path, 0, 0, why, sizeof why);
  assert_non_null(s);
  for (size_t i = 0; i < prof_trace_count(all); i++) {
    prof_trace *chunk = trace_with_device();
    prof_trace_append(chunk, prof_trace_at(all, i), NULL);
    if (i == 3) prof_trace_add_dropped(chunk, 5);
    assert_int_equal(chrome_stream_chunk(s, chunk), 0);
  }
  assert_int_equal(chrome_stream_close(s, 2, PID, "python3"), 0);
  json_t *doc = load(path);
  assert_int_equal((int)num(doc, "attnprof_dropped_events"), 7);
  for (int i = 0; i < 6; i++) assert_non_null(find(doc, "s", "ac2g", "ac2g", i));
  for (int i = 0; i < 6; i++) assert_non_null(find(doc, "f", "ac2g", "ac2g", i));
  assert_null(find(doc, "f", "ac2g", "ac2g", 6));
  json_decref(doc);
  prof_trace *back = NULL;
  assert_int_equal(prof_read_chrome_trace(path, &back, NULL), ATTN_STATUS_OK);
  int kernels = 0;
  for (size_t i = 0; i < prof_trace_count(back); i++) {
    const prof_event *e = prof_trace_at(back, i);
    if (e->cat != PROF_CAT_KERNEL) continue;
    kernels++;
    assert_int_equal(e->fp.shared_memory_executed, 233472);
    assert_int_equal(e->fp.shared_memory_limit_optin, 1);
    assert_int_equal(e->fp.max_active_clusters, 66);
    assert_int_equal(e->fp.cluster[0], 2);
  }
  assert_int_equal(kernels, 2);
  prof_range_summary *rows = NULL;
  int64_t n;
  if (prof_summarize_ranges(back, &rows, &n)) n = -1;
  const prof_range_summary *r = prof_range_summary_find(rows, n, "fwd");
  assert_non_null(r);
  assert_int_equal(r->calls, 2);
  assert_float_equal(r->per_call_total, 3, 0);
  free(rows);
  prof_trace_destroy(back);
  prof_trace_destroy(all);
  unlink(path);
}

/* A writer that dies mid-chunk: the repair cuts at the last whole chunk. */
static void repair_after_a_crash(void **state) {
  (void)state;
  prof_trace *one = trace_with_device();
  forward(one, 1000000, 10);
  char path[] = "/tmp/attnprof_gpu_crash_XXXXXX", why[256];
  close(mkstemp(path));
  chrome_stream *s = chrome_stream_open(path, 0, 0, why, sizeof why);
  assert_int_equal(chrome_stream_chunk(s, one), 0);
  int64_t safe = chrome_stream_safe_offset(s);
  assert_true(safe > 0);
  chrome_stream_abandon(s);
  FILE *f = fopen(path, "a");
  fputs(",\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"na", f); /* half an event */
  fclose(f);
  assert_int_equal(prof_chrome_trace_repair(path, safe, 3), ATTN_STATUS_OK);
  json_t *doc = load(path);
  assert_non_null(find(doc, "X", "kernel", "nvjet_sm90_tst_128x256", 0));
  assert_non_null(find(doc, "X", "user_annotation", "fwd", 0));
  assert_int_equal((int)num(doc, "attnprof_dropped_events"), 3);
  json_decref(doc);
  /* Nothing written whole: an empty but valid trace. */
  assert_int_equal(prof_chrome_trace_repair(path, 0, 0), ATTN_STATUS_OK);
  doc = load(path);
  assert_int_equal((int)json_array_size(json_object_get(doc, "traceEvents")), 0);
  json_decref(doc);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kernel_args_and_occupancy),
      cmocka_unit_test(flows_spans_lanes),
      cmocka_unit_test(stream_keeps_flows_and_footprint),
      cmocka_unit_test(repair_after_a_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
