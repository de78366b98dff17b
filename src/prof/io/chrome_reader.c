/* Reading a Chrome/Kineto trace: the entry points (a file or a buffer) and
 * the byte source under the parser. A source is plain or gzip; which one is
 * decided by the first two bytes (gzip's magic), not by the file name, so a
 * renamed .json.gz still reads. Bytes go to the tokenizer (chrome_scan.c;
 * yajl when it stops short) in pieces: memory never holds the document. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "prof/io/chrome_reader.h"
#include "prof/io/pftrace.h"

enum { CHUNK = 256 * 1024 };

typedef struct {
  FILE *f;                  /* a file, or */
  const unsigned char *mem; /* a buffer */
  size_t mem_len, mem_pos;
  const char *what; /* for messages: the path or "buffer" */
  int gz, gz_done;  /* gzip: inflating; the last member ended */
  z_stream z;
  unsigned char *in;      /* compressed bytes (gzip only) */
  unsigned char head[16]; /* the first bytes, read to sniff gzip or Perfetto */
  size_t n_head, head_pos;
} rd_source;

/* The source functions return an attn_status: 0, or the failure with
 * attn_last_error() set. */

/* Raw bytes of the source, before any inflating. */
static int raw_read(rd_source *s, unsigned char *buf, size_t cap, size_t *got) {
  size_t n = 0;
  while (s->head_pos < s->n_head && n < cap) buf[n++] = s->head[s->head_pos++];
  if (s->f) {
    n += fread(buf + n, 1, cap - n, s->f);
    if (ferror(s->f))
      return attn_fail(ATTN_STATUS_IO_ERROR, "%s: cannot read: %s", s->what, strerror(errno));
  } else {
    size_t k = s->mem_len - s->mem_pos < cap - n ? s->mem_len - s->mem_pos : cap - n;
    memcpy(buf + n, s->mem + s->mem_pos, k);
    s->mem_pos += k;
    n += k;
  }
  *got = n;
  return 0;
}

/* Inflated bytes. A gzip file may hold several members one after another
 * (as `cat a.gz b.gz` makes); each is inflated in turn. */
static int gz_read(rd_source *s, unsigned char *buf, size_t cap, size_t *got) {
  s->z.next_out = buf;
  s->z.avail_out = (uInt)cap;
  while (s->z.avail_out == cap && !s->gz_done) {
    if (s->z.avail_in == 0) {
      size_t n;
      int st = raw_read(s, s->in, CHUNK, &n);
      if (st) return st;
      if (n == 0)
        return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s: truncated gzip data", s->what);
      s->z.next_in = s->in;
      s->z.avail_in = (uInt)n;
    }
    int rc = inflate(&s->z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      size_t n = 0;
      int st = s->z.avail_in == 0 ? raw_read(s, s->in, CHUNK, &n) : 0;
      if (st) return st;
      if (n) s->z.next_in = s->in, s->z.avail_in = (uInt)n;
      if (s->z.avail_in == 0) s->gz_done = 1;
      else inflateReset(&s->z);
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s: bad gzip data: %s", s->what,
                       s->z.msg ? s->z.msg : "corrupt stream");
    }
  }
  *got = cap - s->z.avail_out;
  return 0;
}

static int source_pull(void *src, unsigned char *buf, size_t cap, size_t *got) {
  rd_source *s = src;
  return s->gz ? gz_read(s, buf, cap, got) : raw_read(s, buf, cap, got);
}

/* Sniffs gzip's magic and sets up inflating. */
static int source_open(rd_source *s) {
  size_t n = s->n_head;
  if (!n) {
    int st = raw_read(s, s->head, 2, &n);
    if (st) return st;
    s->n_head = n;
  }
  if (n == 0)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s: empty file, not a trace", s->what);
  if (n < 2 || s->head[0] != 0x1f || s->head[1] != 0x8b) return 0;
  s->gz = 1;
  s->in = malloc(CHUNK);
  if (!s->in || inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) { /* 16: gzip wrapper */
    s->gz = 0;
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no memory to inflate", s->what);
  }
  return 0;
}

static void source_close(rd_source *s) {
  if (s->gz) inflateEnd(&s->z);
  free(s->in);
  if (s->f) fclose(s->f);
}

/* Back to the first byte, for the second pass (rd_parse's fallback). */
static int source_rewind(rd_source *s) {
  if (s->gz) inflateEnd(&s->z);
  free(s->in);
  s->in = NULL;
  s->gz = s->gz_done = 0;
  memset(&s->z, 0, sizeof s->z);
  s->n_head = s->head_pos = 0;
  s->mem_pos = 0;
  if (s->f && fseek(s->f, 0, SEEK_SET))
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "%s: not a trace the reader takes, and it "
                     "cannot be read a second time for the reason (a pipe?)",
                     s->what);
  if (s->f) clearerr(s->f);
  return source_open(s);
}

