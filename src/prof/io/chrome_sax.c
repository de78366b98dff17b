/* The yajl callbacks of the trace reader: where in the document each token
 * is, and which field of the event (or device) it fills.
 *
 * The document is `{... "deviceProperties": [{...}], "traceEvents": [{...}],
 * ...}` (Kineto) or a bare `[{...}, ...]` (Chrome's array form). A small stack
 * of frames follows the containers that matter (top object, the events array,
 * an event, its args, a grid/block triple, the devices); any other value is
 * skipped whole by counting its depth, so unknown keys, deep nesting and odd
 * shapes cost nothing and cannot confuse the reader. Which key goes where is
 * one table per frame, with the destination's offset, type and bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "core/error.h"
#include "prof/io/chrome_reader.h"
#include "prof/io/kineto_keys.h"

typedef enum {
  V_SKIP,    /* not read: the value is skipped whole */
  V_EVENTS,  /* the traceEvents array */
  V_DEVICES, /* the deviceProperties array */
  V_ARGS,    /* an event's args object */
  V_DIM3,    /* [x, y, z] into int64_t[3] */
  V_I64,     /* integer into int64_t */
  V_F64,     /* number into double */
  V_STR,     /* string into rd_str */
  V_US,      /* microseconds (exact ns fraction) into int64_t ns */
  V_ID,      /* pid/tid: integer or string */
  V_BASE,    /* baseTimeNanoseconds */
  V_DEV_I32, /* deviceProperties: int field of prof_device */
  V_DEV_I64,
  V_DEV_STR
} vtype;

typedef struct {
  const char *key;
  size_t klen; /* strlen(key), known at compile time (K) */
  vtype type;
  size_t off;   /* into rd_event (or prof_device for V_DEV_*) */
  unsigned has; /* RD_HAS_* set when the value was taken */
  int64_t lo, hi;
} field;

#define K(key) key, sizeof key - 1
#define EV(f) offsetof(rd_event, f)
#define DV(f) offsetof(prof_device, f)
#define I32 0, INT32_MAX
#define BIG (-((int64_t)1 << 62)), ((int64_t)1 << 62)
#define SMEM 0, (1 << 24) /* 16 MiB: far above any SM, far below int overflow */

static const field top_fields[] = {{K(KINETO_TRACE_EVENTS), V_EVENTS, 0, 0, 0, 0},
                                   {K(KINETO_DEVICE_PROPERTIES), V_DEVICES, 0, 0, 0, 0},
                                   {K(KINETO_BASE_TIME_NS), V_BASE, 0, 0, 0, RD_BASE_LIMIT_NS},
                                   {NULL, 0, V_SKIP, 0, 0, 0, 0}};

static const field event_fields[] = {
    {K(KINETO_PH), V_STR, EV(ph), 0, 0, 0},
    {K(KINETO_CAT), V_STR, EV(cat), 0, 0, 0},
    {K(KINETO_NAME), V_STR, EV(name), 0, 0, 0},
    {K(KINETO_PID), V_ID, EV(pid), RD_HAS_PID, BIG},
    {K(KINETO_TID), V_ID, EV(tid), RD_HAS_TID, BIG},
    {K(KINETO_TS), V_US, EV(ts_ns), RD_HAS_TS, -RD_TIME_LIMIT_NS, RD_TIME_LIMIT_NS},
    {K(KINETO_DUR), V_US, EV(dur_ns), RD_HAS_DUR, 0, RD_TIME_LIMIT_NS},
    {K(KINETO_ARGS), V_ARGS, 0, 0, 0, 0},
    {NULL, 0, V_SKIP, 0, 0, 0, 0}};

