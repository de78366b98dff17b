/* Writing Perfetto packets (see pftrace.h): each packet is built as a
 * protobuf-c message on the stack, framed as a one-packet Trace (so the
 * library writes the field tag and length), gathered into a batch, and each
 * batch goes out zlib-compressed as one compressed_packets packet. Interning
 * and track descriptors are emitted the first time a name or lane is used. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"
#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/io/pftrace.h"
#include "prof/io/trace_args.h"
#include "prof/analysis/nest.h"

enum { KIND_NAME = 1, KIND_CAT = 2, KIND_ARG = 3 };
#define PROCESS_TID ((uint64_t)INT64_MIN) /* tracks-map key of a process track */

static int buf_reserve(pft_buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra) cap *= 2;
  unsigned char *p = realloc(b->p, cap);
  if (!p) return ENOMEM;
  b->p = p, b->cap = cap;
  return 0;
}

static void put_file(pft_writer *w, const void *p, size_t n) {
  if (!w->err && n && fwrite(p, 1, n, w->f) != n) w->err = errno ? errno : EIO;
}

/* The batch -> one compressed_packets packet (or the plain packets). */
static void flush_batch(pft_writer *w) {
  if (w->err || !w->batch.len) return;
  if (!w->compress) {
    put_file(w, w->batch.p, w->batch.len);
    w->batch.len = 0;
    return;
  }
  uLongf zlen = compressBound((uLong)w->batch.len);
  w->zbuf.len = 0;
  if ((w->err = buf_reserve(&w->zbuf, zlen))) return;
  if (compress2(w->zbuf.p, &zlen, w->batch.p, (uLong)w->batch.len, Z_DEFAULT_COMPRESSION) != Z_OK) {
    w->err = ENOMEM;
    return;
  }
  pft_packet p = ATTNPROF__PFTRACE__TRACE_PACKET__INIT;
  p.has_compressed_packets = 1;
  p.compressed_packets.data = w->zbuf.p;
  p.compressed_packets.len = zlen;
  pft_packet *one = &p;
  pft_trace_msg t = ATTNPROF__PFTRACE__TRACE__INIT;
  t.n_packet = 1, t.packet = &one;
  size_t n = attnprof__pftrace__trace__get_packed_size(&t);
  w->scratch.len = 0;
  if ((w->err = buf_reserve(&w->scratch, n))) return;
  attnprof__pftrace__trace__pack(&t, w->scratch.p);
  put_file(w, w->scratch.p, n);
  w->batch.len = 0;
}

/* One packet, framed as Trace.packet, into the batch. */
static void emit(pft_writer *w, pft_packet *p) {
  if (w->err) return;
  p->has_trusted_packet_sequence_id = 1;
  p->trusted_packet_sequence_id = PFT_SEQUENCE;
  if (w->first_packet) {
    p->has_sequence_flags = 1;
    p->sequence_flags |= PFT_SEQ_CLEARED;
    w->first_packet = 0;
  }
  pft_trace_msg t = ATTNPROF__PFTRACE__TRACE__INIT;
  t.n_packet = 1, t.packet = &p;
  size_t n = attnprof__pftrace__trace__get_packed_size(&t);
  if ((w->err = buf_reserve(&w->batch, n))) return;
  attnprof__pftrace__trace__pack(&t, w->batch.p + w->batch.len);
  w->batch.len += n;
  if (w->batch.len >= PFT_BATCH) flush_batch(w);
}

/* ---- interning ----------------------------------------------------------- */

/* Entries of the packet being built: its interned_data owns these arrays
 * until the packet is emitted (then pending_clear). */
typedef struct pft_new {
  Attnprof__Pftrace__EventName name, *name_p;
  Attnprof__Pftrace__EventCategory cat, *cat_p;
  Attnprof__Pftrace__DebugAnnotationName args[64], *args_p[64];
} pft_new;

