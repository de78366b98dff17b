/* The trace reader: the four torch.profiler fixtures summarized as the files
 * hold them (a jansson oracle and the fixtures' README), Kineto's fields
 * mapped into the event model, exact nanoseconds, gzip, our own writer read
 * back, and bad input (malformed, truncated, odd types, unknown categories,
 * enormous strings) refused or counted, never a crash. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "prof/prof_test.h"
#include "reader/reader_oracle.h"

static const char *const fixtures[] = {"trace_naive.json", "trace_naive_inplace.json",
                                       "trace_efficient.json", "trace_flash.json"};

static prof_trace *read_text(const char *text, prof_read_stats *st) {
  prof_trace *t = NULL;
  attn_status s = prof_read_chrome_trace_buffer(text, strlen(text), &t, st);
  if (s) fail_msg("reading '%.60s' failed: %s", text, attn_last_error());
  return t;
}

static const prof_event *find_event(const prof_trace *t, const char *name) {
  for (size_t i = 0; i < prof_trace_count(t); i++)
    if (!strcmp(prof_trace_at(t, i)->name, name)) return prof_trace_at(t, i);
  fail_msg("no event named %s", name);
  return NULL;
}

/* ---- the fixtures -------------------------------------------------------- */

static void check_fixture(const char *file) {
  char path[512], readme[512];
  snprintf(path, sizeof path, "%s/%s", READER_FIXTURES, file);
  snprintf(readme, sizeof readme, "%s/README.md", READER_FIXTURES);
  oracle o;
  oracle_of(path, "attn_fwd", &o);
  prof_trace *t;
  prof_read_stats st;
  if (prof_read_chrome_trace(path, &t, &st)) fail_msg("%s: %s", file, attn_last_error());
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  const prof_range_summary *r = prof_range_summary_find(rows, n, "attn_fwd");
  if (!r) fail_msg("%s: no attn_fwd range read", file);
  assert_i64(r->calls, o.calls);
  assert_near(r->per_call_kind[PROF_KIND_KERNEL], o.kernels, 0);
  assert_near(r->per_call_kind[PROF_KIND_MEMCPY], o.memcpy, 0);
  assert_near(r->per_call_kind[PROF_KIND_MEMSET], o.memset, 0);
  assert_near(r->device_us_per_call, o.device_us, 1e-6);
  double row[4];
  if (readme_row(readme, file, row)) fail_msg("%s: no row in %s", file, readme);
  assert_near(r->per_call_kind[PROF_KIND_KERNEL], row[0], 0);
  assert_near(r->per_call_kind[PROF_KIND_MEMCPY], row[1], 0);
  assert_near(r->per_call_kind[PROF_KIND_MEMSET], row[2], 0);
  assert_near(r->device_us_per_call, row[3], 0.0005);
  assert_i64(prof_trace_device_count(t), 1);
  assert_i64(prof_trace_device(t, 0)->num_sms, 132);
  free(rows);
  prof_trace_destroy(t);
  oracle_free(&o);
}

static void fixtures_match_the_files(void **state) {
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) check_fixture(fixtures[i]);
}

/* ---- fields and times ---------------------------------------------------- */

