/* read_both PATH: reads a trace with the reader's fast tokenizer and with
 * yajl alone (the testing surface, attnprof/testing.h) and compares the
 * two: status, error line, counts and every event. Prints one line; exit 0
 * when they agree, 1 when they differ, 2 on bad usage. Used by
 * test_reader_faults.py. */
#include <stdio.h>
#include <string.h>

#include "attnprof/prof.h"
#include "attnprof/testing.h"

static int same_event(const prof_event *a, const prof_event *b) {
  return a->cat == b->cat && a->kind == b->kind && a->start_ns == b->start_ns &&
         a->dur_ns == b->dur_ns && a->pid == b->pid && a->tid == b->tid &&
         a->correlation == b->correlation && a->external_id == b->external_id &&
         a->bytes == b->bytes && a->device == b->device && a->stream == b->stream &&
         !strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: read_both TRACE\n"), 2;
  prof_trace *fast = NULL, *yajl = NULL;
  prof_read_stats fs, ys;
  char fast_err[1024];
  attn_status fst = prof_read_chrome_trace(argv[1], &fast, &fs);
  snprintf(fast_err, sizeof fast_err, "%s", fst ? attn_last_error() : "");
  attn_status yst = prof_testing_read_yajl(argv[1], &yajl, &ys);
  const char *yajl_err = yst ? attn_last_error() : "";
  const char *why = NULL;
  if (fst != yst) why = "status";
  else if (strcmp(fast_err, yajl_err)) why = "error line";
  else if (!fst && memcmp(&fs, &ys, sizeof fs)) why = "read stats";
  else if (!fst && (prof_trace_count(fast) != prof_trace_count(yajl) ||
                    prof_trace_device_count(fast) != prof_trace_device_count(yajl)))
    why = "event or device count";
  for (size_t i = 0; !fst && !why && i < prof_trace_count(fast); i++)
    if (!same_event(prof_trace_at(fast, i), prof_trace_at(yajl, i))) why = "an event";
  if (why)
    printf("differ (%s): tokenizer %s '%s', yajl %s '%s'\n", why, attn_status_string(fst), fast_err,
           attn_status_string(yst), yajl_err);
  else
    printf("same: %s, %zu events%s%s\n", attn_status_string(fst), fst ? 0 : prof_trace_count(fast),
           fst ? ": " : "", fast_err);
  prof_trace_destroy(fast);
  prof_trace_destroy(yajl);
  return why ? 1 : 0;
}
