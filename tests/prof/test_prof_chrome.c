/* The Chrome trace in Kineto's schema, written and then parsed back with
 * jansson: top level, categories, args names, exact ts/dur, flows, metadata,
 * hostile names, and the atomic write (nothing left behind on failure). */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prof/prof_test.h"

static char dir[64];

static int make_dir(void **state) {
  snprintf(dir, sizeof dir, "/tmp/attnprof_chrome_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd);
}

static void path_in_dir(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", dir, name);
}

static json_t *load(const char *path) {
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  if (!j) fail_msg("%s does not parse: %s (line %d)", path, err.text, err.line);
  return j;
}

static json_t *find_event(json_t *events, const char *ph, const char *name) {
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "ph")), ph) &&
        !strcmp(json_string_value(json_object_get(e, "name")), name))
      return e;
  }
  fail_msg("no event ph=%s name=%s", ph, name);
  return NULL;
}

static void assert_args(json_t *ev, const char *const *keys) {
  json_t *args = json_object_get(ev, "args");
  for (; *keys; keys++)
    if (!json_object_get(args, *keys))
      fail_msg("event '%s' has no arg '%s'", json_string_value(json_object_get(ev, "name")), *keys);
}

static void top_level_and_categories(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "t.json");
  prof_trace *t = synth_gpu_sample();
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  char *text = slurp(path);
  /* Kineto's order of the top-level keys. */
  const char *order[] = {"\"schemaVersion\"",       "\"deviceProperties\"", "\"displayTimeUnit\"",
                         "\"baseTimeNanoseconds\"", "\"traceEvents\"",      "\"traceName\""};
  for (int i = 1; i < 6; i++)
    if (!(strstr(text, order[i - 1]) < strstr(text, order[i])))
      fail_msg("%s is not before %s", order[i - 1], order[i]);
  free(text);
  json_t *j = load(path);
  assert_i64(json_integer_value(json_object_get(j, "schemaVersion")), 1);
  assert_str(json_string_value(json_object_get(j, "displayTimeUnit")), "ms");
  json_t *dev = json_array_get(json_object_get(j, "deviceProperties"), 0);
  assert_str(json_string_value(json_object_get(dev, "name")), "NVIDIA H200");
  assert_i64(json_integer_value(json_object_get(dev, "numSms")), 132);
  assert_i64(json_integer_value(json_object_get(dev, "sharedMemPerBlockOptin")), 232448);
  assert_i64(json_integer_value(json_object_get(dev, "totalGlobalMem")), 150109880320LL);
  json_t *events = json_object_get(j, "traceEvents");
  const char *cats[] = {"cpu_op",     "cuda_driver", "cuda_runtime",   "kernel",
                        "gpu_memcpy", "gpu_memset",  "user_annotation"};
  for (int c = 0; c < 7; c++) {
    int seen = 0;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
      const char *cat = json_string_value(json_object_get(e, "cat"));
      seen +=
          cat && !strcmp(cat, cats[c]) && !strcmp(json_string_value(json_object_get(e, "ph")), "X");
    }
    if (!seen) fail_msg("no X event of cat %s", cats[c]);
  }
  json_decref(j);
  prof_trace_destroy(t);
}