static const char kernel_doc[] =
    "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", \"computeMajor\": 9,"
    " \"computeMinor\": 0, \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448}],"
    " \"baseTimeNanoseconds\": 1790857026000000000, \"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\", \"pid\": 496,"
    " \"tid\": 497, \"ts\": 5132418966677.728, \"dur\": 9.5, \"args\": {\"correlation\": 57,"
    " \"External id\": 12, \"cbid\": 307}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"nvjet\", \"pid\": 0, \"tid\": 7,"
    " \"ts\": 5132418966700.0015, \"dur\": 83.0004, \"args\": {\"correlation\": 57, \"device\": 0,"
    " \"stream\": 7, \"grid\": [2, 66, 1], \"block\": [384, 1, 1], \"registers per thread\": 168,"
    " \"shared memory\": 213188, \"est. achieved occupancy %\": 0, \"cluster\": [2, 1, 1]}},"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD (Device -> Device)\","
    " \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": {\"bytes\": 268435456}},"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"gemm_qk\", \"pid\": 496, \"tid\": 497,"
    " \"ts\": 3, \"dur\": 4, \"args\": {\"op kind\": \"gemm\", \"flops\": 2.5e9}}]}";

static void kineto_fields_are_mapped(void **state) {
  prof_read_stats st;
  prof_trace *t = read_text(kernel_doc, &st);
  assert_i64(st.events, 4);
  assert_i64(prof_trace_epoch_offset(t), 1790857026000000000LL);
  const prof_event *l = find_event(t, "cuLaunchKernelEx");
  assert_i64(l->start_ns, 5132418966677728LL); /* µs with a ns fraction: exact */
  assert_i64(l->dur_ns, 9500);
  assert_i64(l->correlation, 57);
  assert_i64(l->external_id, 12);
  assert_i64(l->cbid, 307);
  assert_i64(l->pid, 496);
  assert_i64(l->tid, 497);
  const prof_event *k = find_event(t, "nvjet");
  assert_i64(k->start_ns, 5132418966700002LL); /* a fourth decimal rounds */
  assert_i64(k->dur_ns, 83000);
  assert_i64(k->device, 0);
  assert_i64(k->stream, 7);
  assert_i64(k->kind, PROF_KIND_KERNEL);
  assert_i64(k->fp.grid[1], 66);
  assert_i64(k->fp.block[0], 384);
  assert_i64(k->fp.cluster[0], 2);
  assert_i64(k->fp.registers_per_thread, 168);
  assert_i64(k->fp.static_shared_memory + k->fp.dynamic_shared_memory, 213188);
  assert_near(k->fp.occupancy_pct_in_file, 0, 0);
  const prof_event *m = find_event(t, "Memcpy DtoD (Device -> Device)");
  assert_i64(m->memcpy_kind, PROF_MEMCPY_DTOD);
  assert_i64(m->bytes, 268435456);
  assert_i64(m->device, 0); /* from pid when args do not say */
  const prof_event *op = find_event(t, "gemm_qk");
  assert_i64(op->kind, PROF_KIND_GEMM);
  assert_near(op->flops, 2.5e9, 0);
  assert_i64(prof_trace_device_count(t), 1);
  assert_i64(prof_trace_device(t, 0)->shared_memory_per_block_optin, 232448);
  assert_str(prof_trace_device(t, 0)->name, "NVIDIA H200");
  prof_trace_destroy(t);
}

static void string_ids_odd_values_and_order(void **state) {
  prof_read_stats st;
  prof_trace *t = read_text(
      "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"late\", \"pid\": \"Spans\", \"tid\": "
      "\"7\","
      " \"ts\": 50, \"dur\": 1},"
      " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"early\", \"pid\": \"Spans\", \"tid\": 7,"
      " \"ts\": 10, \"dur\": true, \"args\": {\"External id\": \"x\", \"grid\": [1, {}, \"3\"]}},"
      " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"nameless pid\", \"ts\": 60},"
      " {\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"f\", \"ts\": 1},"
      " {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"t\", \"ts\": 1},"
      " {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"t\", \"ts\": 1},"
      " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"no time\"},"
      " {\"ph\": \"B\", \"name\": \"b\", \"ts\": 1}, {\"ph\": \"i\", \"ts\": 1}, 42, [1],"
      " {\"ph\": \"s\", \"id\": 1, \"ts\": 2}]",
      &st);
  assert_i64(st.events, 3);
  assert_i64(st.unknown_category, 3);
  assert_i64(st.n_categories, 2);
  assert_str(st.categories[0].name, "python_function");
  assert_i64(st.categories[1].count, 2);
  assert_i64(st.missing_time, 1);
  assert_i64(st.unsupported_phase, 2);
  assert_i64(st.not_an_event, 2);
  assert_i64(st.flows, 1);
  assert_i64(st.out_of_order, 1);
  assert_i64(st.bad_values, 4); /* dur true, External id "x", grid {} and "3" */
  const prof_event *late = find_event(t, "late"), *early = find_event(t, "early");
  assert_i64(late->tid, 7);          /* "7" is the number 7 */
  assert_i64(late->pid, early->pid); /* "Spans" twice: one id */
  assert_true(late->pid < 0);
  assert_i64(early->dur_ns, 0);
  prof_trace_destroy(t);
}

static void enormous_strings_are_cut(void **state) {
  size_t big = 3 * (size_t)PROF_READ_NAME_MAX;
  char *doc = malloc(2 * big + 4096);
  char *name = malloc(big + 1);
  for (size_t i = 0; i < big; i += 2) name[i] = (char)0xC3, name[i + 1] = (char)0xA9; /* é */
  name[big] = 0;
  sprintf(doc,
          "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"ts\": 1,"
          " \"dur\": 1, \"args\": {\"unknown\": \"%s\"}}]}",
          name, name);
  prof_read_stats st;
  prof_trace *t = read_text(doc, &st);
  const char *kept = prof_trace_at(t, 0)->name;
  assert_i64(st.truncated_strings, 1);          /* the unknown arg is skipped, never copied */
  assert_i64(strlen(kept), PROF_READ_NAME_MAX); /* cut between two characters */
  assert_i64((unsigned char)kept[strlen(kept) - 1], 0xA9);
  prof_trace_destroy(t);
  free(doc);
  free(name);
}

/* Durations near the limit: the sum of all of them still fits an int64, so
 * no analysis that adds them up can overflow (a hostile file's trick). */
static void durations_cannot_overflow_a_sum(void **state) {
  char doc[2048] =
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"r\","
      " \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1100000000000000}";
  for (int i = 0; i < 5; i++)
    strcat(doc, ", {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \"tid\": 1,"
                " \"ts\": 0, \"dur\": 1100000000000000}");
  strcat(doc, "]}");
  prof_read_stats st;
  prof_trace *t = read_text(doc, &st);
  int64_t total = 0;
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    assert_true(prof_trace_at(t, i)->dur_ns <= INT64_MAX - total);
    total += prof_trace_at(t, i)->dur_ns;
  }
  assert_i64(st.events, 6);
  assert_i64(st.bad_values, 2); /* 4 x 1.1e18 ns fit under 2^62, the 5th and 6th not */
  prof_range_summary *rows;
  int64_t n = 0;
  assert_i64(prof_summarize_ranges(t, &rows, &n), ATTN_STATUS_OK);
  assert_i64(n, 1);
  free(rows);
  prof_trace_destroy(t);
}

