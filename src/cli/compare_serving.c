/* attnprof compare --serving: the paged decode grid of issue 13, every
 * backend in every cell, each row with its bytes, GB/s and place on the
 * roofline. On a GPU: B in {1, 16, 64, 128}, KV in {1k, 8k, 32k, 128k},
 * heads 32/8 and 64/8, D = 128, pages of 16 and 64. On the CPU the grid is
 * scaled down (B {1, 4}, KV {256, 1024}, heads 8/2 and 16/2, same D and
 * pages) so that it runs in seconds in CI; the logic is the same.
 *
 * What makes the GPU grid run in well under two minutes:
 * - one K/V pool per (B, KV), made and filled in place on the device (a
 *   seeded fill kernel) and shared by its four cells: both head pairs have
 *   8 KV heads, and a page size is only a view of the same memory;
 * - each cell's tables are checked once (attn_args_check) before anything
 *   is timed, then passed trusted, so time_us is the device time of the
 *   attention work alone (CUDA events), not a host copy of the tables;
 * - device time only (no host-time pass, no profiled forwards);
 * - a backend whose forward would take longer than --max-forward-ms (25 ms
 *   by default on a GPU) is not timed there: its row says so, with the time
 *   measured, or predicted from its rate in the largest cell it ran.
 * A pool that does not fit in the memory free (or in --mem-limit-mib) makes
 * its cells' rows say so, and the grid goes on. No accuracy check here (the
 * harnesses do that). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cli/cli.h"
#include "cli/cli_cuda.h"
#include "cli/report.h"
#include "cli/roofline.h"
#include "cli/serving_cells.h"

static const int64_t gpu_b[] = {1, 16, 64, 128}, gpu_kv[] = {1024, 8192, 32768, 131072};
static const int64_t cpu_b[] = {1, 4}, cpu_kv[] = {256, 1024};
static const int64_t gpu_heads[][2] = {{32, 8}, {64, 8}}, cpu_heads[][2] = {{8, 2}, {16, 2}};
static const int64_t pages[] = {16, 64};

enum { MAX_BACKENDS = 16 };
#define GPU_SKIP_MS 25.0 /* default --max-forward-ms on a GPU */
#define GPU_MAX_MS 200   /* timed forwards per backend and cell: at most this much device time */

typedef struct {
  const int64_t *b, *kv, (*heads)[2];
  int nb, nkv;
} serving_grid;

static void grid_for(int device, serving_grid *g) {
  int gpu = device >= 0;
  g->b = gpu ? gpu_b : cpu_b, g->nb = gpu ? 4 : 2;
  g->kv = gpu ? gpu_kv : cpu_kv, g->nkv = gpu ? 4 : 2;
  g->heads = gpu ? gpu_heads : cpu_heads;
}

/* Per backend: the largest cell measured so far (bytes, device us). */
typedef struct {
  double bytes, us;
} backend_rate;

static json_t *row_json(const cli_problem *p, const cli_result *r) {
  json_t *o = cli_result_json(r);
  json_object_set_new(o, "cell", cli_problem_json(p));
  return o;
}

static void print_row(const cli_problem *p, const cli_result *r) {
  char heads[32];
  snprintf(heads, sizeof heads, "%lld/%lld", (long long)p->hq, (long long)p->hkv);
  printf("%4lld %6s %7lld %5lld %-14s ", (long long)p->b, heads, (long long)p->sk,
         (long long)p->page_size, attn_backend_name(r->backend));
  if (r->status) {
    printf("%s: %s\n", r->refused ? "refused" : r->skipped ? "skipped" : "failed", r->why);
    return;
  }
  printf("%10.1f %9.2f ", r->time_us_median, r->gbps);
  cli_print_roof_cols(stdout, r);
  printf("\n");
}

static void emit(const cli_problem *p, const cli_result *r, json_t *rows) {
  if (rows) json_array_append_new(rows, row_json(p, r));
  else print_row(p, r);
}

