/* The processes of a trace and NCCL kernel names (prof_trace_pids,
 * prof_is_comm_kernel: attnprof/prof/ranks.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/nest.h"
#include "attnprof/prof/ranks.h"
#include "prof/model/map.h"
#include "prof/analysis/status.h"

/* NCCL's kernels (ncclDevKernel_AllReduce_..., ncclKernel_...): communication,
 * also as "void ncclKernel_..." and mangled, as CUPTI records them
 * ("_Z24ncclDevKernel_SendRecv24...", "_ZN..." for a nested name). */
int prof_is_comm_kernel(const char *name) {
  if (!name) return 0;
  if (!strncmp(name, "void ", 5)) name += 5;
  if (name[0] == '_' && name[1] == 'Z') {
    name += 2;
    if (*name == 'N') name++;
    while (*name >= '0' && *name <= '9') name++;
  }
  return !strncmp(name, "nccl", 4);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int64_t trace_pids(const prof_trace *t, int64_t **out);

attn_status prof_trace_pids(const prof_trace *t, int64_t **out, int64_t *n) {
  return prof_count_status(trace_pids(t, out), n, "process list");
}

static int64_t trace_pids(const prof_trace *t, int64_t **out) {
  prof_map seen;
  prof_map_init(&seen);
  size_t n = 0, cap = 8;
  int64_t *pids = malloc(cap * sizeof *pids), last = 0;
  int failed = !pids;
  for (size_t i = 0; !failed && i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (!prof_cat_is_host(e->cat) || (n && e->pid == last)) continue;
    last = e->pid;
    int64_t r = prof_map_put(&seen, (uint64_t)e->pid, 0, (int64_t)n);
    if (r < 0) {
      failed = 1;
      break;
    }
    if ((size_t)r < n) continue;
    if (n == cap) {
      int64_t *grown = realloc(pids, (cap *= 2) * sizeof *grown);
      if (!grown) {
        failed = 1;
        break;
      }
      pids = grown;
    }
    pids[n++] = e->pid;
  }
  prof_map_free(&seen);
  if (failed) {
    free(pids);
    *out = NULL;
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to list a trace's processes");
    return -1;
  }
  qsort(pids, n, sizeof *pids, cmp_i64);
  *out = pids;
  return (int64_t)n;
}
