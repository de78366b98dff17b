/* The Kineto JSON writers against a reference: a set of events with edge
 * values (time 0 and huge times, negative durations, doubles that need 17
 * digits, -0, NaN, infinities, subnormals, integers past 2^53, names with
 * quotes, control characters, "</", valid and invalid UTF-8, footprints that
 * repeat on devices whose properties change between chunks) is written
 * streamed (chrome_stream.c, a chunk per few events) and whole
 * (chrome_write_to), and streamed one event per chunk with GPU activities
 * before their calls (held events, flows across chunks), and each file must equal the one the writer made before
 * its per-event rewrite (fixtures/writer_golden_*.json, made by this program
 * with --write DIR on the sources of commit 6cabf8d), byte for byte and as parsed values.
 * The doubles must also read back exactly as the events hold them. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "prof/io/chrome.h"
#include "prof/io/chrome_stream.h"
#include "prof/prof_test.h"

static const char *const names[] = {
    "plain_kernel",
    "quote \" backslash \\ slash / tab \t newline \n cr \r bs \b ff \f",
    "ctl \x01\x02\x1f del \x7f end",
    "</script><script>alert(1)</script> a<b a</ <",
    "utf8 \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9d\x84\x9e ok",
    "bad \xff \xc0\xaf \xed\xa0\x80 \xe6\x97 \xf4\x90\x80\x80 \x80 end",
    "trunc \xe6",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    "",
};
enum { N_NAMES = sizeof names / sizeof names[0] };

static const double doubles[] = {0.0,
                                 -0.0,
                                 1.0,
                                 50.0,
                                 -7.0,
                                 0.1,
                                 1.0 / 3.0,
                                 2617.8517,
                                 12054600.0,
                                 1e15,
                                 123456789012345678.0,
                                 9007199254740993.0,
                                 1e300,
                                 -1e-300,
                                 5e-324,
                                 2.2250738585072014e-308,
                                 1.7976931348623157e308,
                                 0.007575757575757576,
                                 99.99999999999999,
                                 1e21,
                                 1e-7,
                                 NAN,
                                 INFINITY,
                                 -INFINITY};
enum { N_DOUBLES = sizeof doubles / sizeof doubles[0] };

static prof_device device(int id, int sms) {
  prof_device d = {.id = id,
                   .compute_major = 9,
                   .num_sms = sms,
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
  snprintf(d.name, sizeof d.name, "NVIDIA H200 \"%d\"", id);
  return d;
}

static prof_footprint footprint(int k) {
  prof_footprint fp = {.grid = {1 + 131 * k, 1 + k % 3, 1},
                       .block = {32 << (k % 6), 1, 1 + k % 2},
                       .registers_per_thread = 16 + 40 * (k % 7),
                       .static_shared_memory = k % 2 ? 4096 : 0,
                       .dynamic_shared_memory = k % 4 == 3 ? 98304 : 0,
                       .occupancy_pct_in_file = k % 5 == 4 ? doubles[k % N_DOUBLES] : -1};
  if (k % 4 == 3) fp.shared_memory_limit_optin = 1, fp.shared_memory_executed = 233472;
  if (k % 6 == 5)
    fp.cluster[0] = 2, fp.cluster[1] = 1, fp.cluster[2] = 1, fp.max_active_clusters = 66;
  if (k % 8 == 7) fp.graph_id = 4000000000u;
  return fp;
}

/* Launch i: its API call, its GPU activity (kernel, memcpy, memset or sync)
 * on device i % 3 (2 is unknown to the trace), and a CPU op and a range
 * every few launches. Times: 0 from the base at i = 0, huge at the end. */
