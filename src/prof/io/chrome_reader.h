/* Internals of the Chrome/Kineto trace reader, shared by its files:
 * chrome_reader.c (entry points: file or buffer, plain or gzip, into yajl;
 * errors), chrome_sax.c (the yajl callbacks: the document's shape and which
 * value goes where), chrome_fields.c (one parsed event -> prof_event, one
 * deviceProperties entry -> prof_device, the warnings).
 *
 * Why yajl: a 200 MB trace parsed into a jansson tree costs several times
 * its size in memory before the first event is kept; yajl's callbacks see
 * one token at a time, so the reader holds one event's fields and the trace
 * model, never the document. */
#ifndef ATTNPROF_SRC_PROF_CHROME_READER_H
#define ATTNPROF_SRC_PROF_CHROME_READER_H

#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_parse.h>

#include "attnprof/prof.h"

/* Events, timestamps and durations beyond these are not times a profiler
 * wrote; clamping keeps start + dur and base + start inside int64 for every
 * analysis (2^60 ns is 36 years). */
#define RD_TIME_LIMIT_NS ((int64_t)1 << 60)
#define RD_BASE_LIMIT_NS ((int64_t)1 << 61)
/* And the durations of all kept events together stay below this, so any sum
 * of durations an analysis forms (device time of a range, self time, ...)
 * fits an int64 too; a duration past it is counted as a bad value. */
#define RD_DUR_TOTAL_LIMIT_NS ((int64_t)1 << 62)

/* A string field, kept up to a bound (PROF_READ_NAME_MAX); longer text is cut. */
typedef struct {
  char *s;
  size_t len, cap;
  int truncated;
} rd_str;

/* Which fields an event object carried (bits of rd_event.has). */
enum {
  RD_HAS_PID = 1 << 0,
  RD_HAS_TID = 1 << 1,
  RD_HAS_TS = 1 << 2,
  RD_HAS_DUR = 1 << 3,
  RD_HAS_DEVICE = 1 << 4,
  RD_HAS_STREAM = 1 << 5,
  RD_HAS_OCCUPANCY = 1 << 6,
  RD_HAS_STATIC_SMEM = 1 << 7,
  RD_HAS_DYNAMIC_SMEM = 1 << 8,
  RD_HAS_SMEM = 1 << 9,
  RD_HAS_CBID = 1 << 10,
};

/* The fields of one traceEvents element, in any order, before it becomes a
 * prof_event (its category decides which args mean what). */
typedef struct {
  unsigned has;
  rd_str ph, cat, name, op_kind, meta_name, labels;
  int64_t pid, tid, ts_ns, dur_ns;
  int64_t external_id, correlation, device, stream, cbid, bytes;
  int64_t registers, smem, static_smem, dynamic_smem;
  int64_t smem_executed, smem_optin, max_active_clusters; /* attnprof's CUPTI extras */
  int64_t graph_id;
  int64_t grid[3], block[3], cluster[3];
  double occupancy, flops;
  double roof_time_us, roof_copy_gbps, roof_peak_tflops;
} rd_event;

/* One deviceProperties entry as read. */
typedef struct {
  prof_device d;
  int has_id;
} rd_device;

/* A process named by a "process_name" metadata row. */
enum { RD_MAX_PROCS = 64 };
typedef struct {
  int64_t pid;
  const char *name; /* interned */
  int is_cpu;       /* its "process_labels" said CPU */
} rd_proc;

/* Non-numeric pid/tid strings seen, each given its own id (the first
 * RD_ID_TEXT bytes and the length tell them apart; past RD_MAX_IDS they share
 * one). Kineto writes a handful: "Spans", "Traces", "". */
enum { RD_MAX_IDS = 64, RD_ID_TEXT = 32 };
typedef struct {
  size_t len;
  char text[RD_ID_TEXT];
} rd_id;