static uint64_t intern(pft_writer *w, int kind, uint64_t key, int *is_new) {
  int64_t iid = prof_map_get(&w->interned, (uint64_t)kind, key);
  *is_new = iid < 0;
  if (iid >= 0) return (uint64_t)iid;
  iid = prof_map_put(&w->interned, (uint64_t)kind, key, (int64_t)w->next_iid);
  if (iid < 0) w->err = ENOMEM;
  return w->next_iid++;
}

/* ---- args as debug annotations ----------------------------------------- */

enum { MAX_ANNOT = 96, MAX_TOP = 40 };

typedef struct pft_args {
  trace_args_sink sink; /* first: the sink is the writer */
  pft_writer *w;
  pft_new *nw;
  pft_annot pool[MAX_ANNOT];
  pft_annot *ptr[MAX_ANNOT];
  size_t n_pool;
  pft_annot *top[MAX_TOP];
  size_t n_top;
  char lim[64]; /* the limiting factors' text */
} pft_args;

static pft_annot *annot(pft_args *a, const char *key) {
  if (a->n_pool >= MAX_ANNOT) return NULL;
  pft_annot *d = &a->pool[a->n_pool];
  a->ptr[a->n_pool++] = d;
  attnprof__pftrace__debug_annotation__init(d);
  if (!key) return d;
  int is_new;
  d->has_name_iid = 1;
  d->name_iid = intern(a->w, KIND_ARG, prof_map_ptr(key), &is_new);
  pft_interned *in = a->w->pending;
  if (is_new && in->n_debug_annotation_names < 64) {
    Attnprof__Pftrace__DebugAnnotationName *n = &a->nw->args[in->n_debug_annotation_names];
    attnprof__pftrace__debug_annotation_name__init(n);
    n->has_iid = 1, n->iid = d->name_iid, n->name = (char *)key;
    a->nw->args_p[in->n_debug_annotation_names++] = n;
  }
  if (a->n_top < MAX_TOP) a->top[a->n_top++] = d;
  return d;
}

static void a_i64(trace_args_sink *s, const char *key, int64_t v) {
  pft_annot *d = annot((pft_args *)s, key);
  if (d) d->has_int_value = 1, d->int_value = v;
}

static void a_num(trace_args_sink *s, const char *key, double v) {
  pft_annot *d = annot((pft_args *)s, key);
  if (d) d->has_double_value = 1, d->double_value = v;
}

static void a_str(trace_args_sink *s, const char *key, const char *v) {
  pft_annot *d = annot((pft_args *)s, key);
  if (d) d->string_value = (char *)v;
}

static void a_dim3(trace_args_sink *s, const char *key, const int32_t v[3]) {
  pft_args *a = (pft_args *)s;
  pft_annot *d = annot(a, key);
  if (!d || a->n_pool + 3 > MAX_ANNOT) return;
  d->array_values = &a->ptr[a->n_pool];
  d->n_array_values = 3;
  for (int i = 0; i < 3; i++) {
    pft_annot *e = annot(a, NULL);
    e->has_int_value = 1, e->int_value = v[i];
  }
}

static void a_occupancy(trace_args_sink *s, const char *key, double active, const char *limiting) {
  pft_args *a = (pft_args *)s;
  pft_annot *d = annot(a, key);
  if (!d || a->n_pool + 2 > MAX_ANNOT) return;
  size_t top = a->n_top;
  pft_annot *blocks = annot(a, KINETO_OCC_ACTIVE_BLOCKS);
  pft_annot *lim = annot(a, KINETO_OCC_LIMITING);
  a->n_top = top; /* entries of the dict, not args of the event */
  if (!blocks || !lim) return;
  blocks->has_double_value = 1, blocks->double_value = active;
  snprintf(a->lim, sizeof a->lim, "%s", limiting);
  lim->string_value = a->lim;
  d->dict_entries = &a->ptr[a->n_pool - 2];
  d->n_dict_entries = 2;
}

