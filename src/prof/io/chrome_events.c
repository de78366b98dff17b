/* One event of the Chrome trace as Kineto writes it: a complete ("X") event
 * with the args torch.profiler gives its category, plus ours on CPU ops (op
 * kind, flops, bytes) and kernels (cluster, static/dynamic shared memory);
 * then, for a launch call and for a GPU activity it launched, the two ends of
 * the "ac2g" flow that draws the arrow between them. */
#include <stdlib.h>

#include "attnprof/prof.h"
#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/io/trace_args.h"

typedef struct {
  trace_args_sink sink; /* first: the sink is the writer */
  json_out *o;
  int n;
  chrome_fp_cache *cache;
} args_w;

/* ---- footprint args, kept as text ------------------------------------------ */

enum { FP_SLOTS = 64, FP_TEXT = 1024 }; /* the longest footprint text is about 600 bytes */

typedef struct {
  int used, has_device;
  prof_footprint fp;
  prof_device device;
  size_t len;
  char text[FP_TEXT]; /* starts with ", ": it follows the GPU row's args */
} fp_slot;

struct chrome_fp_cache {
  fp_slot slot[FP_SLOTS];
};

chrome_fp_cache *chrome_fp_cache_create(void) { return calloc(1, sizeof(chrome_fp_cache)); }

/* Field by field, so padding bytes never decide; the double by its bits. A
 * field added to prof_footprint must join this test, or a hit could write a
 * footprint's args for another: the size check stops the build until then. */
_Static_assert(sizeof(prof_footprint) == 72, "prof_footprint changed: update same_fp");
static int same_fp(const prof_footprint *a, const prof_footprint *b) {
  for (int i = 0; i < 3; i++)
    if (a->grid[i] != b->grid[i] || a->block[i] != b->block[i] || a->cluster[i] != b->cluster[i])
      return 0;
  return a->registers_per_thread == b->registers_per_thread &&
         a->static_shared_memory == b->static_shared_memory &&
         a->dynamic_shared_memory == b->dynamic_shared_memory &&
         a->shared_memory_executed == b->shared_memory_executed &&
         a->shared_memory_limit_optin == b->shared_memory_limit_optin &&
         !memcmp(&a->occupancy_pct_in_file, &b->occupancy_pct_in_file, sizeof(double)) &&
         a->max_active_clusters == b->max_active_clusters && a->graph_id == b->graph_id;
}

static size_t fp_slot_of(const prof_footprint *fp, const prof_device *d) {
  const int64_t v[] = {fp->grid[0],
                       fp->grid[1],
                       fp->grid[2],
                       fp->block[0],
                       fp->block[1],
                       fp->block[2],
                       fp->registers_per_thread,
                       fp->static_shared_memory,
                       fp->dynamic_shared_memory,
                       fp->graph_id,
                       d ? d->id : -1};
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) h = (h ^ (uint64_t)v[i]) * 1099511628211ull;
  return (size_t)(h ^ h >> 32) % FP_SLOTS;
}

static int slot_holds(const fp_slot *s, const prof_footprint *fp, const prof_device *d) {
  if (!s->used || !same_fp(&s->fp, fp)) return 0;
  return d ? s->has_device && !memcmp(&s->device, d, sizeof *d) : !s->has_device;
}

/* The sink's footprint hook: the slot's text, or the args written and, when
 * they lie whole in the buffer, kept. */
static void arg_footprint(trace_args_sink *s, const prof_footprint *fp, const prof_device *d) {
  args_w *a = (args_w *)s;
  json_out *o = a->o;
  fp_slot *slot = &a->cache->slot[fp_slot_of(fp, d)];
  if (a->n && slot_holds(slot, fp, d)) {
    json_put(o, slot->text, slot->len);
    return;
  }
  if (!a->n) { /* not after other args (no GPU row has none): not kept */
    trace_args_footprint(fp, d, s);
    return;
  }
  if (JSON_OUT_BUF - o->n < FP_TEXT) json_flush(o);
  size_t at = o->n, flushes = o->flushes;
  trace_args_footprint(fp, d, s);
  size_t len = o->n - at;
  if (o->flushes != flushes || len > FP_TEXT) return;
  *slot = (fp_slot){.used = 1, .has_device = d != NULL, .fp = *fp, .len = len};
  if (d) slot->device = *d;
  memcpy(slot->text, o->buf + at, len);
}