static void model_free(rd_model *m) {
  rd_event *e = &m->ev;
  rd_str *strs[] = {&e->ph, &e->cat, &e->name, &e->op_kind, &e->meta_name, &e->labels};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) rd_str_free(strs[i]);
}

/* A fresh model over stats (zeroed) and a new trace; 0, or out of memory. */
static int model_init(rd_model *m, prof_read_stats *stats, const char *what) {
  memset(m, 0, sizeof *m);
  m->stats = stats;
  memset(m->stats, 0, sizeof *m->stats);
  prof_trace_create(&m->t);
  return m->t ? 0 : attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no memory for a trace", what);
}

/* yajl_only: the testing surface's path (attnprof/testing.h), the fast
 * tokenizer skipped. */
static attn_status read_source(rd_source *s, prof_trace **out, prof_read_stats *stats,
                               int yajl_only) {
  prof_read_stats local;
  rd_model m;
  *out = NULL;
  if (model_init(&m, stats ? stats : &local, s->what)) return ATTN_STATUS_OUT_OF_MEMORY;
  int rc = source_open(s);
  if (!rc) rc = yajl_only ? RD_SCAN_FALLBACK : rd_parse(&m, source_pull, s, s->what);
  if (rc == RD_SCAN_FALLBACK) { /* yajl reads it again and has the last word */
    model_free(&m);
    prof_trace_destroy(m.t);
    if (model_init(&m, stats ? stats : &local, s->what)) return ATTN_STATUS_OUT_OF_MEMORY;
    rc = source_rewind(s);
    if (!rc) rc = rd_parse_yajl(&m, source_pull, s, s->what);
  }
  if (!rc) rd_finish_trace(&m);
  model_free(&m);
  if (rc) {
    prof_trace_destroy(m.t);
    return (attn_status)rc;
  }
  *out = m.t;
  return ATTN_STATUS_OK;
}

static attn_status read_file(const char *path, prof_trace **out, prof_read_stats *stats,
                             int yajl_only) {
  rd_source s;
  memset(&s, 0, sizeof s);
  s.what = path;
  *out = NULL;
  if (!path) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "no trace file named");
  s.f = fopen(path, "rb");
  if (!s.f) return attn_fail(ATTN_STATUS_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
  s.n_head = fread(s.head, 1, sizeof s.head, s.f);
  attn_status st = pft_sniff(s.head, s.n_head)
                       ? pft_read_file(s.f, s.head, s.n_head, path, out, stats)
                       : read_source(&s, out, stats, yajl_only);
  source_close(&s);
  return st;
}

static attn_status read_buffer(const void *data, size_t len, prof_trace **out,
                               prof_read_stats *stats, int yajl_only) {
  rd_source s;
  memset(&s, 0, sizeof s);
  s.what = "buffer";
  s.mem = data ? data : (const void *)"";
  s.mem_len = data ? len : 0;
  if (pft_sniff(s.mem, s.mem_len < 16 ? s.mem_len : 16))
    return pft_read_buffer(s.mem, s.mem_len, out, stats);
  attn_status st = read_source(&s, out, stats, yajl_only);
  source_close(&s);
  return st;
}

attn_status prof_read_chrome_trace(const char *path, prof_trace **out, prof_read_stats *stats) {
  return read_file(path, out, stats, 0);
}

attn_status prof_read_chrome_trace_buffer(const void *data, size_t len, prof_trace **out,
                                          prof_read_stats *stats) {
  return read_buffer(data, len, out, stats, 0);
}

attn_status prof_testing_read_yajl(const char *path, prof_trace **out, prof_read_stats *stats) {
  return read_file(path, out, stats, 1);
}

attn_status prof_testing_read_buffer_yajl(const void *data, size_t len, prof_trace **out,
                                          prof_read_stats *stats) {
  return read_buffer(data, len, out, stats, 1);
}

/* ---- a header document (pftrace_reader.c) ---------------------------------------- */

typedef struct {
  const char *p;
  size_t len, pos;
} mem_src;

static int mem_pull(void *src, unsigned char *buf, size_t cap, size_t *got) {
  mem_src *m = src;
  size_t k = m->len - m->pos < cap ? m->len - m->pos : cap;
  memcpy(buf, m->p + m->pos, k);
  m->pos += k;
  *got = k;
  return 0;
}

int prof_read_chrome_trace_header(rd_model *m, const char *json, size_t len, const char *what) {
  mem_src s = {json, len, 0};
  return rd_parse_yajl(m, mem_pull, &s, what); /* a few hundred bytes: yajl alone, no restart */
}
