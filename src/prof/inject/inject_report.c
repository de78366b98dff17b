/* The injected collector's report file (see inject_report.h). Each update
 * rewrites a small file with open/write/rename, calls that are safe even
 * from the fatal-signal path. */
#include "inject_report.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[4096], tmp[4100];
static char error_line[600];
static int64_t safe_offset, events, dropped;
static int exit_status = -1;

void inject_report_open(const char *p) {
  if (!p || !*p || strlen(p) >= sizeof path) return;
  snprintf(path, sizeof path, "%s", p);
  snprintf(tmp, sizeof tmp, "%s.tmp", p);
}

static void write_report(const char *final_part) {
  if (!path[0]) return;
  char buf[2048];
  int n = snprintf(buf, sizeof buf, "pid=%lld\nsafe_offset=%lld\nevents=%lld\ndropped=%lld\n%s%s",
                   (long long)getpid(), (long long)safe_offset, (long long)events,
                   (long long)dropped, error_line, final_part ? final_part : "closed=0\n");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  int ok = n > 0 && write(fd, buf, (size_t)(n < (int)sizeof buf ? n : (int)sizeof buf - 1)) > 0;
  close(fd);
  if (ok) rename(tmp, path);
}

void inject_report_progress(int64_t off, int64_t ev, int64_t drop) {
  safe_offset = off, events = ev, dropped = drop;
  write_report(NULL);
}

void inject_report_error(const char *what, const char *why) {
  snprintf(error_line, sizeof error_line, "error=%s: %s\n", what, why ? why : "");
  for (char *c = error_line + 6; *c && c[1]; c++)
    if (*c == '\n') *c = ' '; /* one line */
  write_report(NULL);
}

/* The process's peak resident memory (VmHWM), in KiB; 0 if unknown. Unlike
 * the parent's rusage it starts at exec, so it is the program's alone. */
static long long peak_rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long long kib = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) kib = atoll(line + 6);
  if (f) fclose(f);
  return kib;
}

/* torchrun's RANK of this process, -1 when unset or not a number. */
static long long env_rank(void) {
  const char *v = getenv("RANK");
  char *end;
  long long r = v && *v ? strtoll(v, &end, 10) : -1;
  return v && *v && !*end && r >= 0 ? r : -1;
}

void inject_report_exit_status(int status) { exit_status = status; }

void inject_report_final(const cupti_stats *st, int write_error, int signal, double write_s) {
  char buf[1100];
  snprintf(buf, sizeof buf,
           "peak_rss_kib=%lld\nwrite_ms=%lld\n"
           "closed=%d\nsignal=%d\nrecords=%lld\nbuffers=%lld\nbuffers_allocated=%lld\n"
           "buffer_bytes=%lld\ncupti_dropped=%lld\nbuffers_refused=%lld\nincomplete=%lld\n"
           "open_ranges=%lld\nunmatched_range_ends=%lld\ncupti_version=%u\napi_all=%d\n"
           "exit_status=%d\nrank=%lld\n",
           peak_rss_kib(), (long long)(write_s * 1e3), write_error ? 0 : 1, signal,
           (long long)st->records, (long long)st->buffers, (long long)st->buffers_allocated,
           (long long)st->buffer_bytes, (long long)st->dropped_by_cupti,
           (long long)st->buffers_refused, (long long)st->incomplete, (long long)st->open_ranges,
           (long long)st->unmatched_range_ends, st->cupti_version, st->api_all, exit_status,
           env_rank());
  write_report(buf);
}
