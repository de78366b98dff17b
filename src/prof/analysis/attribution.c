/* Attribution (prof_attribute) and the nesting it rests on (prof_nest_build).
 *
 * Host events are sorted by (pid, tid, start, longest first) and swept with a
 * stack per thread: an event's parent is the nearest open event that still
 * contains it. The innermost range follows from the parent in O(1) (the parent
 * itself if it is a user_annotation, else the parent's range), so the whole
 * build is one sort, O(n log n). GPU activities then take the range of their
 * launch call, found by binary search on the correlation ids of the API
 * events; this is Kineto's rule (innermost range on the launching thread
 * around the launch), which also holds when the kernel runs after the range
 * has closed. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/nest.h"
#include "prof/model/map.h"
#include "prof/model/trace_cache.h"

typedef struct {
  int64_t pid, tid, start, end;
  int rank; /* at equal spans a user range contains the op, not the reverse */
  int64_t idx;
} host_key;

static inline int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static inline int cmp_host(const void *pa, const void *pb) {
  const host_key *a = pa, *b = pb;
  int c;
  if ((c = cmp_i64(a->pid, b->pid)) || (c = cmp_i64(a->tid, b->tid)) ||
      (c = cmp_i64(a->start, b->start)) || (c = cmp_i64(b->end, a->end)) ||
      (c = cmp_i64(a->rank, b->rank)))
    return c;
  return cmp_i64(a->idx, b->idx);
}

typedef struct {
  int64_t correlation, idx;
} corr_key;

static inline int cmp_corr(const void *pa, const void *pb) {
  const corr_key *a = pa, *b = pb;
  int c = cmp_i64(a->correlation, b->correlation);
  return c ? c : cmp_i64(a->idx, b->idx);
}

/* Traces come nearly sorted (a thread's events by start, launch ids rising),
 * so both sorts first try insertion, which costs a move per inversion; past
 * a budget of 4 moves per key the input is not that kind, and qsort finishes
 * (from a permutation: the same result, the orders being total); see
 * docs/design/reader.md. */
#define NEARLY_SORTED(name, type, cmp)               \
  static void name(type *k, size_t m) {              \
    size_t budget = 4 * m + 64;                      \
    for (size_t i = 1; i < m; i++) {                 \
      type x = k[i];                                 \
      size_t j = i;                                  \
      for (; j > 0 && cmp(&k[j - 1], &x) > 0; j--) { \
        k[j] = k[j - 1];                             \
        if (!--budget) {                             \
          k[j - 1] = x;                              \
          qsort(k, m, sizeof *k, cmp);               \
          return;                                    \
        }                                            \
      }                                              \
      k[j] = x;                                      \
    }                                                \
  }
NEARLY_SORTED(sort_host_keys, host_key, cmp_host)
NEARLY_SORTED(sort_corr_keys, corr_key, cmp_corr)

void prof_nest_free(prof_nest *nest) {
  free(nest->parent);
  free(nest->range);
  free(nest->launch);
  free(nest->order);
  memset(nest, 0, sizeof *nest);
}

/* Sorts the host events into nest->order. */
static int sort_host(const prof_trace *t, prof_nest *nest) {
  host_key *keys = malloc((nest->n ? nest->n : 1) * sizeof *keys);
  if (!keys) return -1;
  size_t m = 0;
  for (size_t i = 0; i < nest->n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (!prof_cat_is_host(e->cat)) continue;
    keys[m++] = (host_key){
        e->pid,    e->tid, e->start_ns, e->start_ns + e->dur_ns, e->cat != PROF_CAT_USER_ANNOTATION,
        (int64_t)i};
  }
  sort_host_keys(keys, m);
  for (size_t j = 0; j < m; j++) nest->order[j] = keys[j].idx;
  nest->n_order = m;
  free(keys);
  return 0;
}

/* The stack sweep over nest->order: parent and range of every host event.
 * Two stacks per thread: host events by containment (parent: the innermost
 * event wholly around e), and user ranges open at e's start (range: the
 * latest-started of them). A range that starts inside another and ends after
 * it (crossing) leaves the closed one below it on the range stack, and in its
 * chain; walks over the chain step over it (prof_nest_outer). */
static int sweep(const prof_trace *t, prof_nest *nest) {
  size_t cap = nest->n_order ? nest->n_order : 1;
  int64_t *stack = malloc(cap * sizeof *stack), *open = malloc(cap * sizeof *open);
  if (!stack || !open) return free(stack), free(open), -1;
  size_t sp = 0, op = 0;
  const prof_event *prev = NULL;
  for (size_t j = 0; j < nest->n_order; j++) {
    int64_t i = nest->order[j];
    const prof_event *e = prof_trace_at(t, (size_t)i);
    if (prev && (prev->pid != e->pid || prev->tid != e->tid)) sp = op = 0;
    prev = e;
    int64_t end = e->start_ns + e->dur_ns;
    while (sp) { /* sorted by start, so the top contains e iff it ends no earlier */
      const prof_event *top = prof_trace_at(t, (size_t)stack[sp - 1]);
      if (top->start_ns + top->dur_ns >= end) break;
      sp--;
    }
    while (op) { /* a range ending where e starts holds e only when it holds it whole */
      int64_t top_end = prof_trace_at(t, (size_t)open[op - 1])->start_ns +
                        prof_trace_at(t, (size_t)open[op - 1])->dur_ns;
      if (top_end > e->start_ns || top_end >= end) break;
      op--;
    }
    int64_t p = sp ? stack[sp - 1] : -1;
    nest->parent[i] = p;
    nest->range[i] = op ? open[op - 1] : -1;
    if (e->cat == PROF_CAT_USER_ANNOTATION) {
      if (op && prof_trace_at(t, (size_t)open[op - 1])->start_ns +
                        prof_trace_at(t, (size_t)open[op - 1])->dur_ns <
                    end)
        nest->links.crossing_ranges++;
      open[op++] = i;
    }
    stack[sp++] = i;
  }
  free(stack);
  free(open);
  return 0;
}

