/* One event of the Chrome trace as Kineto writes it: a complete ("X") event
 * with the args torch.profiler gives its category, plus ours on CPU ops (op
 * kind, flops, bytes) and kernels (cluster, static/dynamic shared memory);
 * then, for a launch call and for a GPU activity it launched, the two ends of
 * the "ac2g" flow that draws the arrow between them. */
#include "attnprof/prof.h"
#include "prof/io/chrome.h"
#include "prof/io/kineto_keys.h"
#include "prof/analysis/nest.h"

typedef struct {
  json_out *o;
  int n;
} args_w;

static void arg(args_w *a, const char *key) {
  if (a->n++) json_raw(a->o, ", ");
  json_key(a->o, key);
}

static void arg_int(args_w *a, const char *key, int64_t v) {
  arg(a, key);
  json_int(a->o, v);
}

static void arg_dim3(args_w *a, const char *key, const int32_t v[3]) {
  arg(a, key);
  for (int i = 0; i < 3; i++) {
    json_raw(a->o, i ? ", " : "[");
    json_int(a->o, v[i]);
  }
  json_raw(a->o, "]");
}

static const prof_device *device_of(const prof_trace *t, int id) {
  for (size_t i = 0; i < prof_trace_device_count(t); i++)
    if (prof_trace_device(t, i)->id == id) return prof_trace_device(t, i);
  return NULL;
}

static int gpu_device(const prof_event *e) { return e->device >= 0 ? e->device : (int)e->pid; }

/* Our occupancy (occupancy.c, opt-in shared memory and clusters counted):
 * Kineto's "est. achieved occupancy %" when the event has no figure of its
 * own, the theoretical one, and Kineto main's "occupancy" detail. */
static void occupancy_args(args_w *a, const prof_footprint *fp, const prof_device *d) {
  prof_occupancy o;
  if (prof_occupancy_compute(fp, d, &o)) return;
  if (fp->occupancy_pct_in_file < 0) {
    arg(a, KINETO_ARG_OCCUPANCY);
    json_num(a->o, o.achieved_est_pct);
  }
  arg(a, ATTNPROF_ARG_THEORETICAL_OCCUPANCY);
  json_num(a->o, o.theoretical_pct);
  char lim[64];
  arg(a, KINETO_ARG_OCCUPANCY_DETAIL);
  json_raw(a->o, "{\"" KINETO_OCC_ACTIVE_BLOCKS "\": ");
  json_num(a->o, o.active_blocks);
  json_raw(a->o, ", \"" KINETO_OCC_LIMITING "\": ");
  json_str(a->o, prof_occupancy_limit_names(o.limiting, lim, sizeof lim));
  json_raw(a->o, "}");
}

static void kernel_args(const chrome_ctx *c, const prof_event *e, args_w *a) {
  const prof_footprint *fp = &e->fp;
  arg_int(a, KINETO_ARG_REGISTERS, fp->registers_per_thread);
  arg_int(a, KINETO_ARG_SHARED_MEMORY,
          (int64_t)fp->static_shared_memory + fp->dynamic_shared_memory);
  const prof_device *d = device_of(c->t, gpu_device(e));
  if (d && d->num_sms > 0) { /* Kineto's meaning: work per SM, not blocks resident */
    double blocks = (double)fp->grid[0] * fp->grid[1] * fp->grid[2] / d->num_sms;
    int warp = d->warp_size > 0 ? d->warp_size : 32;
    arg(a, KINETO_ARG_BLOCKS_PER_SM);
    json_num(a->o, blocks);
    arg(a, KINETO_ARG_WARPS_PER_SM);
    json_num(a->o, blocks * ((double)fp->block[0] * fp->block[1] * fp->block[2] / warp));
  }
  arg_dim3(a, KINETO_ARG_GRID, fp->grid);
  arg_dim3(a, KINETO_ARG_BLOCK, fp->block);
  if (fp->cluster[0] || fp->cluster[1] || fp->cluster[2]) arg_dim3(a, ATTNPROF_ARG_CLUSTER, fp->cluster);
  arg_int(a, ATTNPROF_ARG_STATIC_SHARED, fp->static_shared_memory);
  arg_int(a, ATTNPROF_ARG_DYNAMIC_SHARED, fp->dynamic_shared_memory);
  if (fp->occupancy_pct_in_file >= 0) {
    arg(a, KINETO_ARG_OCCUPANCY);
    json_num(a->o, fp->occupancy_pct_in_file);
  }
  if (fp->shared_memory_executed > 0) arg_int(a, ATTNPROF_ARG_SMEM_EXECUTED, fp->shared_memory_executed);
  if (fp->shared_memory_limit_optin) arg_int(a, ATTNPROF_ARG_SMEM_OPTIN, 1);
  if (fp->max_active_clusters > 0) arg_int(a, ATTNPROF_ARG_MAX_ACTIVE_CLUSTERS, fp->max_active_clusters);
  if (fp->graph_id) arg_int(a, ATTNPROF_ARG_GRAPH_ID, (int64_t)fp->graph_id);
  if (d) occupancy_args(a, fp, d);
}

/* device, stream, correlation: every GPU row has them (HTA needs stream and
 * correlation to find GPU work). */
static void gpu_args(const prof_event *e, args_w *a) {
  arg_int(a, KINETO_ARG_DEVICE, gpu_device(e));
  arg_int(a, KINETO_ARG_STREAM, e->stream >= 0 ? e->stream : e->tid);
  arg_int(a, KINETO_ARG_CORRELATION, e->correlation);
}

static void transfer_args(const prof_event *e, args_w *a) {
  arg_int(a, KINETO_ARG_BYTES, e->bytes);
  if (e->dur_ns > 0) {
    arg(a, KINETO_ARG_BANDWIDTH);
    json_num(a->o, (double)e->bytes / (double)e->dur_ns); /* bytes per ns = GB/s */
  }
}

static void cpu_op_args(const prof_event *e, args_w *a) {
  arg(a, ATTNPROF_ARG_OP_KIND);
  json_str(a->o, prof_kind_name(e->kind));
  arg(a, ATTNPROF_ARG_FLOPS);
  json_num(a->o, e->flops);
  arg_int(a, KINETO_ARG_BYTES, e->bytes);
}

static void write_args(const chrome_ctx *c, const prof_event *e, json_out *o) {
  args_w a = {o, 0};
  json_raw(o, "{");
  if (e->external_id) arg_int(&a, KINETO_ARG_EXTERNAL_ID, e->external_id);
  switch (e->cat) {
  case PROF_CAT_CPU_OP: cpu_op_args(e, &a); break;
  case PROF_CAT_CUDA_RUNTIME:
  case PROF_CAT_CUDA_DRIVER:
    if (e->cbid >= 0) arg_int(&a, KINETO_ARG_CBID, e->cbid);
    arg_int(&a, KINETO_ARG_CORRELATION, e->correlation);
    break;
  case PROF_CAT_KERNEL: gpu_args(e, &a), kernel_args(c, e, &a); break;
  case PROF_CAT_GPU_MEMCPY:
  case PROF_CAT_GPU_MEMSET: gpu_args(e, &a), transfer_args(e, &a); break;
  case PROF_CAT_CUDA_SYNC: gpu_args(e, &a); break;
  default: break;
  }
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
