/* Communication hidden under compute (prof_overlap_summarize): per device,
 * the union of NCCL kernel intervals (prof_is_comm_kernel, nest.h) against the union of the other
 * kernels' intervals, overall and per user range (the step the work was
 * launched in, through prof_attribute). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof/ranks.h"
#include "prof/analysis/nest.h"
#include "prof/analysis/status.h"

typedef struct {
  int64_t a, b;
} span;

typedef struct {
  span *v;
  size_t n, cap;
} spans;

static int spans_add(spans *s, int64_t a, int64_t b) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    span *v = realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v, s->cap = cap;
  }
  s->v[s->n++] = (span){a, b};
  return 0;
}

static int span_cmp(const void *x, const void *y) {
  const span *p = x, *q = y;
  return p->a < q->a ? -1 : p->a > q->a;
}

/* Sorts and merges in place into disjoint spans; returns their total length. */
static int64_t spans_union(spans *s) {
  if (!s->n) return 0;
  qsort(s->v, s->n, sizeof *s->v, span_cmp);
  size_t w = 0;
  for (size_t i = 1; i < s->n; i++) {
    if (s->v[i].a <= s->v[w].b) {
      if (s->v[i].b > s->v[w].b) s->v[w].b = s->v[i].b;
    } else {
      s->v[++w] = s->v[i];
    }
  }
  s->n = w + 1;
  int64_t len = 0;
  for (size_t i = 0; i < s->n; i++) len += s->v[i].b - s->v[i].a;
  return len;
}

/* Length of the intersection of two disjoint sorted span lists. */
static int64_t spans_meet(const spans *x, const spans *y) {
  int64_t len = 0;
  for (size_t i = 0, j = 0; i < x->n && j < y->n;) {
    int64_t a = x->v[i].a > y->v[j].a ? x->v[i].a : y->v[j].a;
    int64_t b = x->v[i].b < y->v[j].b ? x->v[i].b : y->v[j].b;
    if (b > a) len += b - a;
    if (x->v[i].b < y->v[j].b) i++;
    else j++;
  }
  return len;
}

static int gpu_device(const prof_event *e) { return e->device >= 0 ? e->device : (int)e->pid; }

/* One row being built: its kernels' spans. */
typedef struct {
  prof_overlap_row row;
  spans comp, comm;
} group;

typedef struct {
  group *g;
  size_t n, cap;
} groups;

static group *group_find(groups *gs, int device, const char *step) {
  for (size_t i = 0; i < gs->n; i++)
    if (gs->g[i].row.device == device && !strcmp(gs->g[i].row.step, step)) return &gs->g[i];
  if (gs->n == gs->cap) {
    size_t cap = gs->cap ? 2 * gs->cap : 16;
    group *v = realloc(gs->g, cap * sizeof *v);
    if (!v) return NULL;
    gs->g = v, gs->cap = cap;
  }
  group *g = &gs->g[gs->n++];
  memset(g, 0, sizeof *g);
  g->row.device = device;
  g->row.step = step;
  return g;
}

static int add_kernel(groups *gs, int device, const char *step, const prof_event *e) {
  group *g = group_find(gs, device, step);
  if (!g) return -1;
  int comm = prof_is_comm_kernel(e->name);
  if (comm) g->row.comm_kernels++;
  else g->row.compute_kernels++;
  return spans_add(comm ? &g->comm : &g->comp, e->start_ns, e->start_ns + e->dur_ns);
}

static int row_cmp(const void *x, const void *y) {
  const prof_overlap_row *p = x, *q = y;
  if (p->device != q->device) return p->device < q->device ? -1 : 1;
  return (strcmp(q->step, "(all)") == 0) - (strcmp(p->step, "(all)") == 0);
}

static int64_t overlap_summarize(const prof_trace *t, prof_overlap_row **out);

attn_status prof_overlap_summarize(const prof_trace *t, prof_overlap_row **out, int64_t *n) {
  return prof_count_status(overlap_summarize(t, out), n, "overlap");
}

static int64_t overlap_summarize(const prof_trace *t, prof_overlap_row **out) {
  *out = NULL;
  int64_t *attr = NULL;
  if (prof_attribute(t, &attr)) return -1;
  groups gs = {0};
  int bad = 0;
  for (size_t i = 0; !bad && i < prof_trace_count(t); i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (e->cat != PROF_CAT_KERNEL || e->dur_ns <= 0) continue;
    const char *step = attr[i] >= 0 ? prof_trace_at(t, (size_t)attr[i])->name : "(none)";
    bad = add_kernel(&gs, gpu_device(e), "(all)", e) || add_kernel(&gs, gpu_device(e), step, e);
  }
  free(attr);
  prof_overlap_row *rows = bad ? NULL : malloc((gs.n ? gs.n : 1) * sizeof *rows);
  for (size_t i = 0; rows && i < gs.n; i++) {
    group *g = &gs.g[i];
    g->row.compute_us = (double)spans_union(&g->comp) / 1e3;
    g->row.comm_us = (double)spans_union(&g->comm) / 1e3;
  }
  for (size_t i = 0; rows && i < gs.n; i++) {
    group *g = &gs.g[i], *all = group_find(&gs, g->row.device, "(all)");
    /* hidden under any compute of the device, whichever step launched it */
    g->row.hidden_us = (double)spans_meet(&g->comm, &all->comp) / 1e3;
    g->row.hidden_share = g->row.comm_us > 0 ? g->row.hidden_us / g->row.comm_us : NAN;
    rows[i] = g->row;
  }
  for (size_t i = 0; i < gs.n; i++) free(gs.g[i].comp.v), free(gs.g[i].comm.v);
  free(gs.g);
  if (!rows) return -1;
  /* stable order: devices ascending, "(all)" first, steps as they came */
  for (size_t i = 1; i < gs.n; i++)
    for (size_t j = i; j > 0 && row_cmp(&rows[j - 1], &rows[j]) > 0; j--) {
      prof_overlap_row tmp = rows[j];
      rows[j] = rows[j - 1];
      rows[j - 1] = tmp;
    }
  *out = rows;
  return (int64_t)gs.n;
}

void prof_print_overlap(FILE *f, const prof_overlap_row *rows, int64_t n) {
  fprintf(f, "%-6s  %-16s  %8s  %12s  %8s  %12s  %12s  %7s\n", "device", "step", "kernels",
          "compute_us", "nccl", "comm_us", "hidden_us", "hidden");
  for (int64_t i = 0; i < n; i++) {
    const prof_overlap_row *r = &rows[i];
    char share[16];
    if (isnan(r->hidden_share)) snprintf(share, sizeof share, "-");
    else snprintf(share, sizeof share, "%.1f%%", 100 * r->hidden_share);
    fprintf(f, "%-6d  %-16.16s  %8lld  %12.1f  %8lld  %12.1f  %12.1f  %7s\n", r->device, r->step,
            (long long)r->compute_kernels, r->compute_us, (long long)r->comm_kernels, r->comm_us,
            r->hidden_us, share);
  }
}
