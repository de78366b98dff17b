/* Reading a Perfetto protobuf trace as attnprof writes it (pftrace.h) into
 * the event model, through the JSON reader's own mapping: each slice becomes
 * the rd_event a Kineto "X" event would (its debug annotations as args, by
 * the same key table and bounds), so both formats read alike. The file is
 * read packet by packet (zlib batches inflated one at a time); memory holds
 * the model, the interned strings and the slices still open.
 *
 * Faults, each one line and INVALID_ARGUMENT: a packet cut short (a
 * truncated file), a batch that does not inflate, a packet protobuf-c cannot
 * decode, and a file of ours without its end marker (cut at a packet
 * boundary). Events are kept in the order their slices end, so the reader's
 * out-of-order count does not apply and stays 0. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "prof/io/chrome_reader.h"
#include "prof/io/kineto_keys.h"
#include "prof/io/pftrace.h"

enum { KIND_NAME = 1, KIND_CAT = 2, KIND_ARG = 3, KIND_STR = 4 };

typedef struct {
  uint64_t uuid;
  int64_t pid, tid;
  pft_packet **open; /* BEGIN packets not yet ended, innermost last */
  size_t n_open, cap_open;
} track;

typedef struct {
  rd_model m;
  const char *what;
  prof_map interned; /* (kind, iid) -> index into strs */
  const char **strs; /* interned in the trace's pool */
  size_t n_strs, cap_strs;
  prof_map track_ix; /* (uuid, 0) -> index into tracks */
  track *tracks;
  size_t n_tracks, cap_tracks;
  int ours, saw_end, saw_event;
  uint64_t offset; /* of the packet being read, for messages */
} pft_reader;

/* ---- bytes ------------------------------------------------------------------ */

typedef struct {
  FILE *f;                  /* a file after its first bytes, which mem holds; or */
  const unsigned char *mem; /* the bytes */
  size_t len, pos;
  uint64_t consumed;
} byte_src;

static size_t src_read(byte_src *s, void *buf, size_t n) {
  if (!n) return 0; /* an empty packet: buf may be NULL */
  size_t k = s->len - s->pos < n ? s->len - s->pos : n;
  if (k) memcpy(buf, s->mem + s->pos, k);
  s->pos += k;
  if (s->f && k < n) k += fread((unsigned char *)buf + k, 1, n - k, s->f);
  s->consumed += k;
  return k;
}

/* The framing of Trace.packet: a field key and a length, as varints. Perfetto
 * files are a bare run of these; protobuf-c has no streaming reader, so this
 * much is read here. 1 read, 0 clean end, -1 cut short. */
static int read_varint(byte_src *s, uint64_t *v, int *got_any) {
  *v = 0;
  *got_any = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    unsigned char b;
    if (src_read(s, &b, 1) != 1) return *got_any ? -1 : 0;
    *got_any = 1;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 1;
  }
  return -1;
}

