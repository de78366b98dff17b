/* GPU test (label "gpu"): `attnprof trace -- planted_prog MODE` from the
 * outside, as a user runs it, for each way a program can end: normally,
 * killed by SIGSEGV, exit() from a second thread, never using CUDA. The
 * trace file must be whole JSON holding the planted work (3 calls of the
 * NVTX range planted_fwd, 4 kernels + 2 memcpy + 1 memset each), and its
 * summary (attnprof summary --json) must count it per range; the same run
 * written as a Perfetto protobuf (--out X.pftrace) summarizes to the same
 * counts. Exits 77 without a GPU. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "planted.h"

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: %s: failed: %s\n", __FILE__, __LINE__, mode, #cond); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

/* Runs attnprof with args, its stdout into stdout_path (NULL: ours); returns
 * the wait status. */
static int run_cli(char *const args[], const char *stdout_path) {
  pid_t pid = fork();
  if (pid == 0) {
    if (stdout_path) dup2(open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
    execv(ATTNPROF_CLI, args);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

/* attnprof trace --out out -- planted_prog mode. The program's own output
 * shares stdout, so the JSON summary is asked of `attnprof summary` after. */
static int run_trace(const char *mode, const char *out, const char *summary) {
  char *trace[] = {ATTNPROF_CLI, "trace",      "--out",      (char *)out,
                   "--",         PLANTED_PROG, (char *)mode, NULL};
  int status = run_cli(trace, NULL);
  char *sum[] = {ATTNPROF_CLI, "summary", (char *)out, "--range", "planted_fwd", "--json", NULL};
  run_cli(sum, summary);
  return status;
}

static int count(json_t *doc, const char *cat, const char *name_part) {
  int n = 0;
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(doc, "traceEvents"), i, e) {
    const char *c = json_string_value(json_object_get(e, "cat"));
    const char *nm = json_string_value(json_object_get(e, "name"));
    n += c && !strcmp(c, cat) && (!name_part || (nm && strstr(nm, name_part)));
  }
  return n;
}

static double per_call(json_t *summary, const char *range, const char *key, const char *api) {
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(summary, "ranges"), i, r) {
    if (strcmp(json_string_value(json_object_get(r, "name")), range)) continue;
    json_t *pc = json_object_get(r, "per_call");
    json_t *v =
        api ? json_object_get(json_object_get(pc, "launch_api"), api) : json_object_get(pc, key);
    return json_is_number(v) ? json_number_value(v) : -1;
  }
  return -1;
}

static int check_mode(const char *mode, int want_status, int want_kernels) {
  char out[256], summary[256];
  snprintf(out, sizeof out, "%s/trace_%s.json", TEST_DIR, mode);
  snprintf(summary, sizeof summary, "%s/trace_%s.summary.json", TEST_DIR, mode);
  int status = run_trace(mode, out, summary);
  printf("%s: attnprof trace exit status %d\n", mode, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == want_status);
  json_error_t err;
  json_t *doc = json_load_file(out, 0, &err);
  CHECK(doc != NULL);
  int kernels = count(doc, "kernel", "planted_");
  printf("%s: %d planted kernels, %d memcpy, %d memset, %d ranges in the trace\n", mode, kernels,
         count(doc, "gpu_memcpy", NULL), count(doc, "gpu_memset", NULL),
         count(doc, "user_annotation", "planted_fwd"));
  CHECK(kernels == want_kernels);
  if (want_kernels) {
    CHECK(count(doc, "gpu_memcpy", NULL) == 6 && count(doc, "gpu_memset", NULL) == 3);
    CHECK(count(doc, "user_annotation", "planted_fwd") == 3);
    CHECK(count(doc, "gpu_user_annotation", "planted_fwd") >= 3);
    CHECK(count(doc, "ac2g", NULL) >= 2 * 3 * 7);
  }
  json_decref(doc);
  if (!want_kernels || strcmp(mode, "normal")) return 0;
  json_t *s = json_load_file(summary, 0, &err);
  CHECK(s != NULL);
  CHECK(per_call(s, "planted_fwd", "kernel", NULL) == PLANTED_KERNELS);
  CHECK(per_call(s, "planted_fwd", "memcpy", NULL) == 2);
  CHECK(per_call(s, "planted_fwd", "memset", NULL) == 1);
  CHECK(per_call(s, "planted_fwd", NULL, "cuLaunchKernelEx") == 1);
  CHECK(per_call(s, "planted_fwd", NULL, "cudaLaunchKernel") == 3);
  json_decref(s);
  return 0;
}

/* The normal run again, written as .pftrace: its summary counts the same. */
static int check_pftrace(void) {
  const char *mode = "pftrace";
  char out[256], summary[256];
  snprintf(out, sizeof out, "%s/trace_normal.pftrace", TEST_DIR);
  snprintf(summary, sizeof summary, "%s/trace_normal.pftrace.summary.json", TEST_DIR);
  int status = run_trace("normal", out, summary);
  printf("%s: attnprof trace exit status %d\n", mode, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  FILE *f = fopen(out, "rb");
  CHECK(f != NULL);
  int first = fgetc(f);
  fclose(f);
  CHECK(first == 0x0a); /* Trace.packet: a protobuf file, not JSON */
  json_error_t err;
  json_t *s = json_load_file(summary, 0, &err);
  CHECK(s != NULL);
  printf("%s: %g kernels, %g memcpy, %g memset per planted_fwd\n", mode,
         per_call(s, "planted_fwd", "kernel", NULL), per_call(s, "planted_fwd", "memcpy", NULL),
         per_call(s, "planted_fwd", "memset", NULL));
  CHECK(per_call(s, "planted_fwd", "kernel", NULL) == PLANTED_KERNELS);
  CHECK(per_call(s, "planted_fwd", "memcpy", NULL) == 2);
  CHECK(per_call(s, "planted_fwd", "memset", NULL) == 1);
  CHECK(per_call(s, "planted_fwd", NULL, "cudaLaunchKernel") == 3);
  json_decref(s);
  return 0;
}

int main(void) {
  if (planted_device_count() < 1) {
    printf("SKIP: no CUDA device visible to the runtime\n");
    return 77;
  }
  int failed = check_mode("normal", 0, 3 * PLANTED_KERNELS);
  failed += check_mode("crash", 128 + 11, 3 * PLANTED_KERNELS);
  failed += check_mode("thread", 3, 3 * PLANTED_KERNELS);
  failed += check_mode("nocuda", 0, 0);
  failed += check_pftrace();
  printf("%s\n", failed ? "FAILED" : "ok");
  return failed ? 1 : 0;
}