static void add_launch(prof_trace *t, int i, int n) {
  int64_t start = i == n - 1 ? INT64_C(4000000000000000000) : INT64_C(1000) * i * i;
  prof_event l = prof_event_init(i % 2 ? PROF_CAT_CUDA_DRIVER : PROF_CAT_CUDA_RUNTIME,
                                 i % 5 ? "cudaLaunchKernel" : names[i % N_NAMES]);
  l.pid = 4242, l.tid = i % 3 ? 11 : INT64_MAX, l.start_ns = start, l.dur_ns = i % 7 ? 2711 : -5;
  l.correlation = i + 1, l.cbid = i % 4 ? 211 : -1, l.external_id = i % 3 ? 0 : INT64_MIN + i;
  prof_trace_append(t, &l, NULL);
  static const prof_cat gpu[] = {PROF_CAT_KERNEL, PROF_CAT_GPU_MEMCPY, PROF_CAT_KERNEL,
                                 PROF_CAT_GPU_MEMSET, PROF_CAT_CUDA_SYNC};
  prof_event g = prof_event_init(gpu[i % 5], names[(i * 7) % N_NAMES]);
  g.pid = i % 3, g.tid = 7, g.device = i % 3, g.stream = i % 9 ? 7 : -1;
  g.start_ns = start + 5003, g.dur_ns = i % 11 ? 1984 + i : 0, g.correlation = i + 1;
  g.bytes = i % 2 ? INT64_MAX / (i + 1) : 3 * i;
  g.fp = footprint(i % 10 < 6 ? 0 : i);
  prof_trace_append(t, &g, NULL);
  if (i % 3 == 0) {
    prof_event c = prof_event_init(PROF_CAT_CPU_OP, names[(i + 3) % N_NAMES]);
    c.kind = (prof_kind)(i % PROF_KIND_COUNT);
    c.pid = 4242, c.tid = 11, c.start_ns = start, c.dur_ns = 100;
    c.flops = doubles[(i / 3) % N_DOUBLES], c.bytes = i;
    prof_trace_append(t, &c, NULL);
  }
  if (i % 4 == 1) {
    prof_event r = prof_event_init(PROF_CAT_USER_ANNOTATION, names[(i + 5) % N_NAMES]);
    r.pid = 4242, r.tid = 11, r.start_ns = start, r.dur_ns = 9000;
    r.roof = (prof_roof){1.0 + i / 7.0, doubles[(i + 2) % N_DOUBLES], doubles[(i + 3) % N_DOUBLES]};
    r.flops = doubles[(i + 4) % N_DOUBLES], r.bytes = i * 1000003;
    prof_trace_append(t, &r, NULL);
  }
}

enum { N_LAUNCHES = 96, PER_CHUNK = 5 };

/* The chunk the stream gets for launches [i, i + PER_CHUNK): device 0's SM
 * count changes halfway, so a footprint seen before is seen on new figures. */
static prof_trace *chunk_at(int i) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  prof_device d0 = device(0, i < N_LAUNCHES / 2 ? 132 : 7), d1 = device(1, 1);
  prof_trace_add_device(t, &d0);
  prof_trace_add_device(t, &d1);
  for (int j = i; j < i + PER_CHUNK && j < N_LAUNCHES; j++) add_launch(t, j, N_LAUNCHES);
  return t;
}

static chrome_stream *open_stream(const char *path) {
  char why[256];
  chrome_stream *s = chrome_stream_open(path, INT64_C(1700000000000000000),
                                        INT64_C(1700000000000000000), why, sizeof why);
  if (!s) fprintf(stderr, "%s\n", why);
  return s;
}

static int write_stream(const char *path) {
  chrome_stream *s = open_stream(path);
  if (!s) return 1;
  int err = 0;
  for (int i = 0; i < N_LAUNCHES; i += PER_CHUNK) err |= chrome_stream_chunk(s, chunk_at(i));
  return err | chrome_stream_close(s, 3, 4242, "golden \"proc\"");
}

/* One event per chunk, each group of 4 launches' GPU activities before their
 * calls (as CUPTI's buffers come before the drained callback records): every
 * flow joins across chunks, through the events the stream holds back. */
static int write_stream_split(const char *path) {
  chrome_stream *s = open_stream(path);
  if (!s) return 1;
  int err = 0;
  for (int g = 0; g < N_LAUNCHES; g += 4) {
    prof_trace *group = NULL;
    prof_trace_create(&group);
    for (int i = g; i < g + 4 && i < N_LAUNCHES; i++) add_launch(group, i, N_LAUNCHES);
    for (int gpu_first = 1; gpu_first >= 0; gpu_first--)
      for (size_t i = 0; i < prof_trace_count(group); i++) {
        const prof_event *e = prof_trace_at(group, i);
        if ((e->device >= 0) != gpu_first) continue;
        prof_trace *chunk = chunk_at(N_LAUNCHES); /* its devices only */
        prof_device d0 = device(0, g < N_LAUNCHES / 2 ? 132 : 7);
        prof_trace_add_device(chunk, &d0);
        prof_trace_append(chunk, e, NULL);
        err |= chrome_stream_chunk(s, chunk);
      }
    prof_trace_destroy(group);
  }
  return err | chrome_stream_close(s, 0, 4242, "split");
}

