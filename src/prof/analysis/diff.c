/* The diff of two traces (prof_diff_traces): per range name, the ops that
 * vanished (only in A), appeared (only in B), changed (count per call, or
 * device time per call beyond a threshold) or stayed the same.
 *
 * Matching is by name in two rounds: exact names first; then the ops left on
 * both sides by normalized name (prof_normalize_name), the costliest first,
 * so a kernel whose template arguments changed between runs is "changed"
 * rather than one vanished and one appeared. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/opts.h"
#include "prof/analysis/diff.h"

enum { NORM_MAX = 4096 };

typedef struct {
  const diff_op *op;
  const char *norm; /* pooled normalized name (second round only) */
  int taken;
} cand;

typedef struct {
  prof_diff_range *out;
  size_t cap;
  const prof_diff_opts *opts;
  prof_strpool *pool;
  char *buf; /* NORM_MAX */
} match_ctx;

/* Range name -> position in the tally (names are pooled: pointer keys). */
static int index_ranges(const diff_tally *t, prof_map *m) {
  for (size_t i = 0; i < t->n; i++)
    if (prof_map_put(m, prof_map_ptr(t->ranges[i].name), 0, (int64_t)i) < 0) return -1;
  return 0;
}

static const diff_range *find_range(const diff_tally *t, const prof_map *m, const char *name) {
  int64_t i = prof_map_get(m, prof_map_ptr(name), 0);
  return i < 0 ? NULL : &t->ranges[i];
}

/* The side a range counts: its GPU activities, or its CPU ops when none. */
static int side(const diff_range *r) { return r && r->n_ops[DIFF_GPU] ? DIFF_GPU : DIFF_CPU; }

static int add_item(match_ctx *c, const diff_op *a, const diff_op *b, int64_t calls_a,
                    int64_t calls_b, const char *key) {
  prof_diff_range *r = c->out;
  if (r->n_items == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 16;
    prof_diff_item *grown = realloc(r->items, cap * sizeof *grown);
    if (!grown) return -1;
    r->items = grown, c->cap = cap;
  }
  prof_diff_item *it = &r->items[r->n_items++];
  memset(it, 0, sizeof *it);
  it->name_a = a ? a->name : NULL;
  it->name_b = b ? b->name : NULL;
  it->name = key ? key : a ? a->name : b->name;
  if (a)
    it->count_a = a->count / (double)calls_a,
    it->device_us_a = (double)a->dev_ns / 1e3 / (double)calls_a;
  if (b)
    it->count_b = b->count / (double)calls_b,
    it->device_us_b = (double)b->dev_ns / 1e3 / (double)calls_b;
  double dt = fabs(it->device_us_b - it->device_us_a), big = fmax(it->device_us_a, it->device_us_b);
  int moved = dt > c->opts->time_min_us && dt > c->opts->time_pct / 100.0 * big;
  /* Matched under another name (its template arguments changed) is a change too. */
  it->status = !a                                                            ? PROF_DIFF_APPEARED
               : !b                                                          ? PROF_DIFF_VANISHED
               : (it->count_a != it->count_b || moved || a->name != b->name) ? PROF_DIFF_CHANGED
                                                                             : PROF_DIFF_SAME;
  return 0;
}

static int cmp_cand(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->op->dev_ns != b->op->dev_ns) return a->op->dev_ns > b->op->dev_ns ? -1 : 1;
  return strcmp(a->op->name, b->op->name);
}

static cand *candidates(const diff_range *r, int s, size_t *n) {
  *n = r ? r->n_ops[s] : 0;
  cand *v = calloc(*n ? *n : 1, sizeof *v);
  for (size_t i = 0; v && i < *n; i++) v[i].op = &r->ops[s][i];
  if (v) qsort(v, *n, sizeof *v, cmp_cand);
  return v;
}

static int normalize_all(match_ctx *c, cand *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (v[i].taken) continue;
    prof_normalize_name(v[i].op->name, c->buf, NORM_MAX);
    if (!(v[i].norm = prof_strpool_intern(c->pool, c->buf))) return -1;
  }
  return 0;
}

static const char *key_of(const cand *x, int round) { return round ? x->norm : x->op->name; }

/* One round of pairing: each op of A, costliest first, takes the costliest
 * op of B left with the same key (exact name, or normalized name). Groups of
 * B's ops per key are linked lists threaded through next[], so a round is
 * linear in the op count. */
static int pair_round(match_ctx *c, cand *a, size_t na, int64_t ca, cand *b, size_t nb, int64_t cb,
                      int round) {
  enum { NONE = -1 };
  prof_map groups;
  prof_map_init(&groups);
  int64_t *next = malloc((nb ? nb : 1) * sizeof *next),
          *head = malloc((nb ? nb : 1) * sizeof *head);
  int64_t n_groups = 0, rc = next && head ? 0 : -1;
  for (size_t j = nb; !rc && j-- > 0;) { /* backwards: each list ends up costliest first */
    if (b[j].taken) continue;
    int64_t g = prof_map_put(&groups, prof_map_ptr(key_of(&b[j], round)), 0, n_groups);
    if (g < 0) rc = -1;
    else if (g == n_groups) head[n_groups++] = NONE;
    if (!rc) next[j] = head[g], head[g] = (int64_t)j;
  }
  for (size_t i = 0; !rc && i < na; i++) {
    if (a[i].taken) continue;
    int64_t g = prof_map_get(&groups, prof_map_ptr(key_of(&a[i], round)), 0);
    if (g < 0 || head[g] == NONE) continue;
    cand *m = &b[head[g]];
    head[g] = next[head[g]];
    a[i].taken = m->taken = 1;
    rc = add_item(c, a[i].op, m->op, ca, cb,
                  round && a[i].op->name != m->op->name ? a[i].norm : NULL);
  }
  prof_map_free(&groups);
  free(next);
  free(head);
  return (int)rc;
}