static int varint_mem(const unsigned char *p, size_t n, size_t *pos, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < n; shift += 7) {
    unsigned char b = p[(*pos)++];
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* ---- interned strings, tracks ------------------------------------------------ */

static int intern_put(pft_reader *r, int kind, uint64_t iid, const char *s, size_t len) {
  if (r->n_strs == r->cap_strs) {
    size_t cap = r->cap_strs ? 2 * r->cap_strs : 256;
    const char **p = realloc(r->strs, cap * sizeof *p);
    if (!p) return -1;
    r->strs = p, r->cap_strs = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) return -1;
  memcpy(copy, s, len), copy[len] = 0;
  const char *in = NULL;
  attn_status st = prof_trace_intern(r->m.t, copy, &in);
  free(copy);
  if (st) return -1;
  r->strs[r->n_strs] = in;
  /* a later definition of the same iid (after a state reset) wins */
  int64_t old = prof_map_get(&r->interned, (uint64_t)kind, iid);
  if (old >= 0) return r->strs[old] = in, 0;
  if (prof_map_put(&r->interned, (uint64_t)kind, iid, (int64_t)r->n_strs) < 0) return -1;
  r->n_strs++;
  return 0;
}

static const char *intern_get(const pft_reader *r, int kind, uint64_t iid) {
  int64_t i = prof_map_get(&r->interned, (uint64_t)kind, iid);
  return i >= 0 ? r->strs[i] : NULL;
}

static int take_interned(pft_reader *r, const pft_interned *in) {
  int err = 0;
  for (size_t i = 0; i < in->n_event_names; i++)
    if (in->event_names[i]->name)
      err |= intern_put(r, KIND_NAME, in->event_names[i]->iid, in->event_names[i]->name,
                        strlen(in->event_names[i]->name));
  for (size_t i = 0; i < in->n_event_categories; i++)
    if (in->event_categories[i]->name)
      err |= intern_put(r, KIND_CAT, in->event_categories[i]->iid, in->event_categories[i]->name,
                        strlen(in->event_categories[i]->name));
  for (size_t i = 0; i < in->n_debug_annotation_names; i++)
    if (in->debug_annotation_names[i]->name)
      err |= intern_put(r, KIND_ARG, in->debug_annotation_names[i]->iid,
                        in->debug_annotation_names[i]->name,
                        strlen(in->debug_annotation_names[i]->name));
  for (size_t i = 0; i < in->n_debug_annotation_string_values; i++)
    err |= intern_put(r, KIND_STR, in->debug_annotation_string_values[i]->iid,
                      (const char *)in->debug_annotation_string_values[i]->str.data,
                      in->debug_annotation_string_values[i]->str.len);
  return err;
}

static track *track_get(pft_reader *r, uint64_t uuid, int create) {
  int64_t i = prof_map_get(&r->track_ix, uuid, 0);
  if (i >= 0) return &r->tracks[i];
  if (!create) return NULL;
  if (r->n_tracks == r->cap_tracks) {
    size_t cap = r->cap_tracks ? 2 * r->cap_tracks : 16;
    track *p = realloc(r->tracks, cap * sizeof *p);
    if (!p) return NULL;
    r->tracks = p, r->cap_tracks = cap;
  }
  if (prof_map_put(&r->track_ix, uuid, 0, (int64_t)r->n_tracks) < 0) return NULL;
  track *t = &r->tracks[r->n_tracks++];
  memset(t, 0, sizeof *t);
  t->uuid = uuid;
  return t;
}

/* A process descriptor says what the JSON's process_name/process_labels rows
 * say: fed through the same metadata path. */
static int process_rows(pft_reader *r, const Attnprof__Pftrace__ProcessDescriptor *pd) {
  rd_event *e = &r->m.ev;
  rd_event_reset(e);
  rd_str_set(&e->ph, (const unsigned char *)KINETO_PH_METADATA, 1, r->m.stats);
  e->pid = pd->pid, e->has |= RD_HAS_PID;
  if (pd->process_name) {
    rd_str_set(&e->name, (const unsigned char *)KINETO_META_PROCESS_NAME,
               strlen(KINETO_META_PROCESS_NAME), r->m.stats);
    rd_str_set(&e->meta_name, (const unsigned char *)pd->process_name, strlen(pd->process_name),
               r->m.stats);
    if (rd_finish_event(&r->m)) return -1;
  }
  for (size_t i = 0; i < pd->n_process_labels; i++) {
    rd_str_set(&e->name, (const unsigned char *)KINETO_META_PROCESS_LABELS,
               strlen(KINETO_META_PROCESS_LABELS), r->m.stats);
    rd_str_set(&e->labels, (const unsigned char *)pd->process_labels[i],
               strlen(pd->process_labels[i]), r->m.stats);
    if (rd_finish_event(&r->m)) return -1;
  }
  return 0;
}

static int take_descriptor(pft_reader *r, const Attnprof__Pftrace__TrackDescriptor *td) {
  if (td->process) return process_rows(r, td->process);
  if (!td->thread) return 0; /* a track of no thread: its events are counted as skipped */
  track *t = track_get(r, td->uuid, 1);
  if (!t) return -1;
  t->pid = td->thread->pid;
  t->tid = td->thread->tid;
  return 0;
}

/* ---- slices -> events ---------------------------------------------------------- */

static void take_annotation(pft_reader *r, const pft_annot *d) {
  const char *key = d->name           ? d->name
                    : d->has_name_iid ? intern_get(r, KIND_ARG, d->name_iid)
                                      : NULL;
  if (!key || !rd_arg_is_read(key)) return; /* derived figures: the reader recomputes them */
  char text[64];
  int n = -1;
  if (d->has_int_value) n = snprintf(text, sizeof text, "%" PRId64, d->int_value);
  else if (d->has_uint_value) n = snprintf(text, sizeof text, "%" PRIu64, d->uint_value);
  else if (d->has_double_value) n = snprintf(text, sizeof text, "%.17g", d->double_value);
  if (n > 0) return rd_take_arg_number(&r->m, key, text, (size_t)n);
  const char *s = d->string_value           ? d->string_value
                  : d->has_string_value_iid ? intern_get(r, KIND_STR, d->string_value_iid)
                                            : NULL;
  if (s) return rd_take_arg_string(&r->m, key, s, strlen(s));
  for (size_t i = 0; i < d->n_array_values && i < 3; i++) {
    const pft_annot *v = d->array_values[i];
    if (!v->has_int_value) continue;
    n = snprintf(text, sizeof text, "%" PRId64, v->int_value);
    rd_take_arg_dim(&r->m, key, (int)i, text, (size_t)n);
  }
}

static void set_str(pft_reader *r, rd_str *dst, const char *s) {
  if (s) rd_str_set(dst, (const unsigned char *)s, strlen(s), r->m.stats);
}

/* The slice that began with b and ends at `end` -> one event. */
static int finish_slice(pft_reader *r, const track *t, const pft_packet *b, uint64_t end) {
  const pft_event *te = b->track_event;
  rd_event *e = &r->m.ev;
  rd_event_reset(e);
  rd_str_set(&e->ph, (const unsigned char *)KINETO_PH_COMPLETE, 1, r->m.stats);
  set_str(r, &e->name,
          te->name           ? te->name
          : te->has_name_iid ? intern_get(r, KIND_NAME, te->name_iid)
                             : "");
  set_str(r, &e->cat,
          te->n_categories      ? te->categories[0]
          : te->n_category_iids ? intern_get(r, KIND_CAT, te->category_iids[0])
                                : NULL);
  e->pid = t->pid, e->tid = t->tid, e->has |= RD_HAS_PID | RD_HAS_TID;
  int64_t ts = (int64_t)(b->timestamp - (uint64_t)r->m.base_ns);
  if (b->timestamp <= (uint64_t)INT64_MAX && ts > -RD_TIME_LIMIT_NS && ts < RD_TIME_LIMIT_NS)
    e->ts_ns = ts, e->has |= RD_HAS_TS;
  if (end >= b->timestamp && end - b->timestamp < (uint64_t)RD_TIME_LIMIT_NS)
    e->dur_ns = (int64_t)(end - b->timestamp), e->has |= RD_HAS_DUR;
  else r->m.stats->bad_values++;
  for (size_t i = 0; i < te->n_debug_annotations; i++) take_annotation(r, te->debug_annotations[i]);
  r->m.stats->flows += (int64_t)(te->n_flow_ids + te->n_terminating_flow_ids);
  return rd_finish_event(&r->m);
}

/* Takes ownership of p when it opens a slice (*kept = 1). */
static int take_event(pft_reader *r, pft_packet *p, int *kept) {
  const pft_event *te = p->track_event;
  if (!r->m.has_base && p->has_timestamp) { /* no header: count from the first event's ms */
    r->m.base_ns = (int64_t)(p->timestamp - p->timestamp % 1000000);
    r->m.has_base = 1;
  }
  track *t = track_get(r, te->track_uuid, 0);
  r->saw_event = 1;
  if (!t || !p->has_timestamp) {
    if (te->type == ATTNPROF__PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN)
      r->m.stats->missing_time++;
    return 0;
  }
  if (te->type == ATTNPROF__PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN) {
    if (t->n_open == t->cap_open) {
      size_t cap = t->cap_open ? 2 * t->cap_open : 8;
      pft_packet **o = realloc(t->open, cap * sizeof *o);
      if (!o) return -1;
      t->open = o, t->cap_open = cap;
    }
    t->open[t->n_open++] = p;
    *kept = 1;
    return 0;
  }
  if (te->type != ATTNPROF__PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END) {
    r->m.stats->unsupported_phase++;
    return 0;
  }
  if (!t->n_open) return r->m.stats->bad_values++, 0; /* an end with no begin */
  pft_packet *b = t->open[--t->n_open];
  int rc = finish_slice(r, t, b, p->timestamp);
  attnprof__pftrace__trace_packet__free_unpacked(b, NULL);
  return rc;
}

/* ---- packets -------------------------------------------------------------------- */

static int bad(pft_reader *r, const char *why) {
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "%s: not a readable Perfetto trace: %s (packet at byte %llu)", r->what, why,
                   (unsigned long long)r->offset);
}