static int write_whole(const char *path) {
  prof_trace *t = chunk_at(0);
  for (int i = PER_CHUNK; i < N_LAUNCHES; i++) add_launch(t, i, N_LAUNCHES);
  prof_trace_set_process(t, 4242, "golden \xe6\x97\xa5");
  prof_trace_set_epoch_offset(t, INT64_C(1700000000000000123));
  FILE *f = fopen(path, "w");
  int err = f ? chrome_write_to(t, f, "golden/whole.json") : 1;
  if (f && fclose(f)) err = 1;
  prof_trace_destroy(t);
  return err;
}

/* Every double of the set that a CPU op carries as flops reads back exactly
 * (NaN and infinities as null). */
static void flops_read_back(json_t *doc) {
  size_t i;
  json_t *e;
  int seen = 0;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *cat = json_string_value(json_object_get(e, "cat"));
    if (!cat || strcmp(cat, "cpu_op")) continue;
    json_t *flops = json_object_get(json_object_get(e, "args"), "flops");
    int launch = (int)json_integer_value(json_object_get(json_object_get(e, "args"), "bytes"));
    double want = doubles[(launch / 3) % N_DOUBLES];
    if (!isfinite(want)) {
      assert_true(json_is_null(flops));
    } else {
      /* "-0" reads as the integer 0: an integer token compares by value. */
      double got = json_number_value(flops);
      if (json_is_integer(flops) ? got != want : memcmp(&got, &want, sizeof got) != 0)
        fail_msg("flops %.17g read back as %.17g", want, got);
    }
    seen++;
  }
  assert_int_equal(seen, (N_LAUNCHES + 2) / 3);
}

static void same_as_golden(int (*write)(const char *), const char *golden) {
  char path[] = "/tmp/attnprof_golden_XXXXXX";
  close(mkstemp(path));
  assert_int_equal(write(path), 0);
  char ref[4096];
  snprintf(ref, sizeof ref, "%s/%s", ATTNPROF_PROF_FIXTURES, golden);
  json_error_t err;
  json_t *a = json_load_file(path, JSON_ALLOW_NUL, &err),
         *b = json_load_file(ref, JSON_ALLOW_NUL, &err);
  if (!a || !b) fail_msg("%s does not parse: %s (line %d)", a ? ref : path, err.text, err.line);
  assert_true(json_equal(a, b)); /* the same values */
  flops_read_back(a);
  json_decref(a);
  json_decref(b);
  char *ta = slurp(path), *tb = slurp(ref);
  if (!ta || !tb) fail_msg("cannot read %s", ta ? ref : path);
  size_t na = strlen(ta), nb = strlen(tb);
  size_t at = 0;
  while (at < na && at < nb && ta[at] == tb[at]) at++;
  if (na != nb || at != na)
    fail_msg("%s differs from %s at byte %zu: \"%.60s\" against \"%.60s\"", path, ref, at, ta + at,
             tb + at);
  free(ta);
  free(tb);
  unlink(path);
}

static void stream_as_golden(void **state) {
  (void)state;
  same_as_golden(write_stream, "writer_golden_stream.json");
}

static void split_stream_as_golden(void **state) {
  (void)state;
  same_as_golden(write_stream_split, "writer_golden_split.json");
}

static void whole_as_golden(void **state) {
  (void)state;
  same_as_golden(write_whole, "writer_golden_whole.json");
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write")) { /* how the references were made */
    char p[4096];
    snprintf(p, sizeof p, "%s/writer_golden_stream.json", argv[2]);
    int err = write_stream(p);
    snprintf(p, sizeof p, "%s/writer_golden_split.json", argv[2]);
    err |= write_stream_split(p);
    snprintf(p, sizeof p, "%s/writer_golden_whole.json", argv[2]);
    return err | write_whole(p);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stream_as_golden),
      cmocka_unit_test(split_stream_as_golden),
      cmocka_unit_test(whole_as_golden),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
