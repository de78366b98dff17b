/* From parsed fields to the event model: one traceEvents element becomes a
 * prof_event (or is counted as skipped, with the reason), a deviceProperties
 * entry a prof_device, "process_name" rows the trace's process; and the
 * warnings that say what was skipped. Kineto's args mean different things per
 * category (a kernel's "device" and "stream", a memcpy's "bytes"), so the
 * mapping waits until the whole event object has been read. */
#include <ctype.h>
#include <string.h>

#include "prof/io/chrome_reader.h"
#include "prof/io/kineto_keys.h"
#include "prof/analysis/nest.h"

enum { MAX_DEVICES = 64 }; /* more is no real machine; the rest are counted as bad */

/* Exact category names only: an unknown one is skipped, never "other". */
static int known_cat(const char *name, prof_cat *out) {
  for (int c = 0; name && c < PROF_CAT_COUNT; c++)
    if (!strcmp(prof_cat_name((prof_cat)c), name)) return *out = (prof_cat)c, 1;
  return 0;
}

static void note_category(prof_read_stats *st, const char *name) {
  st->unknown_category++;
  int i = 0;
  while (i < st->n_categories && strcmp(st->categories[i].name, name)) i++;
  if (i == st->n_categories) {
    if (i == PROF_READ_MAX_CATEGORIES) return; /* listed names are full; still counted */
    snprintf(st->categories[i].name, sizeof st->categories[i].name, "%s", name);
    st->n_categories++;
  }
  st->categories[i].count++;
}

static void note_phase(prof_read_stats *st, const char *ph) {
  st->unsupported_phase++;
  char c = ph[0] && isprint((unsigned char)ph[0]) ? ph[0] : '?';
  size_t n = strlen(st->phases);
  if (!strchr(st->phases, c) && n + 1 < sizeof st->phases) st->phases[n] = c;
}

/* "Memcpy DtoD (Device -> Device)" -> PROF_MEMCPY_DTOD, as CUPTI names them. */
static int memcpy_kind(const char *name) {
  static const struct {
    const char *tag;
    int kind;
  } kinds[] = {{"HtoD", PROF_MEMCPY_HTOD},
               {"DtoH", PROF_MEMCPY_DTOH},
               {"DtoD", PROF_MEMCPY_DTOD},
               {"HtoH", PROF_MEMCPY_HTOH},
               {"PtoP", PROF_MEMCPY_PTOP}};
  const char *p = strstr(name, "Memcpy ");
  for (size_t i = 0; p && i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strncmp(p + 7, kinds[i].tag, 4)) return kinds[i].kind;
  return PROF_MEMCPY_UNKNOWN;
}

static int32_t clamp32(int64_t v) { return v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int32_t)v; }

/* Kineto's "shared memory" is static + dynamic in one figure; ours also
 * splits it. Unsplit, it is taken as dynamic: only dynamic shared memory can
 * exceed 48 KiB, and the occupancy calculator needs the sum either way. */
static void footprint(const rd_event *r, prof_footprint *fp) {
  for (int i = 0; i < 3; i++) {
    fp->grid[i] = clamp32(r->grid[i]);
    fp->block[i] = clamp32(r->block[i]);
    fp->cluster[i] = clamp32(r->cluster[i]);
  }
  fp->registers_per_thread = clamp32(r->registers);
  if (r->has & (RD_HAS_STATIC_SMEM | RD_HAS_DYNAMIC_SMEM)) {
    fp->static_shared_memory = clamp32(r->static_smem);
    fp->dynamic_shared_memory = clamp32(r->dynamic_smem);
  } else {
    fp->dynamic_shared_memory = clamp32(r->smem);
  }
  fp->occupancy_pct_in_file = r->has & RD_HAS_OCCUPANCY ? r->occupancy : -1;
  fp->shared_memory_executed = clamp32(r->smem_executed);
  fp->shared_memory_limit_optin = clamp32(r->smem_optin);
  fp->max_active_clusters = clamp32(r->max_active_clusters);
  fp->graph_id = (uint32_t)r->graph_id;
}