static const field arg_fields[] = {
    {K(KINETO_ARG_EXTERNAL_ID), V_I64, EV(external_id), 0, BIG},
    {K(KINETO_ARG_CORRELATION), V_I64, EV(correlation), 0, BIG},
    {K(KINETO_ARG_DEVICE), V_I64, EV(device), RD_HAS_DEVICE, I32},
    {K(KINETO_ARG_STREAM), V_I64, EV(stream), RD_HAS_STREAM, -1, INT32_MAX},
    {K(KINETO_ARG_CBID), V_I64, EV(cbid), RD_HAS_CBID, I32},
    /* CUDA's limits (grid y and z are capped at 65535 in dim3_number): any
     * product of three stays inside int64 for every analysis. */
    {K(KINETO_ARG_GRID), V_DIM3, EV(grid), 0, I32},
    {K(KINETO_ARG_BLOCK), V_DIM3, EV(block), 0, 0, 1024},
    {K(ATTNPROF_ARG_CLUSTER), V_DIM3, EV(cluster), 0, 0, 1024},
    {K(KINETO_ARG_REGISTERS), V_I64, EV(registers), 0, 0, 65536},
    {K(KINETO_ARG_SHARED_MEMORY), V_I64, EV(smem), RD_HAS_SMEM, SMEM},
    {K(ATTNPROF_ARG_STATIC_SHARED), V_I64, EV(static_smem), RD_HAS_STATIC_SMEM, SMEM},
    {K(ATTNPROF_ARG_DYNAMIC_SHARED), V_I64, EV(dynamic_smem), RD_HAS_DYNAMIC_SMEM, SMEM},
    {K(ATTNPROF_ARG_SMEM_EXECUTED), V_I64, EV(smem_executed), 0, SMEM},
    {K(ATTNPROF_ARG_SMEM_OPTIN), V_I64, EV(smem_optin), 0, 0, 1},
    {K(ATTNPROF_ARG_MAX_ACTIVE_CLUSTERS), V_I64, EV(max_active_clusters), 0, I32},
    {K(ATTNPROF_ARG_GRAPH_ID), V_I64, EV(graph_id), 0, 0, UINT32_MAX},
    {K(KINETO_ARG_OCCUPANCY), V_F64, EV(occupancy), RD_HAS_OCCUPANCY, 0, 0},
    {K(KINETO_ARG_BYTES), V_I64, EV(bytes), 0, 0, (int64_t)1 << 62},
    {K(ATTNPROF_ARG_OP_KIND), V_STR, EV(op_kind), 0, 0, 0},
    {K(ATTNPROF_ARG_FLOPS), V_F64, EV(flops), 0, 0, 0},
    {K(ATTNPROF_ARG_ROOF_TIME_US), V_F64, EV(roof_time_us), 0, 0, 0},
    {K(ATTNPROF_ARG_ROOF_COPY_GBPS), V_F64, EV(roof_copy_gbps), 0, 0, 0},
    {K(ATTNPROF_ARG_ROOF_PEAK_TFLOPS), V_F64, EV(roof_peak_tflops), 0, 0, 0},
    {K(KINETO_META_ARG_NAME), V_STR, EV(meta_name), 0, 0, 0},
    {K(KINETO_META_ARG_LABELS), V_STR, EV(labels), 0, 0, 0},
    {NULL, 0, V_SKIP, 0, 0, 0, 0}};