/* ---- bad input ----------------------------------------------------------- */

typedef struct {
  const char *text, *says;
} bad_case;

static void bad_input_is_refused_with_a_reason(void **state) {
  static const bad_case cases[] = {
      {"", "empty"},
      {"{\"traceEvents\": [{\"ph\": \"X\"", "premature EOF"},
      {"42", "the document is a number"},
      {"\"x\"", "the document is a string"},
      {"{\"schemaVersion\": 1}", "no \"traceEvents\""},
      {"{\"traceEvents\": {}}", "no \"traceEvents\""},
      {"{\"traceEvents\": []} {", "trailing garbage"},
      {"{\"traceEvents\": [}", "byte 18 (line 1)"}, /* the 18th byte, counted from 1 */
      {"\x1f\x8b\x08\x00junk", "gzip"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    prof_trace *t = (prof_trace *)1;
    attn_status s = prof_read_chrome_trace_buffer(cases[i].text, strlen(cases[i].text), &t, NULL);
    if (s != ATTN_STATUS_INVALID_ARGUMENT)
      fail_msg("case %zu: status %d, expected invalid argument", i, s);
    assert_null(t);
    assert_contains(attn_last_error(), cases[i].says);
  }
  prof_trace *t;
  assert_i64(prof_read_chrome_trace("/nonexistent/trace.json", &t, NULL), ATTN_STATUS_IO_ERROR);
  assert_contains(attn_last_error(), "cannot open");
  assert_i64(prof_read_chrome_trace("/", &t, NULL), ATTN_STATUS_IO_ERROR);
  assert_contains(attn_last_error(), "cannot read");
}

/* Nesting far deeper than any trace: skipped without recursion. */
static void deep_nesting_is_skipped(void **state) {
  enum { DEPTH = 200000 };
  char *doc = malloc(2 * DEPTH + 256);
  char *p = doc + sprintf(doc, "{\"x\": ");
  for (int i = 0; i < DEPTH; i++) *p++ = '[';
  for (int i = 0; i < DEPTH; i++) *p++ = ']';
  strcpy(p, ", \"traceEvents\": []}");
  prof_read_stats st;
  prof_trace *t = read_text(doc, &st);
  assert_i64(st.events, 0);
  prof_trace_destroy(t);
  free(doc);
}

/* ---- gzip and our own writer --------------------------------------------- */

static unsigned char *gzip_of(const char *text, size_t *n) {
  z_stream z;
  memset(&z, 0, sizeof z);
  deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY); /* 31: gzip wrapper */
  size_t cap = deflateBound(&z, (uLong)strlen(text)) + 64;
  unsigned char *out = malloc(cap);
  z.next_in = (unsigned char *)text, z.avail_in = (uInt)strlen(text);
  z.next_out = out, z.avail_out = (uInt)cap;
  assert_i64(deflate(&z, Z_FINISH), Z_STREAM_END);
  *n = cap - z.avail_out;
  deflateEnd(&z);
  return out;
}