static void args_names(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "args.json");
  prof_trace *t = synth_gpu_sample();
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_t *j = load(path), *events = json_object_get(j, "traceEvents");
  const char *kernel[] = {"device",        "stream",
                          "correlation",   "registers per thread",
                          "shared memory", "blocks per SM",
                          "warps per SM",  "grid",
                          "block",         "est. achieved occupancy %",
                          "cluster",       NULL};
  json_t *k = find_event(events, "X", "nvjet_sm90_tst");
  assert_args(k, kernel);
  json_t *a = json_object_get(k, "args");
  assert_i64(json_integer_value(json_object_get(a, "shared memory")), 213188);
  assert_i64(json_integer_value(json_object_get(a, "registers per thread")), 168);
  assert_i64(json_integer_value(json_array_get(json_object_get(a, "grid"), 0)), 264);
  assert_i64(json_integer_value(json_array_get(json_object_get(a, "block"), 0)), 384);
  assert_near(json_number_value(json_object_get(a, "blocks per SM")), 2.0, 1e-12);
  assert_near(json_number_value(json_object_get(a, "warps per SM")), 24.0, 1e-12);
  assert_i64(json_integer_value(json_object_get(a, "correlation")), 91);
  const char *memcpy_args[] = {
      "device", "stream", "correlation", "bytes", "memory bandwidth (GB/s)", NULL};
  json_t *m = find_event(events, "X", "Memcpy DtoD (Device -> Device)");
  assert_args(m, memcpy_args);
  assert_near(
      json_number_value(json_object_get(json_object_get(m, "args"), "memory bandwidth (GB/s)")),
      268435456.0 / 2000, 1e-6);
  const char *api[] = {"cbid", "correlation", NULL};
  assert_args(find_event(events, "X", "cuLaunchKernelEx"), api);
  const char *op[] = {"op kind", "flops", "bytes", NULL};
  json_t *o = find_event(events, "X", "gemm_qk");
  assert_args(o, op);
  assert_str(json_string_value(json_object_get(json_object_get(o, "args"), "op kind")), "gemm");
  assert_near(json_number_value(json_object_get(json_object_get(o, "args"), "flops")), 2.5e9, 0);
  assert_i64(json_integer_value(json_object_get(json_object_get(o, "args"), "bytes")), 4096);
  json_decref(j);
  prof_trace_destroy(t);
}

/* base + ts * 1000 gives back every event's ns exactly; ts has 3 decimals. */
static void exact_times(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "ts.json");
  prof_trace *t = synth_gpu_sample();
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  char *text = slurp(path);
  assert_contains(text, "\"ts\": 1234.567, \"dur\": 1.001"); /* the cpu op */
  assert_contains(text, "\"ts\": 3000.001, \"dur\": 0.999"); /* the kernel */
  free(text);
  json_t *j = load(path), *events = json_object_get(j, "traceEvents");
  long long base = json_integer_value(json_object_get(j, "baseTimeNanoseconds"));
  assert_i64(base, T0); /* the first event (the range), floored to the ms */
  for (size_t i = 0; i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    json_t *je = find_event(events, "X", e->name);
    long long ts = llround(json_number_value(json_object_get(je, "ts")) * 1000);
    long long dur = llround(json_number_value(json_object_get(je, "dur")) * 1000);
    if (base + ts != e->start_ns || dur != e->dur_ns)
      fail_msg("%s: base %lld + ts %lld != %lld or dur %lld != %lld", e->name, base, ts,
               (long long)e->start_ns, dur, (long long)e->dur_ns);
  }
  json_decref(j);
  prof_trace_destroy(t);
}

/* Every "s" has one "f" with its id; only launch -> GPU pairs get them. */
static void flows_pair_up(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "flows.json");
  prof_trace *t = synth_gpu_sample();
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_t *j = load(path), *events = json_object_get(j, "traceEvents");
  int starts = 0, ends = 0;
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    if (strcmp(ph, "s") && strcmp(ph, "f")) continue;
    assert_str(json_string_value(json_object_get(e, "cat")), "ac2g");
    assert_str(json_string_value(json_object_get(e, "name")), "ac2g");
    long long id = json_integer_value(json_object_get(e, "id"));
    if (id != 91 && id != 92) fail_msg("flow with id %lld: only 91 and 92 pair up", id);
    if (!strcmp(ph, "s")) {
      starts++;
      assert_i64(json_integer_value(json_object_get(e, "pid")), TEST_PID);
      assert_i64(json_integer_value(json_object_get(e, "tid")), id == 91 ? 11 : 12);
      assert_near(json_number_value(json_object_get(e, "ts")), id == 91 ? 2000.0 : 2100.0, 1e-9);
    } else {
      ends++;
      assert_str(json_string_value(json_object_get(e, "bp")), "e");
      assert_i64(json_integer_value(json_object_get(e, "pid")), 0);
      assert_i64(json_integer_value(json_object_get(e, "tid")), 7);
      assert_near(json_number_value(json_object_get(e, "ts")), id == 91 ? 3000.001 : 4000.0, 1e-9);
    }
  }
  assert_i64(starts, 2);
  assert_i64(ends, 2);
  json_decref(j);
  prof_trace_destroy(t);
}