static int oom(pft_reader *r) {
  return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no memory for the events", r->what);
}

static int take_metadata(pft_reader *r, const Attnprof__Pftrace__ChromeEventBundle *b) {
  for (size_t i = 0; i < b->n_metadata; i++) {
    const Attnprof__Pftrace__ChromeMetadata *md = b->metadata[i];
    if (!md->name) continue;
    if (!strcmp(md->name, PFT_META_END)) r->saw_end = 1;
    if (strcmp(md->name, PFT_META_HEADER) || !md->json_value) continue;
    r->ours = 1;
    attn_status st =
        prof_read_chrome_trace_header(&r->m, md->json_value, strlen(md->json_value), r->what);
    if (st) return st;
  }
  return 0;
}

static int take_packets(pft_reader *r, const unsigned char *p, size_t n, int depth);

static int take_compressed(pft_reader *r, const ProtobufCBinaryData *z, int depth) {
  if (depth > 0) return bad(r, "compressed packets inside compressed packets");
  size_t cap = z->len * 8 + 4096, out_len = 0;
  unsigned char *out = NULL;
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inflateInit2(&s, 32 + MAX_WBITS) != Z_OK) return oom(r); /* zlib or gzip header */
  s.next_in = z->data, s.avail_in = (uInt)z->len;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (out_len == cap || !out) {
      if (out) cap *= 2;
      if (cap > PFT_MAX_BATCH) cap = PFT_MAX_BATCH;
      if (out && out_len == cap) break; /* too big */
      unsigned char *o = realloc(out, cap);
      if (!o) return inflateEnd(&s), free(out), oom(r);
      out = o;
    }
    s.next_out = out + out_len, s.avail_out = (uInt)(cap - out_len);
    rc = inflate(&s, Z_NO_FLUSH);
    out_len = cap - s.avail_out;
    if (rc == Z_BUF_ERROR && s.avail_out) break;
  }
  inflateEnd(&s);
  int st = rc == Z_STREAM_END ? take_packets(r, out, out_len, depth + 1)
           : out_len == PFT_MAX_BATCH
               ? bad(r, "a compressed batch inflates past 64 MiB")
               : bad(r, "compressed packets that do not inflate (cut or corrupt)");
  free(out);
  return st;
}