static const field device_fields[] = {
    {K(KINETO_DEV_ID), V_DEV_I32, DV(id), 1, I32},
    {K(KINETO_DEV_NAME), V_DEV_STR, DV(name), 0, 0, 0},
    {K(KINETO_DEV_TOTAL_GLOBAL_MEM), V_DEV_I64, DV(total_global_mem), 0, 0, (int64_t)1 << 62},
    {K(KINETO_DEV_COMPUTE_MAJOR), V_DEV_I32, DV(compute_major), 0, 0, 1000},
    {K(KINETO_DEV_COMPUTE_MINOR), V_DEV_I32, DV(compute_minor), 0, 0, 1000},
    {K(KINETO_DEV_MAX_THREADS_PER_BLOCK), V_DEV_I32, DV(max_threads_per_block), 0, I32},
    {K(KINETO_DEV_MAX_THREADS_PER_SM), V_DEV_I32, DV(max_threads_per_sm), 0, I32},
    {K(KINETO_DEV_REGS_PER_BLOCK), V_DEV_I32, DV(regs_per_block), 0, I32},
    {K(KINETO_DEV_WARP_SIZE), V_DEV_I32, DV(warp_size), 0, 0, 1024},
    {K(KINETO_DEV_SHARED_MEM_PER_BLOCK), V_DEV_I32, DV(shared_memory_per_block), 0, SMEM},
    {K(KINETO_DEV_NUM_SMS), V_DEV_I32, DV(num_sms), 0, 0, 1 << 20},
    {K(KINETO_DEV_REGS_PER_SM), V_DEV_I32, DV(regs_per_sm), 0, I32},
    {K(KINETO_DEV_SHARED_MEM_PER_BLOCK_OPTIN), V_DEV_I32, DV(shared_memory_per_block_optin), 0,
     SMEM},
    {K(KINETO_DEV_SHARED_MEM_PER_SM), V_DEV_I32, DV(shared_memory_per_sm), 0, SMEM},
    {K(ATTNPROF_DEV_MAX_BLOCKS_PER_SM), V_DEV_I32, DV(max_blocks_per_sm), 0, 0, 1 << 20},
    {K(ATTNPROF_DEV_RESERVED_SHARED_MEM), V_DEV_I32, DV(reserved_shared_memory_per_block), 0, SMEM},
    {NULL, 0, V_SKIP, 0, 0, 0, 0}};

typedef enum { FR_TOP, FR_EVENTS, FR_EVENT, FR_ARGS, FR_DIM3, FR_DEVICES, FR_DEVICE } frame_role;

typedef struct {
  frame_role role;
  const field *slot; /* what the next value of this container fills; NULL = skip */
  int index;         /* FR_DIM3: next element */
} frame;

enum { MAX_DEPTH = 8 };

typedef struct {
  rd_model *m;
  frame st[MAX_DEPTH];
  int depth;
  size_t skip; /* > 0: inside a value not read, this deep */
  int seen_top, seen_events;
  const char *root_scalar; /* the document was a bare scalar: which kind */
} sax_ctx;

/* Every key of every event comes through here (unknown ones scan the whole
 * table), so lengths are compared before any byte. */
static const field *lookup(const field *table, const unsigned char *key, size_t len) {
  for (; table->key; table++)
    if (table->klen == len && (unsigned char)table->key[0] == key[0] &&
        !memcmp(table->key, key, len))
      return table;
  return NULL;
}

static frame *top(sax_ctx *c) { return c->depth ? &c->st[c->depth - 1] : NULL; }

static void push(sax_ctx *c, frame_role role) { c->st[c->depth++] = (frame){role, NULL, 0}; }

static void bad_value(sax_ctx *c) { c->m->stats->bad_values++; }

/* ---- scalars ------------------------------------------------------------- */

static void take_number(sax_ctx *c, const field *f, const char *s, size_t len) {
  rd_event *e = &c->m->ev;
  char *base = (char *)e;
  int64_t v;
  double d;
  switch (f->type) {
    case V_I64:
    case V_ID:
      if (rd_parse_int(s, len, f->lo, f->hi, &v)) return bad_value(c);
      *(int64_t *)(base + f->off) = v;
      e->has |= f->has;
      return;
    case V_US:
      if (rd_parse_us_to_ns(s, len, f->hi, &v) || v < f->lo) return bad_value(c);
      *(int64_t *)(base + f->off) = v;
      e->has |= f->has;
      return;
    case V_F64:
      if (rd_parse_double(s, len, &d)) return bad_value(c);
      *(double *)(base + f->off) = d;
      e->has |= f->has;
      return;
    case V_BASE:
      if (rd_parse_int(s, len, f->lo, f->hi, &v)) return bad_value(c);
      c->m->base_ns = v, c->m->has_base = 1;
      return;
    case V_DEV_I32:
    case V_DEV_I64:
      if (rd_parse_int(s, len, f->lo, f->hi, &v)) return bad_value(c);
      if (f->type == V_DEV_I32) *(int *)((char *)&c->m->dev.d + f->off) = (int)v;
      else *(int64_t *)((char *)&c->m->dev.d + f->off) = v;
      if (f->has) c->m->dev.has_id = 1;
      return;
    default:
      bad_value(c); /* a number where a string or a container belongs */
  }
}