/* GPU rows: pid is the device and tid the stream unless args say otherwise. */
static void gpu_fields(const rd_event *r, prof_event *e) {
  int64_t dev = r->has & RD_HAS_DEVICE ? r->device : e->pid;
  int64_t stream = r->has & RD_HAS_STREAM ? r->stream : e->tid;
  e->device = dev >= 0 && dev <= INT32_MAX ? (int32_t)dev : -1;
  e->stream = stream >= -1 && stream <= INT32_MAX ? (int32_t)stream : -1;
  e->kind = e->cat == PROF_CAT_KERNEL       ? PROF_KIND_KERNEL
            : e->cat == PROF_CAT_GPU_MEMCPY ? PROF_KIND_MEMCPY
            : e->cat == PROF_CAT_GPU_MEMSET ? PROF_KIND_MEMSET
                                            : PROF_KIND_OTHER;
  if (e->cat == PROF_CAT_GPU_MEMCPY) e->memcpy_kind = memcpy_kind(e->name);
  if (e->cat == PROF_CAT_KERNEL) footprint(r, &e->fp);
}

static int is_gpu_row(prof_cat c) {
  return prof_cat_is_gpu_activity(c) || c == PROF_CAT_GPU_USER_ANNOTATION ||
         c == PROF_CAT_CUDA_SYNC;
}

static int keep_complete(rd_model *m) {
  const rd_event *r = &m->ev;
  prof_read_stats *st = m->stats;
  prof_cat cat;
  if (!known_cat(r->cat.s ? r->cat.s : "", &cat))
    return note_category(st, r->cat.len ? r->cat.s : "(none)"), 0;
  if (!(r->has & RD_HAS_TS)) return st->missing_time++, 0;
  prof_event e = prof_event_init(cat, r->name.s ? r->name.s : "");
  e.start_ns = r->ts_ns;
  e.dur_ns = r->has & RD_HAS_DUR ? r->dur_ns : 0;
  if (e.dur_ns > RD_DUR_TOTAL_LIMIT_NS - m->dur_total_ns) st->bad_values++, e.dur_ns = 0;
  m->dur_total_ns += e.dur_ns;
  e.pid = r->pid;
  e.tid = r->tid;
  e.correlation = r->correlation;
  e.external_id = r->external_id;
  e.bytes = r->bytes;
  e.flops = r->flops;
  if (r->has & RD_HAS_CBID) e.cbid = (int32_t)r->cbid;
  if (is_gpu_row(cat)) {
    gpu_fields(r, &e);
  } else if (cat == PROF_CAT_USER_ANNOTATION) {
    e.roof = (prof_roof){r->roof_time_us, r->roof_copy_gbps, r->roof_peak_tflops};
  } else if (cat == PROF_CAT_CPU_OP) {
    prof_kind pk;
    int k = prof_kind_from_name(r->op_kind.s, &pk) ? -1 : (int)pk;
    e.kind = k >= 0 ? (prof_kind)k : PROF_KIND_OTHER;
  }
  if (prof_cat_is_host(cat) && !m->has_host_pid) m->first_host_pid = e.pid, m->has_host_pid = 1;
  if (m->has_last_ts && e.start_ns < m->last_ts_ns) st->out_of_order++;
  m->last_ts_ns = e.start_ns, m->has_last_ts = 1;
  if (prof_trace_append(m->t, &e, NULL)) return m->oom = 1, -1;
  st->events++;
  return 0;
}

