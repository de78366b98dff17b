/* The three trace formats hold the same trace: one in-memory trace written
 * as JSON, .json.gz and .pftrace reads back event for event (and summary for
 * summary) the same from each; a pftrace of the launch loop stays within
 * 150 bytes per launch; a cut pftrace or gzip file is refused with one line
 * (INVALID_ARGUMENT), never read as a shorter trace. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prof/prof_test.h"
#include "prof/synth_launches.h"

static char dir[] = "/tmp/attnprof_formats_XXXXXX";

static const char *path_in_dir(const char *name) {
  static char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static attn_status write_as(const prof_trace *t, const char *path, prof_trace_format f, int plain) {
  prof_write_opts o = prof_write_opts_default();
  o.format = f;
  o.pftrace_plain = plain;
  return prof_write_trace(t, path, &o);
}

static prof_trace *write_and_read(const prof_trace *t, const char *name) {
  const char *p = path_in_dir(name);
  if (prof_write_trace(t, p, NULL)) fail_msg("write %s: %s", name, attn_last_error());
  prof_trace *back = NULL;
  prof_read_stats st;
  if (prof_read_chrome_trace(p, &back, &st)) fail_msg("read %s: %s", name, attn_last_error());
  assert_i64(st.bad_values, 0);
  assert_i64(st.missing_time, 0);
  return back;
}

static int cmp_event(const void *pa, const void *pb) {
  const prof_event *a = *(const prof_event *const *)pa, *b = *(const prof_event *const *)pb;
  if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
  if (a->dur_ns != b->dur_ns) return a->dur_ns < b->dur_ns ? -1 : 1;
  if (a->cat != b->cat) return a->cat < b->cat ? -1 : 1;
  if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
  if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
  return strcmp(a->name, b->name);
}

static const prof_event **sorted(const prof_trace *t) {
  size_t n = prof_trace_count(t);
  const prof_event **v = malloc((n ? n : 1) * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = prof_trace_at(t, i);
  qsort(v, n, sizeof *v, cmp_event);
  return v;
}

/* Every field of every event, the devices, the process and the clock. */
static void assert_same_trace(const prof_trace *a, const prof_trace *b) {
  assert_i64(prof_trace_count(b), prof_trace_count(a));
  assert_i64(prof_trace_device_count(b), prof_trace_device_count(a));
  for (size_t i = 0; i < prof_trace_device_count(a); i++)
    assert_memory_equal(prof_trace_device(a, i), prof_trace_device(b, i), sizeof(prof_device));
  assert_i64(prof_trace_epoch_offset(b), prof_trace_epoch_offset(a));
  assert_i64(prof_trace_process_id(b), prof_trace_process_id(a));
  assert_str(prof_trace_process_name(b), prof_trace_process_name(a));
  const prof_event **ea = sorted(a), **eb = sorted(b);
  for (size_t i = 0; i < prof_trace_count(a); i++) {
    const prof_event *x = ea[i], *y = eb[i];
    assert_str(y->name, x->name);
    assert_i64(y->cat, x->cat);
    assert_i64(y->kind, x->kind);
    assert_i64(y->start_ns, x->start_ns);
    assert_i64(y->dur_ns, x->dur_ns);
    assert_i64(y->pid, x->pid);
    assert_i64(y->tid, x->tid);
    assert_i64(y->correlation, x->correlation);
    assert_i64(y->external_id, x->external_id);
    assert_i64(y->bytes, x->bytes);
    assert_true(y->flops == x->flops);
    assert_i64(y->device, x->device);
    assert_i64(y->stream, x->stream);
    assert_i64(y->cbid, x->cbid);
    assert_i64(y->memcpy_kind, x->memcpy_kind);
    assert_memory_equal(&y->fp, &x->fp, sizeof x->fp);
  }
  free(ea);
  free(eb);
}

/* The per-range summary of both: same rows, same counts. */
static void assert_same_summary(const prof_trace *a, const prof_trace *b) {
  prof_range_summary *ra, *rb;
  int64_t na = -1, nb = -1;
  assert_i64(prof_summarize_ranges(a, &ra, &na), ATTN_STATUS_OK);
  assert_i64(prof_summarize_ranges(b, &rb, &nb), ATTN_STATUS_OK);
  assert_true(na > 0);
  assert_i64(nb, na);
  for (int64_t i = 0; i < na; i++) {
    assert_str(rb[i].name, ra[i].name);
    assert_i64(rb[i].calls, ra[i].calls);
    assert_near(rb[i].per_call_total, ra[i].per_call_total, 0);
    assert_near(rb[i].device_us_per_call, ra[i].device_us_per_call, 0);
  }
  free(ra);
  free(rb);
  prof_kernel_summary *ka, *kb;
  assert_i64(prof_summarize_kernels(a, NULL, &ka, &na), ATTN_STATUS_OK);
  assert_i64(prof_summarize_kernels(b, NULL, &kb, &nb), ATTN_STATUS_OK);
  assert_i64(nb, na);
  for (int64_t i = 0; i < na; i++) {
    assert_i64(kb[i].calls, ka[i].calls);
    assert_near(kb[i].occupancy_pct, ka[i].occupancy_pct, 0);
  }
  free(ka);
  free(kb);
}