static void take_string(sax_ctx *c, const field *f, const unsigned char *s, size_t len) {
  rd_event *e = &c->m->ev;
  if (f->type == V_STR) {
    rd_str_set((rd_str *)((char *)e + f->off), s, len, c->m->stats);
  } else if (f->type == V_ID) {
    *(int64_t *)((char *)e + f->off) = rd_string_id(c->m, (const char *)s, len);
    e->has |= f->has;
  } else if (f->type == V_DEV_STR) {
    size_t n = len < sizeof c->m->dev.d.name - 1 ? len : sizeof c->m->dev.d.name - 1;
    memcpy(c->m->dev.d.name, s, n);
    c->m->dev.d.name[n] = 0;
  } else {
    bad_value(c);
  }
}

/* The field a scalar in the current container fills (NULL: none). */
static const field *scalar_slot(sax_ctx *c, const char *kind) {
  frame *f = top(c);
  if (!f) {
    c->root_scalar = kind;
    return NULL;
  }
  const field *slot = f->slot;
  f->slot = NULL;
  if (f->role == FR_EVENTS) c->m->stats->not_an_event++;
  return slot;
}

static int dim3_number(sax_ctx *c, frame *f, const char *s, size_t len) {
  int64_t v;
  const field *d = f->slot;
  int64_t hi = f->index > 0 && d->hi > 65535 ? 65535 : d->hi;
  if (f->index >= 3 || rd_parse_int(s, len, d->lo, hi, &v)) bad_value(c);
  else ((int64_t *)((char *)&c->m->ev + d->off))[f->index] = v;
  f->index++;
  return 1;
}

static int on_number(void *ctx, const char *s, size_t len) {
  sax_ctx *c = ctx;
  if (c->skip) return 1;
  frame *f = top(c);
  if (f && f->role == FR_DIM3) return dim3_number(c, f, s, len);
  const field *slot = scalar_slot(c, "a number");
  if (slot) take_number(c, slot, s, len);
  return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t len) {
  sax_ctx *c = ctx;
  if (c->skip) return 1;
  frame *f = top(c);
  if (f && f->role == FR_DIM3) return bad_value(c), f->index++, 1;
  const field *slot = scalar_slot(c, "a string");
  if (slot) take_string(c, slot, s, len);
  return !c->m->oom;
}

/* null means "not given"; true/false is no value any field takes. */
static int on_null(void *ctx) {
  sax_ctx *c = ctx;
  if (c->skip) return 1;
  frame *f = top(c);
  if (f && f->role == FR_DIM3) return f->index++, 1;
  scalar_slot(c, "null");
  return 1;
}

static int on_bool(void *ctx, int b) {
  sax_ctx *c = ctx;
  (void)b;
  if (c->skip) return 1;
  frame *f = top(c);
  if (f && f->role == FR_DIM3) return bad_value(c), f->index++, 1;
  if (scalar_slot(c, "a boolean")) bad_value(c);
  return 1;
}

/* ---- containers ---------------------------------------------------------- */

/* A container inside [x, y, z] is no dimension: counted, skipped. */
static int dim3_container(sax_ctx *c, frame *f) {
  bad_value(c);
  f->index++;
  c->skip = 1;
  return 1;
}

/* What opening any container ({ or [) does first. Returns 1 when that
 * settles it (inside a skipped value the skip deepens; inside [x, y, z] a bad
 * value is counted); otherwise 0, with *fp the enclosing frame (NULL at the
 * top) and *slot the field the container fills, which the frame no longer
 * waits for (event and device lists keep no pending field). */
static int container_open(sax_ctx *c, frame **fp, const field **slot) {
  if (c->skip) return c->skip++, 1;
  frame *f = *fp = top(c);
  if (f && f->role == FR_DIM3) return dim3_container(c, f);
  *slot = f ? f->slot : NULL;
  if (f && f->role != FR_EVENTS && f->role != FR_DEVICES) f->slot = NULL;
  return 0;
}

