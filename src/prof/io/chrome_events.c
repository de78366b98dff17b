/* One event of the Chrome trace as Kineto writes it: a complete ("X") event
 * with the args torch.profiler gives its category, plus ours on CPU ops (op
 * kind, flops, bytes) and kernels (cluster, static/dynamic shared memory);
 * then, for a launch call and for a GPU activity it launched, the two ends of
 * the "ac2g" flow that draws the arrow between them. */
#include "attnprof/prof.h"
#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/io/trace_args.h"

typedef struct {
  trace_args_sink sink; /* first: the sink is the writer */
  json_out *o;
  int n;
} args_w;

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

static void arg_occupancy(trace_args_sink *s, const char *key, double active, const char *limiting) {
  args_w *a = (args_w *)s;
  arg(a, key);
  json_raw(a->o, "{\"" KINETO_OCC_ACTIVE_BLOCKS "\": ");
  json_num(a->o, active);
  json_raw(a->o, ", \"" KINETO_OCC_LIMITING "\": ");
  json_str(a->o, limiting);
  json_raw(a->o, "}");
}

static void write_args(const chrome_ctx *c, const prof_event *e, json_out *o) {
  args_w a = {{arg_i64, arg_num, arg_str, arg_dim3, arg_occupancy}, o, 0};
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
  json_raw(o, "{\"" KINETO_PH "\": ");
  json_str(o, ph);
  json_raw(o, ", \"" KINETO_ID "\": ");
  json_int(o, id);
  lane_and_ts(c, at);
  json_raw(o, ", \"" KINETO_CAT "\": \"" KINETO_FLOW_LAUNCH "\", \"" KINETO_NAME
              "\": \"" KINETO_FLOW_LAUNCH "\"");
  if (ph[0] == KINETO_PH_FLOW_END[0]) json_raw(o, ", \"" KINETO_BP "\": \"" KINETO_BP_ENCLOSING "\"");
  json_raw(o, "}");
}

void chrome_write_event(chrome_ctx *c, size_t i) {
  const prof_event *e = prof_trace_at(c->t, i);
  json_out *o = &c->o;
  chrome_next(c);
  json_raw(o, "{\"" KINETO_PH "\": \"" KINETO_PH_COMPLETE "\", ");
  json_key(o, KINETO_CAT);
  json_str(o, prof_cat_name(e->cat));
  json_raw(o, ", ");
  json_key(o, KINETO_NAME);
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
