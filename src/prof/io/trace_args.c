/* Which args an event carries (see trace_args.h): Kineto's per category
 * (External id; cbid and correlation on API calls; device, stream and
 * correlation on GPU rows; the kernel footprint; bytes and bandwidth on
 * copies), ours on CPU ops (op kind, flops, bytes) and kernels (cluster,
 * static/dynamic shared memory, CUPTI extras, the CUDA graph that ran it,
 * our occupancy). */
#include "prof/io/trace_args.h"

#include "prof/io/kineto_keys.h"

static const prof_device *device_of(const prof_trace *t, int id) {
  for (size_t i = 0; i < prof_trace_device_count(t); i++)
    if (prof_trace_device(t, i)->id == id) return prof_trace_device(t, i);
  return NULL;
}

static int gpu_device(const prof_event *e) { return e->device >= 0 ? e->device : (int)e->pid; }

/* Our occupancy (occupancy.c, opt-in shared memory and clusters counted):
 * Kineto's "est. achieved occupancy %" when the event has no figure of its
 * own, the theoretical one, and Kineto main's "occupancy" detail. */
static void occupancy_args(trace_args_sink *s, const prof_footprint *fp, const prof_device *d) {
  prof_occupancy o;
  if (prof_occupancy_compute(fp, d, &o)) return;
  if (fp->occupancy_pct_in_file < 0) s->num(s, KINETO_ARG_OCCUPANCY, o.achieved_est_pct);
  s->num(s, ATTNPROF_ARG_THEORETICAL_OCCUPANCY, o.theoretical_pct);
  char lim[64];
  s->occupancy(s, KINETO_ARG_OCCUPANCY_DETAIL, o.active_blocks,
               prof_occupancy_limit_names(o.limiting, lim, sizeof lim));
}

void trace_args_footprint(const prof_footprint *fp, const prof_device *d, trace_args_sink *s) {
  s->i64(s, KINETO_ARG_REGISTERS, fp->registers_per_thread);
  s->i64(s, KINETO_ARG_SHARED_MEMORY,
         (int64_t)fp->static_shared_memory + fp->dynamic_shared_memory);
  if (d && d->num_sms > 0) { /* Kineto's meaning: work per SM, not blocks resident */
    double blocks = (double)fp->grid[0] * fp->grid[1] * fp->grid[2] / d->num_sms;
    int warp = d->warp_size > 0 ? d->warp_size : 32;
    s->num(s, KINETO_ARG_BLOCKS_PER_SM, blocks);
    s->num(s, KINETO_ARG_WARPS_PER_SM,
           blocks * ((double)fp->block[0] * fp->block[1] * fp->block[2] / warp));
  }
  s->dim3(s, KINETO_ARG_GRID, fp->grid);
  s->dim3(s, KINETO_ARG_BLOCK, fp->block);
  if (fp->cluster[0] || fp->cluster[1] || fp->cluster[2])
    s->dim3(s, ATTNPROF_ARG_CLUSTER, fp->cluster);
  s->i64(s, ATTNPROF_ARG_STATIC_SHARED, fp->static_shared_memory);
  s->i64(s, ATTNPROF_ARG_DYNAMIC_SHARED, fp->dynamic_shared_memory);
  if (fp->occupancy_pct_in_file >= 0) s->num(s, KINETO_ARG_OCCUPANCY, fp->occupancy_pct_in_file);
  if (fp->shared_memory_executed > 0)
    s->i64(s, ATTNPROF_ARG_SMEM_EXECUTED, fp->shared_memory_executed);
  if (fp->shared_memory_limit_optin) s->i64(s, ATTNPROF_ARG_SMEM_OPTIN, 1);
  if (fp->max_active_clusters > 0)
    s->i64(s, ATTNPROF_ARG_MAX_ACTIVE_CLUSTERS, fp->max_active_clusters);
  if (fp->graph_id)
    s->i64(s, ATTNPROF_ARG_GRAPH_ID, (int64_t)fp->graph_id); /* replayed by a CUDA graph */
  if (d) occupancy_args(s, fp, d);
}

static void kernel_args(const prof_trace *t, const prof_event *e, trace_args_sink *s) {
  const prof_device *d = device_of(t, gpu_device(e));
  if (s->footprint) s->footprint(s, &e->fp, d);
  else trace_args_footprint(&e->fp, d, s);
}

/* device, stream, correlation: every GPU row has them (HTA needs stream and
 * correlation to find GPU work). */
static void gpu_args(const prof_event *e, trace_args_sink *s) {
  s->i64(s, KINETO_ARG_DEVICE, gpu_device(e));
  s->i64(s, KINETO_ARG_STREAM, e->stream >= 0 ? e->stream : e->tid);
  s->i64(s, KINETO_ARG_CORRELATION, e->correlation);
}

static void transfer_args(const prof_event *e, trace_args_sink *s) {
  s->i64(s, KINETO_ARG_BYTES, e->bytes);
  if (e->dur_ns > 0)
    s->num(s, KINETO_ARG_BANDWIDTH, (double)e->bytes / (double)e->dur_ns); /* GB/s */
}

/* A backend's roofline point: per-forward figures and the roofs, where known. */
static void roof_args(const prof_event *e, trace_args_sink *s) {
  if (!(e->roof.time_us > 0)) return;
  s->num(s, ATTNPROF_ARG_FLOPS, e->flops);
  s->i64(s, KINETO_ARG_BYTES, e->bytes);
  s->num(s, ATTNPROF_ARG_ROOF_TIME_US, e->roof.time_us);
  if (e->roof.copy_gbps > 0) s->num(s, ATTNPROF_ARG_ROOF_COPY_GBPS, e->roof.copy_gbps);
  if (e->roof.peak_tflops > 0) s->num(s, ATTNPROF_ARG_ROOF_PEAK_TFLOPS, e->roof.peak_tflops);
}

void trace_args_emit(const prof_trace *t, const prof_event *e, trace_args_sink *s) {
  if (e->external_id) s->i64(s, KINETO_ARG_EXTERNAL_ID, e->external_id);
  switch (e->cat) {
    case PROF_CAT_CPU_OP:
      s->str(s, ATTNPROF_ARG_OP_KIND, prof_kind_name(e->kind));
      s->num(s, ATTNPROF_ARG_FLOPS, e->flops);
      s->i64(s, KINETO_ARG_BYTES, e->bytes);
      break;
    case PROF_CAT_CUDA_RUNTIME:
    case PROF_CAT_CUDA_DRIVER:
      if (e->cbid >= 0) s->i64(s, KINETO_ARG_CBID, e->cbid);
      s->i64(s, KINETO_ARG_CORRELATION, e->correlation);
      break;
    case PROF_CAT_KERNEL:
      gpu_args(e, s), kernel_args(t, e, s);
      break;
    case PROF_CAT_GPU_MEMCPY:
    case PROF_CAT_GPU_MEMSET:
      gpu_args(e, s), transfer_args(e, s);
      break;
    case PROF_CAT_CUDA_SYNC:
      gpu_args(e, s);
      break;
    case PROF_CAT_USER_ANNOTATION:
      roof_args(e, s);
      break;
    default:
      break;
  }
}