/* A row that was not timed: the cell did not fit, or the backend is too slow. */
static void skipped_row(attn_backend b, int device, const char *why, cli_result *r) {
  memset(r, 0, sizeof *r);
  r->backend = b, r->device = device, r->skipped = 1, r->status = ATTN_STATUS_UNSUPPORTED;
  r->rel_err = NAN;
  snprintf(r->why, sizeof r->why, "%s", why);
}

/* Skips without running when the backend's rate in the largest cell
 * measured so far puts this cell's forward past the limit. */
static int predicted_slow(const backend_rate *rate, double bytes, const cli_measure_opts *m,
                          char *why, size_t len) {
  if (!(m->skip_ms > 0) || rate->bytes <= 0) return 0;
  double us = bytes * rate->us / rate->bytes;
  if (us <= m->skip_ms * 1e3) return 0;
  char hb[32];
  snprintf(why, len,
           "a forward would take about %.0f ms (its %.3g GB/s in a cell of %s), over "
           "--max-forward-ms %g: not run",
           us / 1e3, rate->bytes / (rate->us * 1e3), cli_human_bytes(rate->bytes, hb, sizeof hb),
           m->skip_ms);
  return 1;
}

static void measure_cell(const cli_problem *p, const cli_pool *pool, const char *pool_why,
                         const attn_backend *list, int nbk, const cli_measure_opts *m,
                         backend_rate *rates, json_t *rows) {
  cli_cell c;
  char why[512];
  attn_status st = pool_why ? ATTN_STATUS_OUT_OF_MEMORY : cli_cell_make(p, pool, &c);
  if (st && !pool_why) snprintf(why, sizeof why, "the cell's inputs: %s", attn_last_error());
  for (int i = 0; i < nbk; i++) {
    cli_result r;
    double bytes = st ? 0 : attn_bytes(&c.args);
    if (st) skipped_row(list[i], p->device, pool_why ? pool_why : why, &r);
    else if (predicted_slow(&rates[i], bytes, m, why, sizeof why))
      skipped_row(list[i], p->device, why, &r);
    else {
      cli_inputs in = {.args = c.args}; /* cli_measure reads args only (no check) */
      cli_measure(list[i], &in, NULL, m, &r);
    }
    double us = r.status ? (r.skipped ? r.time_us_median : 0) : r.time_us_median;
    if (us > 0 && bytes > rates[i].bytes) rates[i].bytes = bytes, rates[i].us = us;
    emit(p, &r, rows);
    cli_result_free(&r);
  }
  if (!pool_why) cli_cell_free(p->device, &c);
  fprintf(stderr, "serving: B=%lld H=%lld/%lld KV=%lld page=%lld done\n", (long long)p->b,
          (long long)p->hq, (long long)p->hkv, (long long)p->sk, (long long)p->page_size);
}

static void cell_problem(const cli_problem *base, const serving_grid *g, int ib, int ikv, int ih,
                         int ip, cli_problem *p) {
  *p = *base;
  p->b = g->b[ib], p->sk = g->kv[ikv], p->hq = g->heads[ih][0], p->hkv = g->heads[ih][1];
  p->d = 128, p->sq = 1, p->page_size = pages[ip];
  p->causal = ATTN_CAUSAL_NONE, p->mask = ATTN_MASK_NONE, p->bshd = 0, p->want_lse = 0;
}