static int on_start_map(void *ctx) {
  sax_ctx *c = ctx;
  frame *f;
  const field *slot;
  if (container_open(c, &f, &slot)) return 1;
  if (!f && !c->seen_top && !c->seen_events) {
    c->seen_top = 1;
    push(c, FR_TOP);
  } else if (f && f->role == FR_EVENTS) {
    rd_event_reset(&c->m->ev);
    push(c, FR_EVENT);
  } else if (f && f->role == FR_DEVICES) {
    memset(&c->m->dev, 0, sizeof c->m->dev);
    push(c, FR_DEVICE);
  } else if (f && f->role == FR_EVENT && slot && slot->type == V_ARGS) {
    push(c, FR_ARGS);
  } else {
    if (slot) bad_value(c); /* an object where a number or string belongs */
    c->skip = 1;
  }
  return 1;
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len) {
  sax_ctx *c = ctx;
  if (c->skip) return 1;
  frame *f = top(c);
  const field *table = f->role == FR_TOP      ? top_fields
                       : f->role == FR_EVENT  ? event_fields
                       : f->role == FR_ARGS   ? arg_fields
                       : f->role == FR_DEVICE ? device_fields
                                              : NULL;
  f->slot = table ? lookup(table, key, len) : NULL;
  return 1;
}

static int on_end_map(void *ctx) {
  sax_ctx *c = ctx;
  if (c->skip) return c->skip--, 1;
  frame_role role = c->st[--c->depth].role;
  if (role == FR_EVENT && rd_finish_event(c->m)) return 0;
  if (role == FR_DEVICE) rd_finish_device(c->m);
  return 1;
}

static int on_start_array(void *ctx) {
  sax_ctx *c = ctx;
  frame *f;
  const field *slot;
  if (container_open(c, &f, &slot)) return 1;
  vtype t = slot ? slot->type : V_SKIP;
  if (!f && !c->seen_top && !c->seen_events) {
    c->seen_events = 1; /* Chrome's array form: the document is the events */
    push(c, FR_EVENTS);
  } else if (f && f->role == FR_TOP && (t == V_EVENTS || t == V_DEVICES) && c->depth < MAX_DEPTH) {
    if (t == V_EVENTS) c->seen_events = 1;
    push(c, t == V_EVENTS ? FR_EVENTS : FR_DEVICES);
  } else if (f && f->role == FR_ARGS && t == V_DIM3) {
    push(c, FR_DIM3);
    top(c)->slot = slot;
  } else {
    if (f && f->role == FR_EVENTS) c->m->stats->not_an_event++;
    else if (slot) bad_value(c);
    c->skip = 1;
  }
  return 1;
}

static int on_end_array(void *ctx) {
  sax_ctx *c = ctx;
  if (c->skip) return c->skip--, 1;
  c->depth--;
  return 1;
}

static const yajl_callbacks callbacks = {on_null,    on_bool,        NULL,         NULL,
                                         on_number,  on_string,      on_start_map, on_map_key,
                                         on_end_map, on_start_array, on_end_array};

/* ---- the driver ---------------------------------------------------------- */

/* A plain loop the compiler vectorizes: a pretty-printed trace has a line per
 * few dozen bytes, and a memchr call per line was a visible share of a read. */
static size_t count_lines(const unsigned char *p, size_t n) {
  size_t lines = 0;
  for (size_t i = 0; i < n; i++) lines += p[i] == '\n';
  return lines;
}

/* One line saying what yajl rejected and where. */
static int parse_error(yajl_handle h, const char *what, uint64_t offset, size_t line) {
  unsigned char *msg = yajl_get_error(h, 0, NULL, 0);
  char text[160];
  snprintf(text, sizeof text, "%s", msg ? (const char *)msg : "parse error");
  if (msg) yajl_free_error(h, msg);
  for (char *p = text; *p; p++)
    if (*p == '\n' || *p == '\r') *p = *(p + 1) ? ' ' : 0;
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s: not valid JSON at byte %llu (line %zu): %s",
                   what, (unsigned long long)offset, line + 1, text);
}