/* Read as JSON is the reference: JSON, .json.gz and .pftrace of one trace. */
static void round_trip(prof_trace *t) {
  prof_trace *json = write_and_read(t, "t.json");
  prof_trace *gz = write_and_read(t, "t.json.gz");
  prof_trace *pf = write_and_read(t, "t.pftrace");
  assert_same_trace(json, gz);
  assert_same_trace(json, pf);
  assert_same_summary(json, pf);
  assert_same_summary(json, gz);
  prof_trace_destroy(json);
  prof_trace_destroy(gz);
  prof_trace_destroy(pf);
}

static void test_sample_round_trip(void **state) {
  (void)state;
  prof_trace *t = synth_gpu_sample();
  round_trip(t);
  /* A live trace's times are on the monotonic clock, its epoch offset set. */
  prof_trace_set_epoch_offset(t, 987654321);
  round_trip(t);
  prof_trace_destroy(t);
}

/* A process with no events of its own (a trace of GPU work only) is still
 * named, as the JSON's metadata rows name it. */
static void test_process_without_events(void **state) {
  (void)state;
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_trace_set_process(t, 777, "worker");
  synth_gpu(t, PROF_CAT_KERNEL, "k", 0, 7, 1000, 500, 1);
  prof_trace *json = write_and_read(t, "t.json");
  prof_trace *pf = write_and_read(t, "t.pftrace");
  assert_same_trace(json, pf);
  prof_trace_destroy(json);
  assert_i64(prof_trace_process_id(pf), 777);
  assert_str(prof_trace_process_name(pf), "worker");
  prof_trace_destroy(pf);
  prof_trace_destroy(t);
}

static long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) ? -1 : (long)st.st_size;
}

/* 20k launches here (seconds in CI); bench/pftrace_size.c measures 1M. */
static void test_loop_round_trip_and_size(void **state) {
  (void)state;
  enum { N = 20000 };
  prof_trace *t = synth_launch_loop(N, 7);
  round_trip(t);
  long pf = file_size(path_in_dir("t.pftrace")), js = file_size(path_in_dir("t.json"));
  print_message("%d launches: JSON %ld B, pftrace %ld B (%.1f B/launch)\n", N, js, pf,
                (double)pf / N);
  assert_true(pf > 0 && pf <= 150L * N);
  prof_trace_destroy(t);
}

/* The file cut to n bytes: read -> INVALID_ARGUMENT whose line says why. */
static void assert_cut_refused(const char *src, long n, const char *why) {
  char *data = slurp(src);
  const char *p = path_in_dir("cut");
  FILE *f = fopen(p, "wb");
  fwrite(data, 1, (size_t)n, f);
  fclose(f);
  free(data);
  prof_trace *t = (prof_trace *)1;
  attn_status st = prof_read_chrome_trace(p, &t, NULL);
  if (st != ATTN_STATUS_INVALID_ARGUMENT) fail_msg("cut at %ld of %s: status %d", n, src, (int)st);
  assert_null(t);
  assert_contains(attn_last_error(), why);
  assert_null(strchr(attn_last_error(), '\n'));
}

static void test_cut_pftrace_refused(void **state) {
  (void)state;
  prof_trace *t = synth_launch_loop(3000, 3);
  char src[256];
  snprintf(src, sizeof src, "%s", path_in_dir("c.pftrace"));
  assert_int_equal(write_as(t, src, PROF_FORMAT_PFTRACE, 0), ATTN_STATUS_OK);
  long n = file_size(src);
  for (long cut = 1; cut < n; cut += n / 37 + 1) assert_cut_refused(src, cut, "truncated");
  assert_cut_refused(src, n - 1, "truncated");
  /* Uncompressed, the file can be cut exactly between packets: the missing
   * end marker tells. */
  long packed = file_size(src);
  assert_int_equal(write_as(t, src, PROF_FORMAT_PFTRACE, 1), ATTN_STATUS_OK);
  assert_true(file_size(src) > 2 * packed); /* the option took: no zlib batches */
  unsigned char *d = (unsigned char *)slurp(src);
  long len = file_size(src), pos = 0, boundary = 0;
  while (pos < len / 2) { /* walk the framing: key 0x0a, then a varint length */
    uint64_t l = 0;
    int shift = 0;
    pos++;
    while (d[pos] & 0x80) l |= (uint64_t)(d[pos++] & 0x7f) << shift, shift += 7;
    l |= (uint64_t)d[pos++] << shift;
    pos += (long)l;
    boundary = pos;
  }
  free(d);
  assert_true(boundary > 0 && boundary < len);
  assert_cut_refused(src, boundary, "no end marker");
  prof_trace_destroy(t);
}