/* ---- one event ----------------------------------------------------------------- */

static void arg(args_w *a, const char *key) {
  if (a->n++) json_raw(a->o, ", ");
  json_key(a->o, key);
}

static void arg_i64(trace_args_sink *s, const char *key, int64_t v) {
  args_w *a = (args_w *)s;
  arg(a, key);
  json_int(a->o, v);
}

static void arg_num(trace_args_sink *s, const char *key, double v) {
  args_w *a = (args_w *)s;
  arg(a, key);
  json_num(a->o, v);
}

static void arg_str(trace_args_sink *s, const char *key, const char *v) {
  args_w *a = (args_w *)s;
  arg(a, key);
  json_str(a->o, v);
}

static void arg_dim3(trace_args_sink *s, const char *key, const int32_t v[3]) {
  args_w *a = (args_w *)s;
  arg(a, key);
  for (int i = 0; i < 3; i++) {
    json_raw(a->o, i ? ", " : "[");
    json_int(a->o, v[i]);
  }
  json_raw(a->o, "]");
}

static void arg_occupancy(trace_args_sink *s, const char *key, double active,
                          const char *limiting) {
  args_w *a = (args_w *)s;
  arg(a, key);
  json_raw(a->o, "{\"" KINETO_OCC_ACTIVE_BLOCKS "\": ");
  json_num(a->o, active);
  json_raw(a->o, ", \"" KINETO_OCC_LIMITING "\": ");
  json_str(a->o, limiting);
  json_raw(a->o, "}");
}

static void write_args(const chrome_ctx *c, const prof_event *e, json_out *o) {
  args_w a = {
      {arg_i64, arg_num, arg_str, arg_dim3, arg_occupancy, c->fp_cache ? arg_footprint : NULL},
      o,
      0,
      c->fp_cache};
  json_raw(o, "{");
  trace_args_emit(c->t, e, &a.sink);
  json_raw(o, "}");
}

/* ", "pid": P, "tid": T, "ts": ' */
static void lane_and_ts(chrome_ctx *c, const prof_event *e) {
  json_raw(&c->o, ", \"" KINETO_PID "\": ");
  json_int(&c->o, e->pid);
  json_raw(&c->o, ", \"" KINETO_TID "\": ");
  json_int(&c->o, e->tid);
  json_raw(&c->o, ", \"" KINETO_TS "\": ");
  chrome_ts(c, e->start_ns);
}

static void flow(chrome_ctx *c, const char *ph, int64_t id, const prof_event *at) {
  chrome_next(c);
  json_out *o = &c->o;
  json_raw(o, "{\"" KINETO_PH "\": \"");
  json_raw(o, ph); /* "s" or "f": nothing to escape */
  json_raw(o, "\", \"" KINETO_ID "\": ");
  json_int(o, id);
  lane_and_ts(c, at);
  json_raw(o, ", \"" KINETO_CAT "\": \"" KINETO_FLOW_LAUNCH "\", \"" KINETO_NAME
              "\": \"" KINETO_FLOW_LAUNCH "\"");
  if (ph[0] == KINETO_PH_FLOW_END[0])
    json_raw(o, ", \"" KINETO_BP "\": \"" KINETO_BP_ENCLOSING "\"");
  json_raw(o, "}");
}

void chrome_write_event(chrome_ctx *c, size_t i) {
  const prof_event *e = prof_trace_at(c->t, i);
  json_out *o = &c->o;
  chrome_next(c);
  /* Keys and categories are our constants, with nothing to escape. */
  json_raw(o, "{\"" KINETO_PH "\": \"" KINETO_PH_COMPLETE "\", \"" KINETO_CAT "\": \"");
  json_raw(o, prof_cat_name(e->cat));
  json_raw(o, "\", \"" KINETO_NAME "\": ");
  json_str(o, e->name);
  lane_and_ts(c, e);
  json_raw(o, ", \"" KINETO_DUR "\": ");
  json_us(o, e->dur_ns);
  json_raw(o, ", \"" KINETO_ARGS "\": ");
  write_args(c, e, o);
  json_raw(o, "}");
  /* Flows only for real launch -> GPU pairs (Kineto also leaves orphan ends). */
  if (c->launches_gpu[i]) flow(c, KINETO_PH_FLOW_START, e->correlation, e);
  if (c->launch[i] >= 0) flow(c, KINETO_PH_FLOW_END, e->correlation, e);
}