static json_t *meta(json_t *events, const char *name, long long pid, long long tid) {
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "ph")), "M") &&
        !strcmp(json_string_value(json_object_get(e, "name")), name) &&
        json_integer_value(json_object_get(e, "pid")) == pid &&
        (tid < 0 || json_integer_value(json_object_get(e, "tid")) == tid))
      return json_object_get(e, "args");
  }
  fail_msg("no metadata %s for pid %lld tid %lld", name, pid, tid);
  return NULL;
}

static void metadata(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "meta.json");
  prof_trace *t = synth_gpu_sample();
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_t *j = load(path), *ev = json_object_get(j, "traceEvents");
  assert_str(json_string_value(json_object_get(meta(ev, "process_name", TEST_PID, -1), "name")),
             "python3");
  assert_str(json_string_value(json_object_get(meta(ev, "process_labels", TEST_PID, -1), "labels")),
             "CPU");
  assert_str(json_string_value(json_object_get(meta(ev, "thread_name", TEST_PID, 11), "name")),
             "thread 11 (python3)");
  assert_str(json_string_value(json_object_get(meta(ev, "thread_name", TEST_PID, 12), "name")),
             "thread 12 (python3)");
  assert_str(json_string_value(json_object_get(meta(ev, "process_labels", 0, -1), "labels")),
             "GPU 0");
  assert_i64(
      json_integer_value(json_object_get(meta(ev, "process_sort_index", 0, -1), "sort_index")),
      5000000);
  assert_str(json_string_value(json_object_get(meta(ev, "thread_name", 0, 7), "name")),
             "stream 7 ");
  assert_str(json_string_value(json_object_get(meta(ev, "thread_name", 0, 8), "name")),
             "stream 8 ");
  json_decref(j);
  prof_trace_destroy(t);
}

static void hostile_names(void **state) {
  const char *names[] = {"quote\" back\\slash", "ctl\x01\x1f\x7f\b\f\n\r\tend", "</script><b>&amp;",
                         "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80", "void k<float, 8>(int)"};
  char path[128];
  path_in_dir(path, sizeof path, "hostile.json");
  prof_trace *t = NULL;
  prof_trace_create(&t);
  for (int i = 0; i < 5; i++) synth_op(t, names[i], PROF_KIND_OTHER, 1, 1000 * i, 10);
  synth_op(t, "bad\xff\xfeutf8\xc3", PROF_KIND_OTHER, 1, 9000, 10);
  prof_trace_set_process(t, TEST_PID, "proc\"<name>");
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  char *text = slurp(path);
  assert_null(strstr(text, "</script>"));
  /* Raw where JSON allows: Perfetto shows \uXXXX escapes literally. */
  assert_contains(text, "\"void k<float, 8>(int)\"");
  assert_contains(text, "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80");
  for (const char *p = text; *p; p++)
    if ((unsigned char)*p < 0x20 && *p != '\n')
      fail_msg("raw control character 0x%02x in the file", *p);
  free(text);
  json_t *j = load(path), *events = json_object_get(j, "traceEvents");
  for (int i = 0; i < 5; i++) find_event(events, "X", names[i]);
  find_event(events, "X",
             "bad\xef\xbf\xbd\xef\xbf\xbdutf8\xef\xbf\xbd"); /* U+FFFD for each bad byte */
  assert_str(json_string_value(json_object_get(meta(events, "process_name", TEST_PID, -1), "name")),
             "proc\"<name>");
  json_decref(j);
  prof_trace_destroy(t);
}