/* Calls that put work on a GPU, by name (the rest of the API never does). */
static int launches_work(const char *name) {
  return name && (strstr(name, "Launch") || strstr(name, "Memcpy") || strstr(name, "Memset")) &&
         !strstr(name, "HostFunc");
}

static int64_t gpu_device(const prof_event *e) { return e->device >= 0 ? e->device : e->pid; }

/* Of keys[lo, hi) (calls sharing g's id, in trace order), the one that
 * launched g: see prof_link_launches in nest.h. owners: (pid, device) pairs
 * seen in unambiguous links. */
/* owners holds (pid, device) for each device a process launched work on, and
 * (pid, ANY) once it launched any: a process known to use other devices only
 * did not launch work on this one. */
static const uint64_t ANY = UINT64_MAX;

static int elsewhere(const prof_map *owners, int64_t pid, int64_t device) {
  return prof_map_get(owners, (uint64_t)pid, ANY) >= 0 &&
         prof_map_get(owners, (uint64_t)pid, (uint64_t)device) < 0;
}

static int one_process(const prof_trace *t, const corr_key *keys, size_t lo, size_t hi) {
  int64_t pid = prof_trace_at(t, (size_t)keys[lo].idx)->pid;
  for (size_t k = lo + 1; k < hi; k++)
    if (prof_trace_at(t, (size_t)keys[k].idx)->pid != pid) return 0;
  return 1;
}

static int64_t pick_launch(const prof_trace *t, const corr_key *keys, size_t lo, size_t hi,
                           const prof_event *g, const prof_map *owners, prof_link_stats *links) {
  links->ambiguous++;
  size_t k;
  int64_t best = -1, best_start = 0;
  for (k = lo; k < hi; k++) {
    const prof_event *c = prof_trace_at(t, (size_t)keys[k].idx);
    if (elsewhere(owners, c->pid, gpu_device(g))) continue;
    if (c->start_ns > g->start_ns) continue;
    if (best < 0 || c->start_ns > best_start) best = keys[k].idx, best_start = c->start_ns;
  }
  if (best < 0) return keys[lo].idx;
  int64_t pid = prof_trace_at(t, (size_t)best)->pid; /* that process's first call */
  k = lo;
  while (prof_trace_at(t, (size_t)keys[k].idx)->pid != pid) k++;
  return keys[k].idx;
}

/* The first key with correlation >= c; hint: where the previous search
 * ended, right again when GPU work comes in launch order. */
static size_t lower_bound(const corr_key *keys, size_t m, int64_t c, size_t hint) {
  if (hint < m && keys[hint].correlation >= c && (!hint || keys[hint - 1].correlation < c))
    return hint;
  size_t lo = 0, hi = m;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (keys[mid].correlation < c) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Pass 1 links ids one process owns and notes (pid, device) pairs; pass 2
 * settles the shared ones; pass 3 counts calls that launched nothing. */
static int link_passes(const prof_trace *t, size_t n, int64_t *launch, corr_key *keys, size_t m,
                       prof_link_stats *links) {
  prof_map owners;
  prof_map_init(&owners);
  int shared = 0;
  int64_t last_pid = -1, last_dev = -1;
  size_t hint = 0;
  for (int pass = 1; pass <= 2; pass++) {
    for (size_t i = 0; i < n; i++) {
      const prof_event *e = prof_trace_at(t, i);
      if (!prof_cat_is_gpu_activity(e->cat)) continue;
      size_t lo = e->correlation ? lower_bound(keys, m, e->correlation, hint) : m, hi = lo;
      while (hi < m && keys[hi].correlation == e->correlation) hi++;
      hint = hi;
      if (pass == 1 && lo == hi) links->gpu_without_launch++;
      if (lo == hi) continue;
      const prof_event *c = prof_trace_at(t, (size_t)keys[lo].idx);
      int one = one_process(t, keys, lo, hi);
      if (pass == 1 && one) {
        launch[i] = keys[lo].idx;
        if (c->pid == last_pid && gpu_device(e) == last_dev) continue; /* noted already */
        last_pid = c->pid, last_dev = gpu_device(e);
        if (prof_map_put(&owners, (uint64_t)c->pid, (uint64_t)gpu_device(e), 1) < 0 ||
            prof_map_put(&owners, (uint64_t)c->pid, ANY, 1) < 0)
          return prof_map_free(&owners), -1;
      }
      shared |= !one;
      if (pass == 2 && !one) launch[i] = pick_launch(t, keys, lo, hi, e, &owners, links);
    }
    if (!shared) break;
  }
  prof_map_free(&owners);
  return 0;
}

static void count_idle_launches(const prof_trace *t, size_t n, const int64_t *launch,
                                prof_link_stats *links) {
  char *used = calloc(n ? n : 1, 1);
  if (!used) return; /* a count lost, nothing wrong */
  for (size_t i = 0; i < n; i++)
    if (launch[i] >= 0) used[launch[i]] = 1;
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    if (prof_cat_is_launch(e->cat) && e->correlation && !used[i] && launches_work(e->name))
      links->launches_without_gpu++;
  }
  free(used);
}