static int take_packet(pft_reader *r, const unsigned char *data, size_t len, int depth) {
  pft_packet *p = attnprof__pftrace__trace_packet__unpack(NULL, len, data);
  if (!p) return bad(r, "a packet that does not decode");
  int st = 0, kept = 0;
  if (p->interned_data && take_interned(r, p->interned_data)) st = oom(r);
  if (!st && p->track_descriptor && take_descriptor(r, p->track_descriptor)) st = oom(r);
  if (!st && p->chrome_events) st = take_metadata(r, p->chrome_events);
  if (!st && p->track_event && take_event(r, p, &kept)) st = oom(r);
  if (!st && p->has_compressed_packets) st = take_compressed(r, &p->compressed_packets, depth);
  if (!kept) attnprof__pftrace__trace_packet__free_unpacked(p, NULL);
  return st;
}

/* A run of framed packets in memory (an inflated batch). */
static int take_packets(pft_reader *r, const unsigned char *p, size_t n, int depth) {
  size_t pos = 0;
  while (pos < n) {
    uint64_t key, len;
    if (varint_mem(p, n, &pos, &key) || varint_mem(p, n, &pos, &len) || len > n - pos)
      return bad(r, "a compressed batch cut inside a packet");
    if (key == ((1 << 3) | 2)) {
      int st = take_packet(r, p + pos, (size_t)len, depth);
      if (st) return st;
    }
    pos += (size_t)len;
  }
  return 0;
}