static void gzip_reads_like_plain(void **state) {
  size_t n;
  unsigned char *gz = gzip_of(kernel_doc, &n);
  prof_trace *t;
  prof_read_stats st;
  if (prof_read_chrome_trace_buffer(gz, n, &t, &st)) fail_msg("%s", attn_last_error());
  assert_i64(st.events, 4);
  assert_i64(find_event(t, "nvjet")->fp.registers_per_thread, 168);
  prof_trace_destroy(t);
  assert_i64(prof_read_chrome_trace_buffer(gz, n / 2, &t, NULL), ATTN_STATUS_INVALID_ARGUMENT);
  assert_contains(attn_last_error(), "truncated gzip");
  free(gz);
}

static void our_writer_reads_back(void **state) {
  prof_trace *t = synth_gpu_sample();
  char path[] = "/tmp/attnprof-reader-XXXXXX.json";
  close(mkstemps(path, 5));
  if (prof_write_chrome_trace(t, path)) fail_msg("%s", attn_last_error());
  prof_trace *back;
  prof_read_stats st;
  if (prof_read_chrome_trace(path, &back, &st)) fail_msg("%s", attn_last_error());
  assert_i64(st.events, prof_trace_count(t));
  assert_i64(st.unknown_category + st.unsupported_phase + st.bad_values, 0);
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *a = prof_trace_at(t, i), *b = find_event(back, a->name);
    assert_i64(b->cat, a->cat);
    assert_i64(b->start_ns + prof_trace_epoch_offset(back),
               a->start_ns + prof_trace_epoch_offset(t));
    assert_i64(b->dur_ns, a->dur_ns);
    assert_i64(b->correlation, a->correlation);
    assert_i64(b->bytes, a->bytes);
    assert_near(b->flops, a->flops, 0);
    if (a->cat == PROF_CAT_CPU_OP) assert_i64(b->kind, a->kind);
    if (a->cat != PROF_CAT_KERNEL) continue;
    assert_memory_equal(b->fp.grid, a->fp.grid, sizeof a->fp.grid);
    assert_memory_equal(b->fp.cluster, a->fp.cluster, sizeof a->fp.cluster);
    assert_i64(b->fp.dynamic_shared_memory, a->fp.dynamic_shared_memory);
    assert_i64(b->fp.registers_per_thread, a->fp.registers_per_thread);
  }
  assert_i64(prof_trace_device(back, 0)->num_sms, prof_trace_device(t, 0)->num_sms);
  assert_i64(prof_trace_process_id(back), prof_trace_process_id(t));
  prof_trace_destroy(back);
  prof_trace_destroy(t);
  remove(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixtures_match_the_files),
      cmocka_unit_test(kineto_fields_are_mapped),
      cmocka_unit_test(string_ids_odd_values_and_order),
      cmocka_unit_test(enormous_strings_are_cut),
      cmocka_unit_test(durations_cannot_overflow_a_sum),
      cmocka_unit_test(bad_input_is_refused_with_a_reason),
      cmocka_unit_test(deep_nesting_is_skipped),
      cmocka_unit_test(gzip_reads_like_plain),
      cmocka_unit_test(our_writer_reads_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