int pft_writer_init(pft_writer *w, FILE *f, int compress) {
  memset(w, 0, sizeof *w);
  w->f = f;
  w->compress = compress;
  w->next_iid = 1;
  w->next_uuid = 1;
  w->first_packet = 1;
  prof_map_init(&w->interned);
  prof_map_init(&w->tracks);
  w->pending = calloc(1, sizeof *w->pending);
  w->nw = calloc(1, sizeof(pft_new));
  w->args = calloc(1, sizeof(pft_args));
  if (!w->pending || !w->nw || !w->args) return ENOMEM;
  attnprof__pftrace__interned_data__init(w->pending);
  return 0;
}

/* ---- tracks ---------------------------------------------------------------- */

static int32_t pid32(int64_t pid) {
  return pid < INT32_MIN ? INT32_MIN : pid > INT32_MAX ? INT32_MAX : (int32_t)pid;
}

static const char *process_name(const prof_trace *t) {
  const char *n = t ? prof_trace_process_name(t) : NULL;
  return n ? n : "attnprof";
}

/* A process track, as the JSON's process_name / process_labels rows name it. */
static void describe_process(pft_writer *w, const prof_event *e, int host, uint64_t uuid) {
  char name[256], label[64];
  if (!host || (w->t && e->pid == prof_trace_process_id(w->t)))
    snprintf(name, sizeof name, "%s", process_name(w->t));
  else snprintf(name, sizeof name, "process %lld", (long long)e->pid);
  if (host) snprintf(label, sizeof label, KINETO_LABEL_CPU);
  else snprintf(label, sizeof label, KINETO_LABEL_GPU, (int)e->pid);
  char *labels[1] = {label};
  Attnprof__Pftrace__ProcessDescriptor pd = ATTNPROF__PFTRACE__PROCESS_DESCRIPTOR__INIT;
  pd.has_pid = 1, pd.pid = pid32(e->pid);
  pd.process_name = name;
  pd.n_process_labels = 1, pd.process_labels = labels;
  Attnprof__Pftrace__TrackDescriptor td = ATTNPROF__PFTRACE__TRACK_DESCRIPTOR__INIT;
  td.has_uuid = 1, td.uuid = uuid;
  td.process = &pd;
  pft_packet p = ATTNPROF__PFTRACE__TRACE_PACKET__INIT;
  p.track_descriptor = &td;
  emit(w, &p);
}

static void describe_thread(pft_writer *w, const prof_event *e, int host, uint64_t uuid) {
  char name[320];
  if (host) {
    char pname[256];
    if (w->t && e->pid == prof_trace_process_id(w->t))
      snprintf(pname, sizeof pname, "%s", process_name(w->t));
    else snprintf(pname, sizeof pname, "process %lld", (long long)e->pid);
    snprintf(name, sizeof name, KINETO_THREAD_NAME_CPU, (long long)e->tid, pname);
  } else {
    snprintf(name, sizeof name, KINETO_THREAD_NAME_GPU, (long long)e->tid);
  }
  Attnprof__Pftrace__ThreadDescriptor th = ATTNPROF__PFTRACE__THREAD_DESCRIPTOR__INIT;
  th.has_pid = 1, th.pid = pid32(e->pid);
  th.has_tid = 1, th.tid = e->tid;
  th.thread_name = name;
  Attnprof__Pftrace__TrackDescriptor td = ATTNPROF__PFTRACE__TRACK_DESCRIPTOR__INIT;
  td.has_uuid = 1, td.uuid = uuid;
  td.thread = &th;
  pft_packet p = ATTNPROF__PFTRACE__TRACE_PACKET__INIT;
  p.track_descriptor = &td;
  emit(w, &p);
}