static int read_all(pft_reader *r, byte_src *s) {
  unsigned char *buf = NULL;
  size_t cap = 0;
  int st = 0;
  for (;;) {
    uint64_t key, len;
    int any;
    r->offset = s->consumed;
    int got = read_varint(s, &key, &any);
    if (got == 0) break;
    if (got < 0 || read_varint(s, &len, &any) != 1) {
      st = bad(r, "the file ends inside a packet's header (truncated)");
      break;
    }
    if ((key & 7) != 2 || len > PFT_MAX_BATCH) {
      st = bad(r,
               (key & 7) != 2 ? "a top-level field that is not a packet" : "a packet over 64 MiB");
      break;
    }
    if (len > cap) {
      unsigned char *b = realloc(buf, (size_t)len);
      if (!b) {
        st = oom(r);
        break;
      }
      buf = b, cap = (size_t)len;
    }
    size_t n = src_read(s, buf, (size_t)len);
    if (n != len) {
      char why[128];
      snprintf(why, sizeof why, "the file ends inside a packet of %llu bytes, %zu read (truncated)",
               (unsigned long long)len, n);
      st = bad(r, why);
      break;
    }
    if ((key >> 3) == 1 && (st = take_packet(r, buf, n, 0))) break;
  }
  free(buf);
  if (!st && r->ours && !r->saw_end)
    st = bad(r, "no end marker: the file was cut short (truncated)");
  return st;
}

/* ---- entry points ---------------------------------------------------------------- */

int pft_sniff(const unsigned char *h, size_t n) {
  if (n < 1 || h[0] != 0x0a) return 0;
  if (n == 1) return 1; /* a file of one byte: a Perfetto packet's key, cut */
  /* JSON after a newline: white space, then { or [, then what JSON allows */
  size_t i = 0;
  while (i < n && (h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r')) i++;
  if (i == n) return 0;
  if (h[i] != '{' && h[i] != '[') return 1;
  size_t j = i + 1;
  while (j < n && (h[j] == ' ' || h[j] == '\t' || h[j] == '\n' || h[j] == '\r')) j++;
  if (j == n) return 0;
  return !strchr(h[i] == '{' ? "\"}" : "{[]\"-0123456789tfn", h[j]);
}

static void reader_free(pft_reader *r) {
  for (size_t i = 0; i < r->n_tracks; i++) {
    for (size_t k = 0; k < r->tracks[i].n_open; k++)
      attnprof__pftrace__trace_packet__free_unpacked(r->tracks[i].open[k], NULL);
    free(r->tracks[i].open);
  }
  free(r->tracks);
  free(r->strs);
  prof_map_free(&r->interned);
  prof_map_free(&r->track_ix);
  rd_event *e = &r->m.ev;
  rd_str *strs[] = {&e->ph, &e->cat, &e->name, &e->op_kind, &e->meta_name, &e->labels};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) rd_str_free(strs[i]);
}

static attn_status read_src(byte_src *s, const char *what, prof_trace **out,
                            prof_read_stats *stats) {
  prof_read_stats local;
  pft_reader r;
  memset(&r, 0, sizeof r);
  r.what = what;
  r.m.stats = stats ? stats : &local;
  memset(r.m.stats, 0, sizeof *r.m.stats);
  prof_map_init(&r.interned);
  prof_map_init(&r.track_ix);
  *out = NULL;
  prof_trace_create(&r.m.t);
  int st = r.m.t ? read_all(&r, s) : oom(&r);
  size_t open = 0;
  for (size_t i = 0; i < r.n_tracks; i++) open += r.tracks[i].n_open;
  r.m.stats->missing_time += (int64_t)open; /* slices never ended: no duration */
  r.m.stats->out_of_order = 0;
  if (!st) rd_finish_trace(&r.m);
  reader_free(&r);
  if (st) {
    prof_trace_destroy(r.m.t);
    return (attn_status)st;
  }
  *out = r.m.t;
  return ATTN_STATUS_OK;
}

attn_status pft_read_file(FILE *f, const unsigned char *head, size_t n_head, const char *what,
                          prof_trace **out, prof_read_stats *stats) {
  byte_src s = {f, head, n_head, 0, 0};
  return read_src(&s, what, out, stats);
}

attn_status pft_read_buffer(const void *data, size_t len, prof_trace **out,
                            prof_read_stats *stats) {
  byte_src s = {NULL, data, len, 0, 0};
  return read_src(&s, "buffer", out, stats);
}