int prof_link_launches_stats(const prof_trace *t, size_t n, int64_t *launch,
                             prof_link_stats *links) {
  prof_link_stats scratch;
  if (!links) links = &scratch;
  size_t m = 0;
  corr_key *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!keys) return -1;
  for (size_t i = 0; i < n; i++) {
    const prof_event *e = prof_trace_at(t, i);
    launch[i] = -1;
    if (prof_cat_is_launch(e->cat) && e->correlation)
      keys[m++] = (corr_key){e->correlation, (int64_t)i};
  }
  sort_corr_keys(keys, m);
  int rc = link_passes(t, n, launch, keys, m, links);
  free(keys);
  if (!rc && links != &scratch) count_idle_launches(t, n, launch, links);
  return rc;
}

int prof_link_launches(const prof_trace *t, size_t n, int64_t *launch) {
  return prof_link_launches_stats(t, n, launch, NULL);
}

/* A GPU activity belongs to the range of its launch call. */
static void range_by_launch(prof_nest *nest) {
  for (size_t i = 0; i < nest->n; i++)
    if (nest->launch[i] >= 0) nest->range[i] = nest->range[nest->launch[i]];
}

int prof_nest_build(const prof_trace *t, prof_nest *nest) {
  memset(nest, 0, sizeof *nest);
  nest->n = prof_trace_count(t);
  size_t bytes = (nest->n ? nest->n : 1) * sizeof(int64_t);
  nest->parent = malloc(bytes);
  nest->range = malloc(bytes);
  nest->launch = malloc(bytes);
  nest->order = malloc(bytes);
  if (nest->parent && nest->range && nest->launch && nest->order) {
    for (size_t i = 0; i < nest->n; i++) nest->parent[i] = nest->range[i] = nest->launch[i] = -1;
    if (!sort_host(t, nest) && !sweep(t, nest) &&
        !prof_link_launches_stats(t, nest->n, nest->launch, &nest->links)) {
      range_by_launch(nest);
      return 0;
    }
  }
  prof_nest_free(nest);
  attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to analyse a trace of %zu events",
            prof_trace_count(t));
  return -1;
}

/* ---- one nesting per trace, shared by the analyses ----------------------- */

/* refs: the trace's slot and each caller holding it; guarded by shared_mu. */
typedef struct {
  prof_nest nest;
  int refs;
} shared_nest;

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;

static void shared_unref(shared_nest *s) {
  pthread_mutex_lock(&shared_mu);
  int last = --s->refs == 0;
  pthread_mutex_unlock(&shared_mu);
  if (last) prof_nest_free(&s->nest), free(s);
}

static void shared_drop(void *p) { shared_unref(p); }

const prof_nest *prof_nest_acquire(const prof_trace *t) {
  prof_trace_cache *c = prof_trace_cache_of(t);
  size_t n = prof_trace_count(t);
  pthread_mutex_lock(&shared_mu);
  shared_nest *s = c->p;
  if (s && s->nest.n == n) s->refs++;
  pthread_mutex_unlock(&shared_mu);
  if (s && s->nest.n == n) return &s->nest;
  /* None yet, or the trace grew since (a live one): build it for n events. */
  shared_nest *fresh = calloc(1, sizeof *fresh);
  if (!fresh) {
    attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory to analyse a trace of %zu events", n);
    return NULL;
  }
  if (prof_nest_build(t, &fresh->nest)) return free(fresh), NULL;
  fresh->refs = 2;
  pthread_mutex_lock(&shared_mu);
  shared_nest *old = c->p;
  c->p = fresh;
  c->drop = shared_drop;
  pthread_mutex_unlock(&shared_mu);
  if (old) shared_unref(old);
  return &fresh->nest;
}

void prof_nest_release(const prof_nest *nest) {
  if (nest) shared_unref((shared_nest *)((char *)nest - offsetof(shared_nest, nest)));
}

attn_status prof_attribute(const prof_trace *t, int64_t **out) {
  prof_nest nest;
  *out = NULL;
  if (prof_nest_build(t, &nest))
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "attribution: out of memory");
  *out = nest.range;
  nest.range = NULL;
  prof_nest_free(&nest);
  return ATTN_STATUS_OK;
}
