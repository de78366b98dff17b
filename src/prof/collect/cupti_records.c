/* CUPTI activity records -> prof_event (see cupti_records.h).
 *
 * Conventions, as Kineto writes them: GPU activities have pid = device and
 * tid = stream; API calls pid/tid = OS process/thread (the collector asks
 * CUPTI for system thread ids, so they match the CPU collector's); NVTX
 * push/pop ranges become user_annotation events on the pushing thread, the
 * ranges an unmodified program's GPU work is attributed to. Times are
 * already on attn_clock_ns (the collector registers it as CUPTI's clock). */
#include "prof/collect/cupti_records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An NVTX range between its start and end records. */
typedef struct {
  char *name;
  uint32_t id;
  int64_t start_ns, pid, tid;
} open_range;

enum { MAX_CONTEXTS = 64, MAX_OPEN_RANGES = 4096 };

struct cupti_conv {
  cupti_cbid_name_fn name_of;
  open_range *open;
  size_t n_open, cap_open;
  uint32_t ctx_id[MAX_CONTEXTS], ctx_dev[MAX_CONTEXTS];
  int n_ctx;
  char name_buf[128];
  int64_t clock_offset; /* subtracted from every time: 0 when CUPTI uses our clock */
  char *held_name;      /* the name of the range last closed, freed at the next call */
};

cupti_conv *cupti_conv_create(cupti_cbid_name_fn name_of) {
  cupti_conv *cv = calloc(1, sizeof *cv);
  if (!cv) return NULL;
  cv->name_of = name_of;
  return cv;
}

void cupti_conv_destroy(cupti_conv *cv) {
  if (!cv) return;
  for (size_t i = 0; i < cv->n_open; i++) free(cv->open[i].name);
  free(cv->open);
  free(cv->held_name);
  free(cv);
}

size_t cupti_conv_open_ranges(const cupti_conv *cv) { return cv->n_open; }

/* ---- names ---------------------------------------------------------------- */

const char *cupti_strip_version(const char *name, char *buf, size_t len) {
  snprintf(buf, len, "%s", name ? name : "");
  char *v = strstr(buf, "_v");
  /* Only a trailing "_v<digits>" is CUPTI's version suffix. */
  while (v) {
    char *p = v + 2;
    while (*p >= '0' && *p <= '9') p++;
    if (p > v + 2 && !*p) {
      *v = 0;
      break;
    }
    v = strstr(v + 2, "_v");
  }
  return buf;
}

