/* Per-rank figures (cli_ranks.h): a rank is a file of several given to
 * summary or merge, or a process of one trace that holds several (ranks
 * merged by attnprof merge). For each: the per-range rows with their spread,
 * the kernel table and the key averages, so that a rank that launched other
 * kernels, or spent longer in a collective, shows on its own row. */
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof/ranks.h"
#include "cli/ranks.h"
#include "cli/summary_json.h"
#include "cli/traces.h"

/* ---- building ------------------------------------------------------------ */

static int build_one(const cli_rank *r, cli_rank_tables *o) {
  memset(o, 0, sizeof *o);
  if (prof_summarize_ranges_pid(r->t, 0, r->pid, &o->ranges, &o->n_ranges) ||
      prof_summarize_kernels_pid(r->t, NULL, r->pid, &o->kernels, &o->n_kernels) ||
      prof_key_averages_pid(r->t, r->pid, &o->keys, &o->n_keys))
    return -1;
  return 0;
}

static void free_tables(cli_rank_tables *tb, size_t n) {
  for (size_t r = 0; tb && r < n; r++) free(tb[r].ranges), free(tb[r].kernels), free(tb[r].keys);
  free(tb);
}

/* NULL when out of memory (attn_last_error says so when the library ran out). */
static cli_rank_tables *build_all(const cli_rank *ranks, size_t n) {
  cli_rank_tables *tb = calloc(n ? n : 1, sizeof *tb);
  for (size_t r = 0; tb && r < n; r++)
    if (build_one(&ranks[r], &tb[r])) return free_tables(tb, r + 1), NULL;
  return tb;
}

int64_t cli_ranks_of_trace(const prof_trace *t, cli_rank **out) {
  int64_t *pids = NULL, n = -1;
  if (prof_trace_pids(t, &pids, &n)) n = -1;
  *out = n > 0 ? calloc((size_t)n, sizeof **out) : NULL;
  if (n > 0 && !*out) n = -1;
  for (int64_t i = 0; i < n; i++) (*out)[i] = (cli_rank){t, pids[i], NULL};
  free(pids);
  return n;
}

/* "FILE" or "process 1234" into buf */
static const char *label(const cli_rank *r, char *buf, size_t len) {
  if (r->file) snprintf(buf, len, "%s", r->file);
  else snprintf(buf, len, "process %lld", (long long)r->pid);
  return buf;
}

/* ---- per range, with the spread ----------------------------------------- */

/* min, max and mean of one figure over the ranks that have the range */
static void spread(FILE *f, const char *what, const double *v, size_t n) {
  double lo = v[0], hi = v[0], sum = 0;
  for (size_t i = 0; i < n; i++)
    lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi, sum += v[i];
  double mean = sum / (double)n;
  fprintf(f, "    spread of %s: min %.1f, max %.1f, max-min %.1f (%.1f%% of the mean)\n", what, lo,
          hi, hi - lo, mean > 0 ? 100.0 * (hi - lo) / mean : 0.0);
}

static void print_range(FILE *f, const char *name, const cli_rank *ranks, const cli_rank_tables *tb,
                        size_t n) {
  double dev[n ? n : 1], host[n ? n : 1];
  size_t m = 0;
  char buf[4200];
  fprintf(f, "\nrange ");
  cli_put_cell(f, name, -1);
  fprintf(f, "\n  %4s %-32s %6s %9s %9s %14s %14s\n", "rank", "file", "calls", "kernels", "comm",
          "device us/call", "host us/call");
  for (size_t r = 0; r < n; r++) {
    const prof_range_summary *s = prof_range_summary_find(tb[r].ranges, tb[r].n_ranges, name);
    if (!s) continue;
    fprintf(f, "  %4zu ", r);
    cli_put_cell(f, label(&ranks[r], buf, sizeof buf), 32);
    fprintf(f, " %6lld %9.2f %9.2f %14.1f %14.1f\n", (long long)s->calls,
            s->per_call_kind[PROF_KIND_KERNEL], s->per_call_kind[PROF_KIND_COMM],
            s->device_us_per_call, s->host_us_per_call);
    dev[m] = s->device_us_per_call, host[m++] = s->host_us_per_call;
  }
  if (m > 1) spread(f, "device us/call", dev, m), spread(f, "host us/call", host, m);
}

/* Whether an earlier rank than r has a range named name (each name once). */
static int range_seen(const cli_rank_tables *tb, size_t r, const char *name) {
  for (size_t q = 0; q < r; q++)
    if (prof_range_summary_find(tb[q].ranges, tb[q].n_ranges, name)) return 1;
  return 0;
}

/* ---- kernels and key averages, joined by name over the ranks -------------- */