/* "process_name" and "process_labels" rows: which pid is the CPU process. */
static void metadata(rd_model *m) {
  const rd_event *r = &m->ev;
  m->stats->metadata++;
  if (!r->name.s || !(r->has & RD_HAS_PID)) return;
  int is_name = !strcmp(r->name.s, KINETO_META_PROCESS_NAME);
  int is_labels = !strcmp(r->name.s, KINETO_META_PROCESS_LABELS);
  if (!is_name && !is_labels) return;
  int i = 0;
  while (i < m->n_procs && m->procs[i].pid != r->pid) i++;
  if (i == m->n_procs) {
    if (i == RD_MAX_PROCS) return;
    m->procs[m->n_procs++] = (rd_proc){r->pid, NULL, 0};
  }
  if (is_name && r->meta_name.len) prof_trace_intern(m->t, r->meta_name.s, &m->procs[i].name);
  if (is_labels && r->labels.s && !strcmp(r->labels.s, KINETO_LABEL_CPU)) m->procs[i].is_cpu = 1;
}

int rd_finish_event(rd_model *m) {
  const char *ph = m->ev.ph.s ? m->ev.ph.s : "";
  if (!strcmp(ph, KINETO_PH_COMPLETE)) return keep_complete(m);
  if (!strcmp(ph, KINETO_PH_METADATA)) return metadata(m), 0;
  if (!strcmp(ph, KINETO_PH_FLOW_START) || !strcmp(ph, KINETO_PH_FLOW_END) || !strcmp(ph, "t"))
    return m->stats->flows++, 0; /* launches are linked by correlation id instead */
  note_phase(m->stats, ph[0] ? ph : "?");
  return 0;
}

void rd_finish_device(rd_model *m) {
  prof_device *d = &m->dev.d;
  if (!m->dev.has_id) d->id = (int)m->stats->devices;
  d->name[sizeof d->name - 1] = 0;
  if (prof_trace_device_count(m->t) >= MAX_DEVICES) {
    m->stats->bad_values++;
    return;
  }
  prof_trace_add_device(m->t, d);
  m->stats->devices++;
}

void rd_finish_trace(rd_model *m) {
  if (m->has_base) prof_trace_set_epoch_offset(m->t, m->base_ns);
  const rd_proc *p = NULL;
  for (int i = 0; i < m->n_procs && !p; i++)
    if (m->procs[i].is_cpu) p = &m->procs[i];
  for (int i = 0; i < m->n_procs && !p; i++)
    if (m->has_host_pid && m->procs[i].pid == m->first_host_pid) p = &m->procs[i];
  if (p) prof_trace_set_process(m->t, p->pid, p->name);
  else if (m->has_host_pid) prof_trace_set_process(m->t, m->first_host_pid, NULL);
}

/* ---- warnings ------------------------------------------------------------ */

void prof_read_stats_print(FILE *f, const char *prefix, const prof_read_stats *s) {
  if (!f || !s) return;
  if (s->unknown_category) {
    fprintf(f, "%sskipped %lld events of categories attnprof does not model:", prefix,
            (long long)s->unknown_category);
    for (int i = 0; i < s->n_categories; i++)
      fprintf(f, "%s %s (%lld)", i ? "," : "", s->categories[i].name,
              (long long)s->categories[i].count);
    fprintf(f, "%s\n", s->n_categories == PROF_READ_MAX_CATEGORIES ? ", ..." : "");
  }
  if (s->unsupported_phase)
    fprintf(f, "%sskipped %lld events of phases not modelled (only complete 'X' events are): %s\n",
            prefix, (long long)s->unsupported_phase, s->phases);
  if (s->missing_time)
    fprintf(f, "%sskipped %lld events without a usable timestamp\n", prefix,
            (long long)s->missing_time);
  if (s->not_an_event)
    fprintf(f, "%sskipped %lld elements of traceEvents that are not objects\n", prefix,
            (long long)s->not_an_event);
  if (s->bad_values)
    fprintf(f, "%signored %lld fields of the wrong type or out of range\n", prefix,
            (long long)s->bad_values);
  if (s->truncated_strings)
    fprintf(f, "%scut %lld strings longer than %d bytes\n", prefix, (long long)s->truncated_strings,
            PROF_READ_NAME_MAX);
}
