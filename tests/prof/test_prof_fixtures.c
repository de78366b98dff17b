/* Attribution and the range summary on real torch.profiler traces from an
 * H200 (fixtures/): each "attn_fwd" sits inside a "ProfilerStep#N", its GPU
 * work is found through the correlation ids of the launch calls, and the
 * figures per call match what the traces hold (fixtures/README.md, computed
 * independently). Then the loaded trace is written back in our schema and
 * parsed again. The loader here is a small test-only one over jansson,
 * independent of the library's trace reader (src/prof/io/chrome_reader.c),
 * so that the two check each other. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "prof/prof_test.h"

static int64_t arg_int(json_t *args, const char *key, int64_t dflt) {
  json_t *v = json_object_get(args, key);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static void dim3(json_t *args, const char *key, int32_t out[3]) {
  for (int i = 0; i < 3; i++)
    out[i] = (int32_t)json_integer_value(json_array_get(json_object_get(args, key), (size_t)i));
}

/* The complete ("X") events with integer pid/tid, into a new trace. */
static prof_trace *load_fixture(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", ATTNPROF_PROF_FIXTURES, name);
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  if (!j) fail_msg("cannot load %s: %s", path, err.text);
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_trace_set_epoch_offset(
      t, (int64_t)json_integer_value(json_object_get(j, "baseTimeNanoseconds")));
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
    json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid"),
           *a = json_object_get(e, "args");
    if (strcmp(json_string_value(json_object_get(e, "ph")), "X") || !json_is_integer(pid)) continue;
    prof_event ev =
        prof_event_init(prof_cat_from_name(json_string_value(json_object_get(e, "cat"))),
                        json_string_value(json_object_get(e, "name")));
    ev.pid = json_integer_value(pid), ev.tid = json_integer_value(tid);
    ev.start_ns = llround(json_number_value(json_object_get(e, "ts")) * 1000);
    ev.dur_ns = llround(json_number_value(json_object_get(e, "dur")) * 1000);
    ev.correlation = arg_int(a, "correlation", 0);
    ev.external_id = arg_int(a, "External id", 0);
    ev.device = (int32_t)arg_int(a, "device", -1);
    ev.stream = (int32_t)arg_int(a, "stream", -1);
    ev.cbid = (int32_t)arg_int(a, "cbid", -1);
    ev.bytes = arg_int(a, "bytes", 0);
    if (ev.cat == PROF_CAT_KERNEL) {
      dim3(a, "grid", ev.fp.grid);
      dim3(a, "block", ev.fp.block);
      ev.fp.registers_per_thread = (int32_t)arg_int(a, "registers per thread", 0);
      ev.fp.dynamic_shared_memory = (int32_t)arg_int(a, "shared memory", 0);
      ev.fp.occupancy_pct_in_file =
          json_number_value(json_object_get(a, "est. achieved occupancy %"));
    }
    prof_trace_append(t, &ev, NULL);
  }
  json_decref(j);
  return t;
}

typedef struct {
  const char *file;
  double kernels, memcpy, memset, device_us;
  const char *launch_api; /* one API the forward must use */
  double launch_per_call;
} fixture;

static const fixture fixtures[] = {
    {"trace_naive.json", 5, 1, 1, 1062.450, "cuLaunchKernelEx", 2},
    {"trace_naive_inplace.json", 5, 0, 1, 937.253, "cudaMemsetAsync", 1},
    {"trace_efficient.json", 1, 0, 0, 178.571, "cudaLaunchKernel", 1},
    {"trace_flash.json", 1, 0, 0, 94.421, "cudaLaunchKernel", 1},
};

static void check_fixture(const fixture *fx) {
  prof_trace *t = load_fixture(fx->file);
  prof_range_summary *rows;
  int64_t n;
  if (prof_summarize_ranges(t, &rows, &n)) n = -1;
  const prof_range_summary *f = prof_range_summary_find(rows, n, "attn_fwd");
  if (!f) fail_msg("%s: no attn_fwd row", fx->file);
  assert_i64(f->calls, 3);
  assert_i64(f->gpu, 1);
  assert_near(f->per_call_kind[PROF_KIND_KERNEL], fx->kernels, 0);
  assert_near(f->per_call_kind[PROF_KIND_MEMCPY], fx->memcpy, 0);
  assert_near(f->per_call_kind[PROF_KIND_MEMSET], fx->memset, 0);
  assert_near(f->per_call_total, fx->kernels + fx->memcpy + fx->memset, 0);
  assert_near(f->device_us_per_call, fx->device_us, 0.001);
  double per_call = -1;
  for (int j = 0; j < f->n_launch_apis; j++)
    if (!strcmp(f->launch_api[j], fx->launch_api)) per_call = f->launch_api_per_call[j];
  assert_near(per_call, fx->launch_per_call, 0);
  /* The enclosing step gets the same GPU work (one forward per step). */
  const prof_range_summary *step = prof_range_summary_find(rows, n, "ProfilerStep#3");
  if (!step) fail_msg("%s: no ProfilerStep#3 row", fx->file);
  assert_i64(step->calls, 1);
  assert_near(step->per_call_total, fx->kernels + fx->memcpy + fx->memset, 0);
  free(rows);
  prof_trace_destroy(t);
}

static void summaries_match(void **state) {
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) check_fixture(&fixtures[i]);
}

/* Written back in our schema: it parses, keeps every X event, and draws one
 * flow pair per GPU event whose launch is in the trace. */
static void round_trip(void **state) {
  prof_trace *t = load_fixture("trace_naive.json");
  char path[64];
  snprintf(path, sizeof path, "/tmp/attnprof_fixture_%d.json", (int)getpid());
  assert_i64(prof_write_chrome_trace(t, path), ATTN_STATUS_OK);
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  unlink(path);
  if (!j) fail_msg("written trace does not parse: %s", err.text);
  size_t i, x = 0, s = 0, f = 0;
  json_t *e;
  json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
    const char *ph = json_string_value(json_object_get(e, "ph"));
    x += !strcmp(ph, "X"), s += !strcmp(ph, "s"), f += !strcmp(ph, "f");
  }
  assert_i64(x, prof_trace_count(t));
  /* 7 GPU events in each of 3 forwards, each with its launch in the file; the
   * 2 kernels whose launch fell before the profiling window get no arrow. */
  assert_i64(s, 21);
  assert_i64(f, 21);
  json_decref(j);
  prof_trace_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(summaries_match),
      cmocka_unit_test(round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
