/* attnprof profiler: trace files and the HTML report. Writers (Kineto JSON,
 * gzip, Perfetto protobuf) and the streaming reader, which reads what
 * torch.profiler and attnprof write. */
#ifndef ATTNPROF_PROF_IO_H
#define ATTNPROF_PROF_IO_H

#include <stdio.h>

#include "attnprof/prof/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- writers ----------------------------------------------------------- */

/* Chrome trace JSON in Kineto's schema. Written to path.tmp and renamed, so a
 * failed write leaves no partial file. */
PROF_API attn_status prof_write_chrome_trace(const prof_trace *t, const char *path);
/* Completes a streamed trace file whose writer never closed it (a traced
 * program that died): cuts it to safe_offset, the end of the last chunk
 * written whole (0: none), and closes the event list and the document,
 * recording `dropped` lost events. IO_ERROR naming the file and the reason. */
PROF_API attn_status prof_chrome_trace_repair(const char *path, int64_t safe_offset,
                                              int64_t dropped);
/* Checks that the trace can be written to path (the writer creates path.tmp
 * and renames it over path, so that is what is tried, then removed); an
 * existing file at path is never touched. ATTN_STATUS_IO_ERROR naming the path
 * and the reason otherwise. */
PROF_API attn_status prof_check_writable(const char *path);

/* Trace file formats: Kineto JSON, the same gzip-compressed (.json.gz, as
 * torch.profiler writes it), and Perfetto's protobuf (.pftrace: interned
 * names, zlib-compressed packet batches; about 15x smaller than the JSON). */
typedef enum {
  PROF_FORMAT_AUTO, /* by the path: .pftrace, .gz, else JSON */
  PROF_FORMAT_JSON,
  PROF_FORMAT_JSON_GZ,
  PROF_FORMAT_PFTRACE
} prof_trace_format;

PROF_API const char *prof_trace_format_name(prof_trace_format f); /* "json", "json.gz", "pftrace" */
/* The names above -> a format; INVALID_ARGUMENT for any other name. */
PROF_API attn_status prof_trace_format_from_name(const char *name, prof_trace_format *out);
PROF_API prof_trace_format prof_trace_format_for_path(const char *path);
/* How prof_write_trace writes. Start from prof_write_opts_default() (it sets
 * size). */
typedef struct {
  size_t size;              /* sizeof(prof_write_opts) */
  prof_trace_format format; /* PROF_FORMAT_AUTO: by the path's name */
  /* 1: a .pftrace without its zlib batches (about 9x larger; for looking at
   * the packets with other tools). */
  int pftrace_plain;
} prof_write_opts;

PROF_API prof_write_opts prof_write_opts_default(void);
/* The trace as opts say (NULL: the defaults); streamed to PATH.tmp and
 * renamed, as prof_write_chrome_trace. The Perfetto file holds the same
 * tracks, slices, args and launch flows as the JSON. */
PROF_API attn_status prof_write_trace(const prof_trace *t, const char *path,
                                      const prof_write_opts *opts);

/* ---- reading traces (src/prof/io/chrome_reader.c) ---------------------- */

/* Longest string kept from a trace file; longer ones are cut and counted. */
#define PROF_READ_NAME_MAX 65536
enum { PROF_READ_MAX_CATEGORIES = 8 };

/* What the reader kept, and every event it did not keep under one reason:
 * nothing is dropped silently. */
typedef struct {
  int64_t events;            /* kept: complete ("X") events of a modelled category */
  int64_t devices;           /* deviceProperties entries */
  int64_t metadata;          /* "M" rows (process names and labels) */
  int64_t flows;             /* "s"/"f" flow ends: launches are linked by correlation id */
  int64_t unknown_category;  /* skipped: a category attnprof does not model */
  int64_t unsupported_phase; /* skipped: B/E, instants, counters, async ... */
  int64_t missing_time;      /* skipped: no usable "ts" */
  int64_t not_an_event;      /* skipped: an element of traceEvents that is no object */
  int64_t bad_values;        /* fields of the wrong type or out of range, ignored */
  int64_t truncated_strings; /* strings longer than PROF_READ_NAME_MAX, cut */
  int64_t out_of_order;      /* events starting before the one before them (kept) */
  int n_categories;          /* unknown category names listed below */
  struct {
    char name[48];
    int64_t count;
  } categories[PROF_READ_MAX_CATEGORIES];
  char phases[16]; /* the unsupported phases seen, e.g. "iC" */
} prof_read_stats;

/* Reads a Chrome trace JSON as torch.profiler (Kineto) or attnprof writes it,
 * or a bare array of events; plain or gzip; or a Perfetto protobuf trace as
 * attnprof writes it (all told by content, not by name).
 * Streaming: memory holds the event model, never the document. Times become
 * ns exactly; the file's baseTimeNanoseconds becomes the epoch offset.
 * stats (may be NULL) says what was skipped. Returns OK and a new trace in
 * *out, or INVALID_ARGUMENT (not JSON, not a trace), IO_ERROR (cannot
 * read) or OUT_OF_MEMORY with one line in attn_last_error() saying what was
 * wrong and where. */
PROF_API attn_status prof_read_chrome_trace(const char *path, prof_trace **out,
                                            prof_read_stats *stats);
PROF_API attn_status prof_read_chrome_trace_buffer(const void *data, size_t len, prof_trace **out,
                                                   prof_read_stats *stats);
/* One line per reason something was skipped or cut, each starting with prefix. */
PROF_API void prof_read_stats_print(FILE *f, const char *prefix, const prof_read_stats *s);

/* ---- HTML report ------------------------------------------------------- */

/* One trace of an HTML report and the label the page gives it. */
typedef struct {
  const char *label;
  const prof_trace *t;
} prof_report_input;

/* One self-contained HTML page (inline SVG and CSS, nothing loaded, no
 * script that runs): bar charts comparing the traces, and per trace a
 * timeline of one forward (CPU and GPU lanes), the per-range, kernel and key
 * average tables. range: the range the charts and timelines show (NULL or
 * absent from a trace: attn_fwd, else its earliest range). Every string from
 * a trace is escaped. Written to path.tmp and renamed. */
PROF_API attn_status prof_write_html_report(const char *path, const prof_report_input *in, size_t n,
                                            const char *range);
PROF_API attn_status prof_write_html_report_file(FILE *f, const prof_report_input *in, size_t n,
                                                 const char *range);

#ifdef __cplusplus
}
#endif
#endif