/* The reader's state, shared by the callbacks and the field mapping. */
typedef struct {
  prof_trace *t;
  prof_read_stats *stats;
  rd_event ev;
  rd_device dev;
  int64_t base_ns, last_ts_ns, dur_total_ns;
  int has_base, has_last_ts;
  rd_proc procs[RD_MAX_PROCS];
  int n_procs;
  rd_id ids[RD_MAX_IDS];
  int n_ids;
  int64_t first_host_pid;
  int has_host_pid;
  int oom; /* out of memory: parsing stops */
} rd_model;

void rd_str_set(rd_str *s, const unsigned char *text, size_t len, prof_read_stats *st);
void rd_str_free(rd_str *s);
/* Resets an event's fields, keeping the string buffers. */
void rd_event_reset(rd_event *e);

/* JSON number text -> value; 0, or -1 when it is not a number in range. */
int rd_parse_us_to_ns(const char *text, size_t len, int64_t limit, int64_t *ns);
int rd_parse_int(const char *text, size_t len, int64_t lo, int64_t hi, int64_t *out);
int rd_parse_double(const char *text, size_t len, double *out);
/* A pid or tid given as a string: its number when it is one, else a stable
 * negative id per distinct text (Kineto writes "Spans", "Traces", ""). */
int64_t rd_string_id(rd_model *m, const char *text, size_t len);

/* The parsed event m->ev -> kept, counted or skipped. -1 on out of memory. */
int rd_finish_event(rd_model *m);
/* The parsed deviceProperties entry m->dev -> prof_trace_add_device. */
void rd_finish_device(rd_model *m);
/* After the last token: process name, epoch offset. */
void rd_finish_trace(rd_model *m);

/* An arg of another format's event (a Perfetto debug annotation), given as
 * its JSON text (a number, or a string's bytes), into m->ev by the JSON
 * args' table and bounds; dim: element index of a [x, y, z] arg. */
void rd_take_arg_number(rd_model *m, const char *key, const char *text, size_t len);
/* Whether an args key is one the reader takes (the rest are skipped). */
int rd_arg_is_read(const char *key);
void rd_take_arg_string(rd_model *m, const char *key, const char *s, size_t len);
void rd_take_arg_dim(rd_model *m, const char *key, int index, const char *text, size_t len);

/* A small JSON document (a Perfetto file's header: deviceProperties,
 * baseTimeNanoseconds) read into m as the top of a Kineto file would be. */
int prof_read_chrome_trace_header(rd_model *m, const char *json, size_t len, const char *what);

/* Feeds the document to yajl. Returns an attn_status: 0, or the failure with
 * attn_last_error() set ("what and where"). `pull` gives the next bytes
 * (*got 0 at the end) and returns an attn_status the same way. */
typedef int (*rd_pull_fn)(void *src, unsigned char *buf, size_t cap, size_t *got);
/* The fast tokenizer first (chrome_scan.c); RD_SCAN_FALLBACK when it stopped
 * short (bad or odd input): the caller starts again, from a fresh model and
 * the source's first byte, with rd_parse_yajl, which has the last word. */
enum { RD_SCAN_FALLBACK = 1000 };
int rd_parse(rd_model *m, rd_pull_fn pull, void *src, const char *what);
int rd_parse_yajl(rd_model *m, rd_pull_fn pull, void *src, const char *what);
/* Drives the callbacks (yajl's struct, ctx theirs) over the source: 0, a
 * pull's attn_status, or RD_SCAN_FALLBACK. */
int rd_scan(rd_pull_fn pull, void *src, const yajl_callbacks *cb, void *ctx);

/* The testing surface's readers (declared for tests in attnprof/testing.h):
 * yajl alone, the fast tokenizer skipped. */
attn_status prof_testing_read_yajl(const char *path, prof_trace **out, prof_read_stats *stats);
attn_status prof_testing_read_buffer_yajl(const void *data, size_t len, prof_trace **out,
                                          prof_read_stats *stats);

#endif