/* The uuid of e's lane, its descriptors written the first time. */
static uint64_t track_of(pft_writer *w, const prof_event *e) {
  int64_t uuid = prof_map_get(&w->tracks, (uint64_t)e->pid, (uint64_t)e->tid);
  if (uuid >= 0) return (uint64_t)uuid;
  int host = prof_cat_is_host(e->cat);
  if (prof_map_get(&w->tracks, (uint64_t)e->pid, PROCESS_TID) < 0) {
    uint64_t pu = w->next_uuid++;
    if (prof_map_put(&w->tracks, (uint64_t)e->pid, PROCESS_TID, (int64_t)pu) < 0) w->err = ENOMEM;
    describe_process(w, e, host, pu);
  }
  uint64_t tu = w->next_uuid++;
  if (prof_map_put(&w->tracks, (uint64_t)e->pid, (uint64_t)e->tid, (int64_t)tu) < 0)
    w->err = ENOMEM;
  describe_thread(w, e, host, tu);
  return tu;
}

void pft_describe_own_process(pft_writer *w) {
  int64_t pid = w->t ? prof_trace_process_id(w->t) : 0;
  if (!pid || prof_map_get(&w->tracks, (uint64_t)pid, PROCESS_TID) >= 0) return;
  prof_event e = prof_event_init(PROF_CAT_CPU_OP, "");
  e.pid = pid;
  uint64_t pu = w->next_uuid++;
  if (prof_map_put(&w->tracks, (uint64_t)pid, PROCESS_TID, (int64_t)pu) < 0) w->err = ENOMEM;
  describe_process(w, &e, 1, pu);
}

/* ---- events ----------------------------------------------------------------- */

static uint64_t epoch_ns(const pft_writer *w, int64_t ns) {
  int64_t v = ns + w->offset;
  return v < 0 ? 0 : (uint64_t)v;
}

static void pending_clear(pft_writer *w) {
  pft_interned *in = w->pending;
  in->n_event_names = in->n_event_categories = in->n_debug_annotation_names = 0;
  in->event_names = NULL, in->event_categories = NULL, in->debug_annotation_names = NULL;
}

static void name_and_category(pft_writer *w, const prof_event *e, pft_event *te, pft_new *nw,
                              uint64_t *cat_iid) {
  int is_new;
  te->has_name_iid = 1;
  te->name_iid = intern(w, KIND_NAME, prof_map_ptr(e->name), &is_new);
  if (is_new) {
    attnprof__pftrace__event_name__init(&nw->name);
    nw->name.has_iid = 1, nw->name.iid = te->name_iid, nw->name.name = (char *)e->name;
    nw->name_p = &nw->name;
    w->pending->event_names = &nw->name_p, w->pending->n_event_names = 1;
  }
  *cat_iid = intern(w, KIND_CAT, (uint64_t)e->cat, &is_new);
  if (is_new) {
    attnprof__pftrace__event_category__init(&nw->cat);
    nw->cat.has_iid = 1, nw->cat.iid = *cat_iid, nw->cat.name = (char *)prof_cat_name(e->cat);
    nw->cat_p = &nw->cat;
    w->pending->event_categories = &nw->cat_p, w->pending->n_event_categories = 1;
  }
  te->n_category_iids = 1;
  te->category_iids = cat_iid;
}

void pft_write_begin(pft_writer *w, const prof_trace *t, const prof_event *e, uint64_t flow_out,
                     uint64_t flow_in) {
  if (w->err) return;
  uint64_t track = track_of(w, e), cat_iid;
  pft_new *nw = w->nw;
  pending_clear(w);
  w->pending->debug_annotation_names = nw->args_p;
  pft_event te = ATTNPROF__PFTRACE__TRACK_EVENT__INIT;
  te.has_type = 1, te.type = ATTNPROF__PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
  te.has_track_uuid = 1, te.track_uuid = track;
  name_and_category(w, e, &te, nw, &cat_iid);
  pft_args *a = w->args;
  memset(a, 0, sizeof *a);
  a->sink = (trace_args_sink){a_i64, a_num, a_str, a_dim3, a_occupancy, NULL};
  a->w = w, a->nw = nw;
  trace_args_emit(t, e, &a->sink);
  te.debug_annotations = a->top, te.n_debug_annotations = a->n_top;
  if (flow_out) te.flow_ids = &flow_out, te.n_flow_ids = 1;
  if (flow_in) te.terminating_flow_ids = &flow_in, te.n_terminating_flow_ids = 1;
  pft_packet p = ATTNPROF__PFTRACE__TRACE_PACKET__INIT;
  p.has_timestamp = 1, p.timestamp = epoch_ns(w, e->start_ns);
  p.track_event = &te;
  p.has_sequence_flags = 1, p.sequence_flags = PFT_SEQ_NEEDS_STATE;
  pft_interned *in = w->pending;
  if (in->n_event_names || in->n_event_categories || in->n_debug_annotation_names)
    p.interned_data = in;
  if (!in->n_debug_annotation_names) in->debug_annotation_names = NULL;
  emit(w, &p);
  pending_clear(w);
  w->events++;
}