static void print_header(const cli_problem *base, const cli_measure_opts *m) {
  char dev[160];
  cli_device_describe(base->device, dev, sizeof dev);
  char within[64] = "";
  if (m->max_ms) snprintf(within, sizeof within, " (or at least 10 within %d ms)", m->max_ms);
  printf("attnprof compare --serving: %s, %s, one new token per sequence, D=128; %s; "
         "median of %d timed forwards%s per backend and cell\n",
         dev, attn_dtype_name(base->dtype),
         base->device >= 0 ? "B {1,16,64,128} x KV {1k,8k,32k,128k} x heads {32/8, 64/8} x "
                             "pages {16, 64}"
                           : "CPU: a scaled-down grid, B {1,4} x KV {256,1024} x heads "
                             "{8/2, 16/2} x pages {16, 64} (the GPU grid is B {1,16,64,128} x "
                             "KV {1k..128k} x heads {32/8, 64/8})",
         cli_timed_iters(m, base->device), within);
  printf("time_us: %s per forward; each cell's tables checked once before timing, then passed "
         "trusted; %s\n",
         base->device >= 0 ? "device time (CUDA events)" : "wall time",
         m->skip_ms > 0 ? "backends past --max-forward-ms are not timed in that cell"
                        : "no --max-forward-ms");
  cli_print_roof(stdout, cli_roof_for(base->device, base->dtype, m));
  printf("%4s %6s %7s %5s %-14s %10s %9s %6s %8s %6s %7s\n", "B", "heads", "KV", "page", "backend",
         "time_us", "GB/s", "%copy", "TFLOP/s", "%peak", "roof");
}

/* The four cells of one (B, KV) pair over one pool. */
static void measure_pair(const cli_problem *base, const serving_grid *g, int ib, int ikv,
                         const attn_backend *list, int nbk, const cli_measure_opts *m,
                         double mem_limit, backend_rate *rates, json_t *rows) {
  cli_problem p;
  cell_problem(base, g, ib, ikv, 0, 0, &p);
  cli_pool pool;
  char why[512];
  int fits = cli_pool_make(&p, mem_limit, &pool, why, sizeof why) == ATTN_STATUS_OK;
  for (int ih = 0; ih < 2; ih++)
    for (int ip = 0; ip < 2; ip++) {
      cell_problem(base, g, ib, ikv, ih, ip, &p);
      measure_cell(&p, &pool, fits ? NULL : why, list, nbk, m, rates, rows);
    }
  cli_pool_free(base->device, &pool);
}

int cli_compare_serving(const cli_problem *base, const cli_measure_opts *m0, double mem_limit) {
  if (m0->trace_path) return cli_usage_error("compare --serving: --trace takes one problem");
  cli_measure_opts m = *m0;
  m.check = 0, m.profiled = 0, m.device_only = 1;
  if (base->device >= 0 && !m.max_ms) m.max_ms = GPU_MAX_MS;
  if (base->device >= 0 && m.skip_ms < 0) m.skip_ms = GPU_SKIP_MS;
  if (m.skip_ms < 0) m.skip_ms = 0; /* the CPU: no limit unless given */
  serving_grid g;
  grid_for(base->device, &g);
  attn_backend list[MAX_BACKENDS];
  int nbk = cli_backends_for(base->device, list);
  backend_rate rates[MAX_BACKENDS];
  memset(rates, 0, sizeof rates);
  json_t *rows = m.json ? json_array() : NULL;
  if (!m.json) print_header(base, &m);
  int64_t t0 = attn_clock_ns();
  for (int ib = 0; ib < g.nb; ib++)
    for (int ikv = 0; ikv < g.nkv; ikv++)
      measure_pair(base, &g, ib, ikv, list, nbk, &m, mem_limit, rates, rows);
  double secs = (double)(attn_clock_ns() - t0) / 1e9;
  if (rows) {
    char dev[160];
    cli_device_describe(base->device, dev, sizeof dev);
    cli_json_print(json_pack(
        "{ss ss ss so so sf}", "device", dev, "dtype", attn_dtype_name(base->dtype), "grid",
        base->device >= 0 ? "full" : "scaled-down for the CPU", "roofline",
        cli_roof_json(cli_roof_for(base->device, base->dtype, &m)), "rows", rows, "wall_s", secs));
  } else {
    printf("grid: %d cells in %.1f s\n", g.nb * g.nkv * 4, secs);
  }
  return CLI_OK;
}