/* A name (kernel; or cat and name) with each rank's sums. */
typedef struct {
  const char *name;
  prof_cat cat;
  double total; /* over the ranks: the order of the rows */
} joined;

static int cmp_joined(const void *pa, const void *pb) {
  const joined *a = pa, *b = pb;
  if (a->total != b->total) return a->total > b->total ? -1 : 1;
  if (a->cat != b->cat) return a->cat < b->cat ? -1 : 1;
  return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

/* Adds weight to the row (name, cat) of j, made when new. */
static void join_add(joined *j, size_t *count, const char *name, prof_cat cat, double weight) {
  size_t x = 0;
  while (x < *count && !(j[x].cat == cat && !strcmp(j[x].name ? j[x].name : "", name ? name : "")))
    x++;
  if (x == *count) j[(*count)++] = (joined){name, cat, 0};
  j[x].total += weight;
}

/* The kernel names (keys 0: by device time summed over the ranks) or the
 * (cat, name) keys of the key averages (keys 1: by device time, then host
 * time, as the single-trace table sorts) over all ranks. */
static joined *join(const cli_rank_tables *tb, size_t n, int keys, size_t *count) {
  size_t cap = 0;
  for (size_t r = 0; r < n; r++) cap += (size_t)(keys ? tb[r].n_keys : tb[r].n_kernels);
  joined *j = calloc(cap ? cap : 1, sizeof *j);
  *count = 0;
  for (size_t r = 0; j && r < n; r++)
    for (int64_t i = 0; i < (keys ? tb[r].n_keys : tb[r].n_kernels); i++) {
      if (keys) {
        const prof_key_average *k = &tb[r].keys[i];
        join_add(j, count, k->name, k->cat, k->device_us_total * 1e6 + k->host_us_total);
      } else {
        join_add(j, count, tb[r].kernels[i].name, PROF_CAT_KERNEL,
                 tb[r].kernels[i].device_us_total);
      }
    }
  if (j && *count > 1) qsort(j, *count, sizeof *j, cmp_joined);
  return j;
}

/* One rank's calls and device time of the kernel named name (all footprints). */
static void kernel_sums(const cli_rank_tables *tb, const char *name, int64_t *calls, double *us,
                        int64_t *graph) {
  *calls = *graph = 0, *us = 0;
  for (int64_t i = 0; i < tb->n_kernels; i++)
    if (!strcmp(tb->kernels[i].name ? tb->kernels[i].name : "", name ? name : ""))
      *calls += tb->kernels[i].calls, *us += tb->kernels[i].device_us_total,
          *graph += tb->kernels[i].graph_calls;
}

static void print_kernels(FILE *f, const cli_rank_tables *tb, size_t n) {
  size_t m;
  joined *j = join(tb, n, 0, &m);
  if (!j || !m) return free(j);
  int w = cli_wide ? 0 : 44;
  for (size_t x = 0; cli_wide && x < m; x++)
    if ((int)strlen(j[x].name ? j[x].name : "") > w) w = (int)strlen(j[x].name);
  fprintf(f, "\nkernels per rank (by name; comm = an NCCL collective):\n");
  cli_put_cell(f, "kernel", w);
  fprintf(f, " %4s %7s %15s %13s %-6s\n", "rank", "calls", "device us total", "device us avg",
          "kind");
  for (size_t x = 0; x < m; x++)
    for (size_t r = 0, first = 1; r < n; r++) {
      int64_t calls, graph;
      double us;
      kernel_sums(&tb[r], j[x].name, &calls, &us, &graph);
      if (!calls) continue;
      cli_put_cell(f, first ? j[x].name : "", w); /* the name on its first rank's row */
      first = 0;
      fprintf(f, " %4zu %7lld %15.1f %13.1f %-6s", r, (long long)calls, us, us / (double)calls,
              prof_is_comm_kernel(j[x].name) ? "comm" : "kernel");
      if (graph) fprintf(f, " (%lld in CUDA graphs)", (long long)graph);
      fputc('\n', f);
    }
  free(j);
}

static const prof_key_average *key_of(const cli_rank_tables *tb, const joined *k) {
  for (int64_t i = 0; i < tb->n_keys; i++)
    if (tb->keys[i].cat == k->cat &&
        !strcmp(tb->keys[i].name ? tb->keys[i].name : "", k->name ? k->name : ""))
      return &tb->keys[i];
  return NULL;
}

static void print_keys(FILE *f, const cli_rank_tables *tb, size_t n, int64_t top) {
  size_t m;
  joined *j = join(tb, n, 1, &m);
  if (!j || !m) return free(j);
  size_t shown = top > 0 && (size_t)top < m ? (size_t)top : m;
  fprintf(f, "\nkey averages per rank:\n");
  cli_put_cell(f, "name", 44);
  fprintf(f, " %-19s %4s %7s %14s %14s %15s\n", "cat", "rank", "calls", "host total us",
          "self total us", "device total us");
  for (size_t x = 0; x < shown; x++)
    for (size_t r = 0, first = 1; r < n; r++) {
      const prof_key_average *k = key_of(&tb[r], &j[x]);
      if (!k) continue;
      cli_put_cell(f, first ? k->name : "", 44);
      fprintf(f, " %-19s %4zu %7lld %14.1f %14.1f %15.1f\n", first ? prof_cat_name(k->cat) : "", r,
              (long long)k->calls, k->host_us_total, k->host_us_self_total, k->device_us_total);
      first = 0;
    }
  if (shown < m) fprintf(f, "(%zu more names; --top N shows more)\n", m - shown);
  free(j);
}

/* ---- the whole per-rank section ------------------------------------------- */

int cli_print_ranks(FILE *f, const cli_rank *ranks, size_t n, int64_t top) {
  cli_rank_tables *tb = build_all(ranks, n);
  if (!tb) return cli_failure("no memory for the per-rank tables of %zu ranks", n);
  char buf[4200];
  fprintf(f, "per rank (GPU events per call of each range; kernels and key averages of each "
             "rank):\n");
  for (size_t r = 0; r < n; r++)
    fprintf(f, "  rank %zu: %s\n", r, label(&ranks[r], buf, sizeof buf));
  for (size_t r = 0; r < n; r++)
    for (int64_t i = 0; i < tb[r].n_ranges; i++)
      if (!range_seen(tb, r, tb[r].ranges[i].name))
        print_range(f, tb[r].ranges[i].name, ranks, tb, n);
  print_kernels(f, tb, n);
  print_keys(f, tb, n, top);
  free_tables(tb, n);
  return CLI_OK;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *spread_json(const char *name, const cli_rank_tables *tb, size_t n) {
  double dlo = 0, dhi = 0, hlo = 0, hhi = 0;
  json_int_t k = 0;
  for (size_t q = 0; q < n; q++) {
    const prof_range_summary *s = prof_range_summary_find(tb[q].ranges, tb[q].n_ranges, name);
    if (!s) continue;
    if (!k++) dlo = dhi = s->device_us_per_call, hlo = hhi = s->host_us_per_call;
    dlo = s->device_us_per_call < dlo ? s->device_us_per_call : dlo;
    dhi = s->device_us_per_call > dhi ? s->device_us_per_call : dhi;
    hlo = s->host_us_per_call < hlo ? s->host_us_per_call : hlo;
    hhi = s->host_us_per_call > hhi ? s->host_us_per_call : hhi;
  }
  return json_pack("{so sI sf sf sf sf}", "name", cli_json_text(name), "ranks", k, "device_us_min",
                   dlo, "device_us_max", dhi, "host_us_min", hlo, "host_us_max", hhi);
}

static json_t *rank_json(const cli_rank *rk, size_t r, const cli_rank_tables *tb) {
  json_t *rows = json_array(), *kernels = json_array(), *keys = json_array();
  for (int64_t i = 0; i < tb->n_ranges; i++)
    json_array_append_new(rows, cli_range_json(&tb->ranges[i]));
  for (int64_t i = 0; i < tb->n_kernels; i++)
    json_array_append_new(kernels, cli_kernel_json(&tb->kernels[i]));
  for (int64_t i = 0; i < tb->n_keys; i++) json_array_append_new(keys, cli_key_json(&tb->keys[i]));
  json_t *o = json_pack("{sI so so so}", "rank", (json_int_t)r, "ranges", rows, "kernels", kernels,
                        "key_averages", keys);
  if (rk->file) json_object_set_new(o, "file", cli_json_text(rk->file));
  else json_object_set_new(o, "pid", json_integer(rk->pid));
  return o;
}

json_t *cli_ranks_json(const cli_rank *ranks, size_t n) {
  cli_rank_tables *tb = build_all(ranks, n);
  if (!tb) return NULL;
  json_t *out = json_array(), *spreads = json_array();
  for (size_t r = 0; r < n; r++) json_array_append_new(out, rank_json(&ranks[r], r, &tb[r]));
  for (size_t r = 0; r < n; r++)
    for (int64_t i = 0; i < tb[r].n_ranges; i++)
      if (!range_seen(tb, r, tb[r].ranges[i].name))
        json_array_append_new(spreads, spread_json(tb[r].ranges[i].name, tb, n));
  free_tables(tb, n);
  return json_pack("{so so}", "ranks", out, "spread", spreads);
}