static const char *copy_kind_name(unsigned k) {
  static const char *const names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                      "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

static const char *memory_kind_name(unsigned k) {
  static const char *const names[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                      "Array",   "Managed",  "Device Static", "Managed Static"};
  return k < sizeof names / sizeof names[0] ? names[k] : "Unknown";
}

const char *cupti_memcpy_name(unsigned copy_kind, unsigned src, unsigned dst, char *buf,
                              size_t len) {
  snprintf(buf, len, "Memcpy %s (%s -> %s)", copy_kind_name(copy_kind), memory_kind_name(src),
           memory_kind_name(dst));
  return buf;
}

const char *cupti_memset_name(unsigned memory_kind, char *buf, size_t len) {
  snprintf(buf, len, "Memset (%s)", memory_kind_name(memory_kind));
  return buf;
}

/* ---- one function per kind -------------------------------------------------- */

static void note_context(cupti_conv *cv, uint32_t ctx, uint32_t dev) {
  for (int i = 0; i < cv->n_ctx; i++)
    if (cv->ctx_id[i] == ctx) return;
  if (cv->n_ctx < MAX_CONTEXTS) cv->ctx_id[cv->n_ctx] = ctx, cv->ctx_dev[cv->n_ctx++] = dev;
}

static int device_of_context(const cupti_conv *cv, uint32_t ctx) {
  for (int i = 0; i < cv->n_ctx; i++)
    if (cv->ctx_id[i] == ctx) return (int)cv->ctx_dev[i];
  return 0;
}

static void gpu_place(prof_event *e, uint32_t dev, uint32_t stream, uint32_t corr) {
  e->device = (int32_t)dev;
  e->stream = (int32_t)stream;
  e->pid = dev;
  e->tid = stream;
  e->correlation = corr;
}

static void kernel(cupti_conv *cv, const CUpti_ActivityKernel10 *k, prof_event *e) {
  *e = prof_event_init(PROF_CAT_KERNEL, k->name ? k->name : "(unnamed kernel)");
  e->kind = PROF_KIND_KERNEL;
  e->start_ns = (int64_t)k->start;
  e->dur_ns = (int64_t)(k->end - k->start);
  gpu_place(e, k->deviceId, k->streamId, k->correlationId);
  note_context(cv, k->contextId, k->deviceId);
  prof_footprint *fp = &e->fp;
  fp->grid[0] = k->gridX, fp->grid[1] = k->gridY, fp->grid[2] = k->gridZ;
  fp->block[0] = k->blockX, fp->block[1] = k->blockY, fp->block[2] = k->blockZ;
  fp->cluster[0] = (int32_t)k->clusterX, fp->cluster[1] = (int32_t)k->clusterY;
  fp->cluster[2] = (int32_t)k->clusterZ;
  fp->registers_per_thread = k->registersPerThread;
  fp->static_shared_memory = k->staticSharedMemory;
  fp->dynamic_shared_memory = k->dynamicSharedMemory;
  fp->shared_memory_executed = (int32_t)k->sharedMemoryExecuted;
  fp->shared_memory_limit_optin = k->shmemLimitConfig == CUPTI_FUNC_SHMEM_LIMIT_OPTIN;
  fp->max_active_clusters = (int32_t)k->maxActiveClusters;
  fp->graph_id = k->graphId; /* its launch's correlation id ties it to cudaGraphLaunch */
}

static void memcpy_rec(cupti_conv *cv, const CUpti_ActivityMemcpy6 *m, prof_event *e) {
  *e = prof_event_init(PROF_CAT_GPU_MEMCPY, cupti_memcpy_name(m->copyKind, m->srcKind, m->dstKind,
                                                              cv->name_buf, sizeof cv->name_buf));
  e->kind = PROF_KIND_MEMCPY;
  e->start_ns = (int64_t)m->start;
  e->dur_ns = (int64_t)(m->end - m->start);
  e->bytes = (int64_t)m->bytes;
  e->memcpy_kind = m->copyKind;
  gpu_place(e, m->deviceId, m->streamId, m->correlationId);
  note_context(cv, m->contextId, m->deviceId);
}

static void memset_rec(cupti_conv *cv, const CUpti_ActivityMemset4 *m, prof_event *e) {
  *e = prof_event_init(PROF_CAT_GPU_MEMSET,
                       cupti_memset_name(m->memoryKind, cv->name_buf, sizeof cv->name_buf));
  e->kind = PROF_KIND_MEMSET;
  e->start_ns = (int64_t)m->start;
  e->dur_ns = (int64_t)(m->end - m->start);
  e->bytes = (int64_t)m->bytes;
  gpu_place(e, m->deviceId, m->streamId, m->correlationId);
  note_context(cv, m->contextId, m->deviceId);
}

static void api_rec(cupti_conv *cv, const CUpti_ActivityAPI *a, prof_event *e, int driver) {
  CUpti_CallbackDomain dom = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  const char *name = cv->name_of ? cv->name_of(dom, a->cbid) : NULL;
  if (!name) {
    snprintf(cv->name_buf, sizeof cv->name_buf, "%s cbid %u", driver ? "driver" : "runtime",
             a->cbid);
    name = cv->name_buf;
  }
  *e = prof_event_init(driver ? PROF_CAT_CUDA_DRIVER : PROF_CAT_CUDA_RUNTIME, name);
  e->start_ns = (int64_t)a->start;
  e->dur_ns = (int64_t)(a->end - a->start);
  e->pid = a->processId;
  e->tid = a->threadId;
  e->correlation = a->correlationId;
  e->cbid = (int32_t)a->cbid;
}

static void sync_rec(cupti_conv *cv, const CUpti_ActivitySynchronization2 *s, prof_event *e) {
  static const char *const names[] = {"Unknown Sync", "Event Sync", "Stream Wait Event",
                                      "Stream Sync", "Context Sync"};
  unsigned t = (unsigned)s->type < 5 ? (unsigned)s->type : 0;
  *e = prof_event_init(PROF_CAT_CUDA_SYNC, names[t]);
  e->start_ns = (int64_t)s->start;
  e->dur_ns = (int64_t)(s->end - s->start);
  int dev = device_of_context(cv, s->contextId);
  /* A lane of its own beside the stream (Kineto: stream + 1,000,000): a sync
   * overlaps the stream's kernels, and overlapping slices on one lane are
   * dropped by Perfetto. */
  gpu_place(e, (uint32_t)dev, s->streamId, s->correlationId);
  e->tid = 1000000 + (int64_t)(s->streamId == 0xffffffffu ? 0 : s->streamId);
}

/* ---- NVTX markers ------------------------------------------------------------ */

/* Open ranges are few (nesting depth times threads), so a linear search by id
 * with swap-removal beats a hash table here. */
static int range_start(cupti_conv *cv, const CUpti_ActivityMarker2 *m) {
  if (cv->n_open >= MAX_OPEN_RANGES) return -1;
  if (cv->n_open == cv->cap_open) {
    size_t cap = cv->cap_open ? 2 * cv->cap_open : 64;
    open_range *o = realloc(cv->open, cap * sizeof *o);
    if (!o) return -1;
    cv->open = o, cv->cap_open = cap;
  }
  open_range *r = &cv->open[cv->n_open];
  if (!(r->name = strdup(m->name ? m->name : ""))) return -1;
  r->id = m->id;
  r->start_ns = (int64_t)m->timestamp;
  int thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD;
  r->pid = thread ? m->objectId.pt.processId : 0;
  r->tid = thread ? m->objectId.pt.threadId : 0;
  cv->n_open++;
  return 0;
}

/* Closes the range of m->id into *e. */
static int range_end(cupti_conv *cv, const CUpti_ActivityMarker2 *m, prof_event *e) {
  size_t i = cv->n_open;
  while (i-- > 0 && cv->open[i].id != m->id) {}
  if (i >= cv->n_open) return -1;
  open_range r = cv->open[i];
  cv->open[i] = cv->open[--cv->n_open];
  free(cv->held_name);
  cv->held_name = r.name; /* alive until the caller has appended the event */
  *e = prof_event_init(PROF_CAT_USER_ANNOTATION, r.name);
  e->start_ns = r.start_ns;
  e->dur_ns = (int64_t)m->timestamp - r.start_ns;
  e->pid = r.pid;
  e->tid = r.tid;
  return 1;
}

static int marker(cupti_conv *cv, const CUpti_ActivityMarker2 *m, prof_event *e) {
  if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) return range_start(cv, m) ? -1 : 0;
  if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) return range_end(cv, m, e);
  return 0; /* instant marks and sync markers: not ranges */
}

void cupti_conv_set_clock_offset(cupti_conv *cv, int64_t offset) { cv->clock_offset = offset; }

static int convert(cupti_conv *cv, const CUpti_Activity *rec, prof_event *out) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernel(cv, (const CUpti_ActivityKernel10 *)rec, out);
      return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      memcpy_rec(cv, (const CUpti_ActivityMemcpy6 *)rec, out);
      return 1;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      memset_rec(cv, (const CUpti_ActivityMemset4 *)rec, out);
      return 1;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      api_rec(cv, (const CUpti_ActivityAPI *)rec, out, 0);
      return 1;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      api_rec(cv, (const CUpti_ActivityAPI *)rec, out, 1);
      return 1;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      sync_rec(cv, (const CUpti_ActivitySynchronization2 *)rec, out);
      return 1;
    case CUPTI_ACTIVITY_KIND_MARKER:
      return marker(cv, (const CUpti_ActivityMarker2 *)rec, out);
    default:
      return 0;
  }
}

int cupti_conv_record(cupti_conv *cv, const CUpti_Activity *rec, prof_event *out) {
  int r = convert(cv, rec, out);
  if (r > 0) out->start_ns -= cv->clock_offset;
  return r;
}