static void test_cut_gzip_refused(void **state) {
  (void)state;
  prof_trace *t = synth_launch_loop(3000, 3);
  char src[256];
  snprintf(src, sizeof src, "%s", path_in_dir("c.json.gz"));
  assert_int_equal(write_as(t, src, PROF_FORMAT_JSON_GZ, 0), ATTN_STATUS_OK);
  long n = file_size(src);
  for (long cut = 3; cut < n; cut += n / 23 + 1) assert_cut_refused(src, cut, "gzip");
  prof_trace_destroy(t);
}

/* Told by content: a JSON document that starts with a newline (0x0a, the
 * byte a Perfetto file starts with) is still JSON; bytes that are neither
 * are refused with one line. */
static void test_sniffing(void **state) {
  (void)state;
  const char json[] = "\n{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\", "
                      "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]}";
  prof_trace *t = NULL;
  assert_int_equal(prof_read_chrome_trace_buffer(json, sizeof json - 1, &t, NULL), ATTN_STATUS_OK);
  assert_i64(prof_trace_count(t), 1);
  prof_trace_destroy(t);
  const unsigned char junk[] = {0x0a, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff};
  t = (prof_trace *)1;
  assert_int_equal(prof_read_chrome_trace_buffer(junk, sizeof junk, &t, NULL),
                   ATTN_STATUS_INVALID_ARGUMENT);
  assert_null(t);
  assert_contains(attn_last_error(), "Perfetto");
}

/* Options of a size the library does not know are refused, naming the
 * accepted sizes; the path is not written. */
static void test_write_opts_size(void **state) {
  (void)state;
  prof_trace *t = synth_launch_loop(10, 1);
  const char *p = path_in_dir("size.json");
  prof_write_opts o = prof_write_opts_default();
  assert_int_equal(o.size, sizeof o);
  o.size = sizeof(size_t);
  assert_int_equal(prof_write_trace(t, p, &o), ATTN_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(attn_last_error(), "prof_write_opts.size"));
  o.size = sizeof o + 8;
  assert_int_equal(prof_write_trace(t, p, &o), ATTN_STATUS_INVALID_ARGUMENT);
  assert_int_equal(file_size(p), -1);
  o.size = sizeof o;
  assert_int_equal(prof_write_trace(t, p, &o), ATTN_STATUS_OK);
  prof_trace_destroy(t);
}

static void test_format_names(void **state) {
  (void)state;
  assert_int_equal(prof_trace_format_for_path("a.pftrace"), PROF_FORMAT_PFTRACE);
  assert_int_equal(prof_trace_format_for_path("a.json.gz"), PROF_FORMAT_JSON_GZ);
  assert_int_equal(prof_trace_format_for_path("a.json"), PROF_FORMAT_JSON);
  prof_trace_format f = PROF_FORMAT_AUTO;
  assert_int_equal(prof_trace_format_from_name("pftrace", &f), ATTN_STATUS_OK);
  assert_int_equal(f, PROF_FORMAT_PFTRACE);
  assert_int_equal(prof_trace_format_from_name("json.gz", &f), ATTN_STATUS_OK);
  assert_int_equal(f, PROF_FORMAT_JSON_GZ);
  assert_int_equal(prof_trace_format_from_name("protobuf", &f), ATTN_STATUS_INVALID_ARGUMENT);
  assert_int_equal(f, PROF_FORMAT_JSON_GZ);
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  const char *names[] = {"t.json",    "t.json.gz", "t.pftrace", "c.pftrace",
                         "c.json.gz", "cut",       "size.json"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(path_in_dir(names[i]));
  return rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_round_trip),
      cmocka_unit_test(test_loop_round_trip_and_size),
      cmocka_unit_test(test_process_without_events),
      cmocka_unit_test(test_cut_pftrace_refused),
      cmocka_unit_test(test_cut_gzip_refused),
      cmocka_unit_test(test_sniffing),
      cmocka_unit_test(test_format_names),
      cmocka_unit_test(test_write_opts_size),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