/* Round 1 (exact), round 2 (normalized), then what is left on each side. */
static int match_ops(match_ctx *c, cand *a, size_t na, int64_t ca, cand *b, size_t nb, int64_t cb) {
  if (pair_round(c, a, na, ca, b, nb, cb, 0)) return -1;
  if (normalize_all(c, a, na) || normalize_all(c, b, nb)) return -1;
  if (pair_round(c, a, na, ca, b, nb, cb, 1)) return -1;
  for (size_t i = 0; i < na; i++)
    if (!a[i].taken && add_item(c, a[i].op, NULL, ca, cb, NULL)) return -1;
  for (size_t j = 0; j < nb; j++)
    if (!b[j].taken && add_item(c, NULL, b[j].op, ca, cb, NULL)) return -1;
  return 0;
}

static int cmp_item(const void *pa, const void *pb) {
  const prof_diff_item *a = pa, *b = pb;
  static const int rank[] = {[PROF_DIFF_VANISHED] = 0,
                             [PROF_DIFF_APPEARED] = 1,
                             [PROF_DIFF_CHANGED] = 2,
                             [PROF_DIFF_SAME] = 3};
  if (rank[a->status] != rank[b->status]) return rank[a->status] - rank[b->status];
  double da = fabs(a->device_us_b - a->device_us_a), db = fabs(b->device_us_b - b->device_us_a);
  if (da != db) return da > db ? -1 : 1;
  return strcmp(a->name, b->name);
}

static int diff_range_pair(match_ctx *c, const diff_range *ra, const diff_range *rb) {
  prof_diff_range *out = c->out;
  memset(out, 0, sizeof *out);
  c->cap = 0;
  out->name = ra ? ra->name : rb->name;
  out->calls_a = ra ? ra->calls : 0;
  out->calls_b = rb ? rb->calls : 0;
  out->gpu_a = ra && side(ra) == DIFF_GPU;
  out->gpu_b = rb && side(rb) == DIFF_GPU;
  size_t na, nb;
  cand *a = candidates(ra, side(ra), &na), *b = candidates(rb, side(rb), &nb);
  int rc = a && b ? match_ops(c, a, na, out->calls_a, b, nb, out->calls_b) : -1;
  free(a);
  free(b);
  if (!rc && out->n_items) qsort(out->items, out->n_items, sizeof *out->items, cmp_item);
  return rc;
}

static int diff_each(match_ctx *c, const diff_tally *ta, const diff_tally *tb, const prof_map *ia,
                     const prof_map *ib, prof_diff *d) {
  for (size_t i = 0; i < ta->n; i++) {
    c->out = &d->ranges[d->n_ranges++];
    if (diff_range_pair(c, &ta->ranges[i], find_range(tb, ib, ta->ranges[i].name))) return -1;
  }
  for (size_t i = 0; i < tb->n; i++) {
    if (find_range(ta, ia, tb->ranges[i].name)) continue;
    c->out = &d->ranges[d->n_ranges++];
    if (diff_range_pair(c, NULL, &tb->ranges[i])) return -1;
  }
  return 0;
}

static int diff_all(match_ctx *c, const diff_tally *ta, const diff_tally *tb, prof_diff *d) {
  prof_map ia, ib;
  prof_map_init(&ia);
  prof_map_init(&ib);
  d->ranges = calloc(ta->n + tb->n + 1, sizeof *d->ranges);
  int rc = d->ranges && !index_ranges(ta, &ia) && !index_ranges(tb, &ib) ? 0 : -1;
  if (!rc) rc = diff_each(c, ta, tb, &ia, &ib, d);
  prof_map_free(&ia);
  prof_map_free(&ib);
  return rc;
}

prof_diff_opts prof_diff_opts_default(void) {
  prof_diff_opts o = {sizeof o, PROF_DIFF_TIME_PCT, PROF_DIFF_TIME_MIN_US};
  return o;
}

attn_status prof_diff_traces(const prof_trace *a, const prof_trace *b, const prof_diff_opts *opts,
                             prof_diff *d) {
  prof_diff_opts o = prof_diff_opts_default();
  memset(d, 0, sizeof *d);
  attn_status st = attn_opts_take(&o, sizeof o, ATTN_OPTS_SIZE(prof_diff_opts, time_min_us), opts,
                                  "prof_diff_opts");
  if (st) return st;
  d->store = calloc(1, sizeof *d->store);
  if (!d->store) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory for a diff");
  prof_strpool_init(&d->store->pool);
  match_ctx c = {NULL, 0, &o, &d->store->pool, malloc(NORM_MAX)};
  diff_tally ta, tb;
  int rc = -1;
  if (c.buf && !diff_tally_build(a, c.pool, &ta)) {
    if (!diff_tally_build(b, c.pool, &tb)) {
      rc = diff_all(&c, &ta, &tb, d);
      diff_tally_free(&tb);
    }
    diff_tally_free(&ta);
  }
  free(c.buf);
  if (!rc) return ATTN_STATUS_OK;
  prof_diff_free(d);
  return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to diff the traces");
}

void prof_diff_free(prof_diff *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n_ranges; i++) free(d->ranges[i].items);
  free(d->ranges);
  if (d->store) prof_strpool_free(&d->store->pool);
  free(d->store);
  memset(d, 0, sizeof *d);
}