/* After the last token: is this a trace at all? */
static int check_shape(const sax_ctx *c, const char *what) {
  if (c->root_scalar)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "%s: not a Chrome trace: the document is %s, not an object with traceEvents",
                     what, c->root_scalar);
  if (!c->seen_events)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "%s: not a Chrome trace: no \"" KINETO_TRACE_EVENTS "\" array (expected "
                     "{\"" KINETO_TRACE_EVENTS "\": [...]} or a bare array of events)",
                     what);
  return 0;
}

/* Feeds every byte of the source to yajl (see chrome_reader.h). */
static int feed(yajl_handle h, sax_ctx *c, rd_pull_fn pull, void *src, const char *what,
                unsigned char *buf, size_t cap) {
  uint64_t offset = 0;
  size_t lines = 0, got = 0;
  for (;;) {
    int st = pull(src, buf, cap, &got);
    if (st) return st;
    yajl_status ys = got ? yajl_parse(h, buf, got) : yajl_complete_parse(h);
    if (c->m->oom)
      return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no memory for the events", what);
    if (ys != yajl_status_ok) {
      size_t used = got ? yajl_get_bytes_consumed(h) : 0;
      return parse_error(h, what, offset + used, lines + count_lines(buf, used < got ? used : got));
    }
    if (!got) return check_shape(c, what);
    offset += got;
    lines += count_lines(buf, got);
  }
}

int rd_parse(rd_model *m, rd_pull_fn pull, void *src, const char *what) {
  sax_ctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  int st = rd_scan(pull, src, &callbacks, &c);
  if (m->oom) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no memory for the events", what);
  return st ? st : check_shape(&c, what);
}

int rd_parse_yajl(rd_model *m, rd_pull_fn pull, void *src, const char *what) {
  enum { BUF = 256 * 1024 };
  sax_ctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  unsigned char *buf = malloc(BUF);
  yajl_handle h = buf ? yajl_alloc(&callbacks, NULL, &c) : NULL;
  if (!h) {
    free(buf);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "%s: no memory for the parser", what);
  }
  /* Invalid UTF-8 in one kernel name should not make a whole trace unreadable:
   * the writers replace such bytes with U+FFFD on the way out. */
  yajl_config(h, yajl_dont_validate_strings, 1);
  int st = feed(h, &c, pull, src, what, buf, BUF);
  yajl_free(h);
  free(buf);
  return st;
}

/* ---- args from another format (pftrace_reader.c) ------------------------ */

/* The same tables and bounds as the JSON's args: a value given as its JSON
 * text goes where the JSON reader would put it. */
static sax_ctx arg_ctx(rd_model *m) {
  sax_ctx c;
  memset(&c, 0, sizeof c);
  c.m = m;
  return c;
}

int rd_arg_is_read(const char *key) {
  return lookup(arg_fields, (const unsigned char *)key, strlen(key)) != NULL;
}

void rd_take_arg_number(rd_model *m, const char *key, const char *text, size_t len) {
  const field *f = lookup(arg_fields, (const unsigned char *)key, strlen(key));
  sax_ctx c = arg_ctx(m);
  if (f && f->type != V_DIM3) take_number(&c, f, text, len);
  else if (f) bad_value(&c);
}

void rd_take_arg_string(rd_model *m, const char *key, const char *s, size_t len) {
  const field *f = lookup(arg_fields, (const unsigned char *)key, strlen(key));
  sax_ctx c = arg_ctx(m);
  if (f && f->type != V_DIM3) take_string(&c, f, (const unsigned char *)s, len);
  else if (f) bad_value(&c);
}

void rd_take_arg_dim(rd_model *m, const char *key, int index, const char *text, size_t len) {
  const field *f = lookup(arg_fields, (const unsigned char *)key, strlen(key));
  sax_ctx c = arg_ctx(m);
  if (!f || f->type != V_DIM3) {
    if (f) bad_value(&c);
    return;
  }
  frame fr = {FR_DIM3, f, index};
  dim3_number(&c, &fr, text, len);
}
