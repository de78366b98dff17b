/* attnprof trace: the command (cmd_trace.c: options, running the program)
 * and what happens after the program ends (trace_finish.c: the report of the
 * injected collector, repair, export, summary). */
#ifndef ATTNPROF_CLI_CMD_TRACE_H
#define ATTNPROF_CLI_CMD_TRACE_H

#include "cli/cli.h"

/* attnprof trace [options] -- CMD ARGS... */
int cmd_trace(int argc, char **argv);

typedef struct {
  const char *out, *range;
  const char *defer_mb; /* --defer MB: ATTNPROF_CUPTI_DEFER for the program; NULL: stream */
  int json, all_api, stream_only, out_given;
  prof_trace_format format; /* of the final trace; AUTO: by --out's name */
  char **argv;              /* the program and its arguments */
} trace_opts;

typedef struct {
  char *inject;  /* libattnprof_inject.so */
  char *partial; /* the streamed trace, OUT.partial */
  char *report;  /* the collector's report, OUT.report */
  char *spawn;   /* attnprof_spawn (trace_spawn.c), NULL when not found */
} trace_paths;

typedef struct {
  int status;        /* wait status */
  long peak_rss_kib; /* the program's peak resident memory, -1 unknown */
} trace_outcome;

/* Finds the injection library (ATTNPROF_INJECT_LIB, else ../lib beside this
 * executable) and attnprof_spawn (beside it, or ../libexec/attnprof) and
 * names the side files. CLI_OK or CLI_USAGE after a line. */
int trace_paths_make(const trace_opts *o, trace_paths *p);
void trace_paths_free(trace_paths *p);
/* Everything after the program: CLI_OK, or CLI_FAILED when no trace could be
 * written. */
int trace_finish(const trace_opts *o, const trace_paths *p, const trace_outcome *r);
/* One child process's streamed trace (p->partial, p->report) made whole and
 * written to o->out, with one line instead of the summary: how it ended
 * (exit status, signal, or no close) and how many events its trace keeps. */
int trace_finish_child(const trace_opts *o, const trace_paths *p, long long pid);
/* The traces of the processes the program started (OUT.partial.<pid>, see
 * inject.c), each finished into OUT with ".<pid>" before ".json"; returns how
 * many, in pid order. */
int trace_children(const trace_opts *o, const trace_paths *p);
/* Removes children's files an earlier run left (before the program starts). */
void trace_children_clean(const trace_paths *p);

#endif