void pft_write_end(pft_writer *w, const prof_event *e) {
  if (w->err) return;
  pft_event te = ATTNPROF__PFTRACE__TRACK_EVENT__INIT;
  te.has_type = 1, te.type = ATTNPROF__PFTRACE__TRACK_EVENT__TYPE__TYPE_SLICE_END;
  te.has_track_uuid = 1, te.track_uuid = track_of(w, e);
  pft_packet p = ATTNPROF__PFTRACE__TRACE_PACKET__INIT;
  p.has_timestamp = 1, p.timestamp = epoch_ns(w, e->start_ns + e->dur_ns);
  p.track_event = &te;
  emit(w, &p);
}

/* ---- header and end ----------------------------------------------------------- */

static void metadata(pft_writer *w, const char *name, const char *json, int64_t v) {
  Attnprof__Pftrace__ChromeMetadata m = ATTNPROF__PFTRACE__CHROME_METADATA__INIT, *mp = &m;
  m.name = (char *)name;
  if (json) m.json_value = (char *)json;
  else m.has_int_value = 1, m.int_value = v;
  Attnprof__Pftrace__ChromeEventBundle b = ATTNPROF__PFTRACE__CHROME_EVENT_BUNDLE__INIT;
  b.n_metadata = 1, b.metadata = &mp;
  pft_packet p = ATTNPROF__PFTRACE__TRACE_PACKET__INIT;
  p.chrome_events = &b;
  emit(w, &p);
}

void pft_write_header(pft_writer *w, const prof_trace *t, int64_t base_epoch) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) {
    w->err = ENOMEM;
    return;
  }
  chrome_ctx c = {.o = {.f = m}, .t = t};
  json_fmt(&c.o, "{\"" KINETO_SCHEMA_VERSION "\": %d, ", KINETO_SCHEMA_VERSION_VALUE);
  chrome_write_devices(&c);
  json_raw(&c.o, "\"" ATTNPROF_KEY_VERSION "\": \"" ATTNPROF_VERSION "\", ");
  json_fmt(&c.o, "\"" ATTNPROF_KEY_DROPPED "\": %lld, ", (long long)prof_trace_dropped(t));
  json_fmt(&c.o, "\"" KINETO_BASE_TIME_NS "\": %lld, ", (long long)base_epoch);
  json_raw(&c.o, "\"" KINETO_TRACE_EVENTS "\": []}");
  json_flush(&c.o);
  int err = c.o.err;
  if (fclose(m) && !err) err = ENOMEM;
  if (err) w->err = err;
  else metadata(w, PFT_META_HEADER, text, 0);
  free(text);
}

int pft_writer_finish(pft_writer *w) {
  metadata(w, PFT_META_END, NULL, w->events);
  flush_batch(w);
  if (!w->err && fflush(w->f)) w->err = errno ? errno : EIO;
  return w->err;
}

void pft_writer_free(pft_writer *w) {
  prof_map_free(&w->interned);
  prof_map_free(&w->tracks);
  free(w->pending);
  free(w->nw);
  free(w->args);
  free(w->batch.p);
  free(w->scratch.p);
  free(w->zbuf.p);
}
