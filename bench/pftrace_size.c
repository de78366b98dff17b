/* How big and how fast each trace format is on a launch loop (issue 16: a
 * million launches in at most 150 MB of pftrace). Writes the synthetic loop
 * of tests/prof/synth_launches.c as JSON, .json.gz, .pftrace (zlib batches)
 * and .pftrace without compression; prints size, bytes per launch, write and
 * read-back CPU seconds, and checks each file reads back to the same event count.
 * usage: bench_pftrace_size [N_LAUNCHES (default 1000000)] [DIR (default .)] */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "prof/synth_launches.h"

/* CPU seconds of this process: on a shared machine wall time measures the
 * neighbours too. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int one(const prof_trace *t, int64_t n, const char *dir, const char *name, int plain) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  prof_write_opts o = prof_write_opts_default();
  o.pftrace_plain = plain;
  double t0 = now_s();
  attn_status st = prof_write_trace(t, path, &o);
  double w = now_s() - t0;
  if (st) return fprintf(stderr, "%s\n", attn_last_error()), 1;
  struct stat sb;
  stat(path, &sb);
  prof_trace *back = NULL;
  prof_read_stats rs;
  t0 = now_s();
  st = prof_read_chrome_trace(path, &back, &rs);
  double r = now_s() - t0;
  if (st) return fprintf(stderr, "%s\n", attn_last_error()), 1;
  int same = prof_trace_count(back) == prof_trace_count(t);
  printf("%-26s %10.1f MB %8.1f B/launch  write %6.2f s  read %6.2f s (CPU)  events %zu%s\n",
         plain ? "pftrace (no compression)" : name, sb.st_size / 1e6, (double)sb.st_size / n, w, r,
         prof_trace_count(back), same ? "" : "  (EVENT COUNT DIFFERS)");
  prof_trace_destroy(back);
  remove(path);
  return !same;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 1000000;
  const char *dir = argc > 2 ? argv[2] : ".";
  prof_trace *t = synth_launch_loop(n, 16);
  if (!t || n <= 0) return fprintf(stderr, "usage: bench_pftrace_size [N>0] [DIR]\n"), 2;
  printf("%lld launches: %zu events (launch calls, kernels, attn_fwd ranges), %lld flows\n",
         (long long)n, prof_trace_count(t), (long long)n);
  int bad = one(t, n, dir, "loop.json", 0) | one(t, n, dir, "loop.json.gz", 0) |
            one(t, n, dir, "loop.pftrace", 0) | one(t, n, dir, "loop.pftrace", 1);
  prof_trace_destroy(t);
  return bad;
}