static void empty_trace_is_valid(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "empty.json");
  prof_trace *t = NULL;
  prof_trace_create(&t);
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_t *j = load(path);
  assert_i64(json_array_size(json_object_get(j, "traceEvents")), 0);
  json_decref(j);
  prof_trace_destroy(t);
}

static void assert_nothing_left(const char *path) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (file_exists(tmp)) fail_msg("%s was left behind", tmp);
}

static void unwritable_paths(void **state) {
  prof_trace *t = synth_gpu_sample();
  char path[128];
  path_in_dir(path, sizeof path, "no/such/dir/t.json");
  assert_i64(prof_check_writable(path), ATTN_STATUS_IO_ERROR);
  assert_contains(attn_last_error(), path);
  assert_contains(attn_last_error(), strerror(ENOENT));
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_IO_ERROR);
  assert_contains(attn_last_error(), path);
  assert_contains(attn_last_error(), strerror(ENOENT));
  assert_false(file_exists(path));
  assert_nothing_left(path);
  /* A directory in the way: the rename fails, the tmp file goes. */
  path_in_dir(path, sizeof path, "a_dir");
  mkdir(path, 0755);
  assert_i64(prof_check_writable(path), ATTN_STATUS_IO_ERROR);
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_IO_ERROR);
  assert_contains(attn_last_error(), path);
  assert_nothing_left(path);
  prof_trace_destroy(t);
}

/* A write that fails half way (file size limit): the old file stays as it
 * was, no tmp file stays. Works as root too, unlike a read-only directory. */
static void failure_midway_keeps_old_file(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "old.json");
  FILE *f = fopen(path, "w");
  fputs("old content", f);
  fclose(f);
  prof_trace *t = NULL;
  prof_trace_create(&t);
  for (int i = 0; i < 20000; i++) synth_op(t, "op", PROF_KIND_GEMM, 1, i * 10, 5);
  struct rlimit old, small = {64 * 1024, 0};
  getrlimit(RLIMIT_FSIZE, &old);
  small.rlim_max = old.rlim_max;
  signal(SIGXFSZ, SIG_IGN);
  setrlimit(RLIMIT_FSIZE, &small);
  attn_status st = prof_write_chrome_trace(t, path);
  setrlimit(RLIMIT_FSIZE, &old);
  assert_i64(st, ATTN_STATUS_IO_ERROR);
  assert_contains(attn_last_error(), path);
  assert_contains(attn_last_error(), strerror(EFBIG));
  char *text = slurp(path);
  assert_str(text, "old content");
  free(text);
  assert_nothing_left(path);
  prof_trace_destroy(t);
}

static void check_writable_leaves_nothing(void **state) {
  char path[128];
  path_in_dir(path, sizeof path, "fresh.json");
  assert_i64(prof_check_writable(path), ATTN_STATUS_OK);
  assert_false(file_exists(path));
  assert_nothing_left(path);
  path_in_dir(path, sizeof path, "existing.json");
  FILE *f = fopen(path, "w");
  fputs("keep me", f);
  fclose(f);
  assert_i64(prof_check_writable(path), ATTN_STATUS_OK);
  char *text = slurp(path);
  assert_str(text, "keep me");
  free(text);
  assert_nothing_left(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(top_level_and_categories),
      cmocka_unit_test(args_names),
      cmocka_unit_test(exact_times),
      cmocka_unit_test(flows_pair_up),
      cmocka_unit_test(metadata),
      cmocka_unit_test(hostile_names),
      cmocka_unit_test(empty_trace_is_valid),
      cmocka_unit_test(unwritable_paths),
      cmocka_unit_test(failure_midway_keeps_old_file),
      cmocka_unit_test(check_writable_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
