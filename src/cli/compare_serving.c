/* attnprof compare --serving: the paged decode grid of issue 13, every
 * backend in every cell, each row with its bytes, GB/s and place on the
 * roofline. On a GPU: B in {1, 16, 64, 128}, KV in {1k, 8k, 32k, 128k},
 * heads 32/8 and 64/8, D = 128, pages of 16 and 64. On the CPU the grid is
 * scaled down (B {1, 4}, KV {256, 1024}, heads 8/2 and 16/2, same D and
 * pages) so that it runs in seconds in CI. No accuracy check (the harnesses
 * do that) and no profiled forwards: times are medians of timed forwards. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_cuda.h"
#include "cli/report.h"
#include "cli/roofline.h"

static const int64_t gpu_b[] = {1, 16, 64, 128}, gpu_kv[] = {1024, 8192, 32768, 131072};
static const int64_t cpu_b[] = {1, 4}, cpu_kv[] = {256, 1024};
static const int64_t gpu_heads[][2] = {{32, 8}, {64, 8}}, cpu_heads[][2] = {{8, 2}, {16, 2}};
static const int64_t pages[] = {16, 64};

enum { MAX_BACKENDS = 16 };

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

static json_t *row_json(const cli_problem *p, const cli_result *r) {
  json_t *o = cli_result_json(r);
  json_object_set_new(o, "cell", cli_problem_json(p));
  return o;
}

static void print_row(const cli_problem *p, const cli_result *r) {
  char heads[32];
  snprintf(heads, sizeof heads, "%lld/%lld", (long long)p->hq, (long long)p->hkv);
  printf("%4lld %6s %7lld %5lld %-14s ", (long long)p->b, heads, (long long)p->sk, (long long)p->page_size, attn_backend_name(r->backend));
  if (r->status) {
    printf("%s: %s\n", r->refused ? "refused" : "failed", r->why);
    return;
  }
  printf("%10.1f %9.2f ", r->time_us_median, r->gbps);
  cli_print_roof_cols(stdout, r);
  printf("\n");
}

/* One cell: inputs made once, every backend measured; rows printed or kept. */
static int measure_cell(const cli_problem *p, const attn_backend *list, int nbk,
                        const cli_measure_opts *m, json_t *rows) {
  cli_inputs in;
  attn_status st = cli_inputs_create(p, &in);
  if (!st) st = attn_args_check(&in.args);
  if (st) return cli_inputs_destroy(&in), cli_status_exit(st, attn_last_error());
  for (int i = 0; i < nbk; i++) {
    cli_result r;
    cli_measure(list[i], &in, NULL, m, &r);
    if (rows) json_array_append_new(rows, row_json(p, &r));
    else print_row(p, &r);
    cli_result_free(&r);
  }
  cli_inputs_destroy(&in);
  fprintf(stderr, "serving: B=%lld H=%lld/%lld KV=%lld page=%lld done\n", (long long)p->b,
          (long long)p->hq, (long long)p->hkv, (long long)p->sk, (long long)p->page_size);
  return CLI_OK;
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
  printf("attnprof compare --serving: %s, %s, one new token per sequence, D=128; %s; "
         "median of %d timed forwards\n",
         dev, attn_dtype_name(base->dtype),
         base->device >= 0 ? "B {1,16,64,128} x KV {1k,8k,32k,128k} x heads {32/8, 64/8} x "
                             "pages {16, 64}"
                           : "CPU: a scaled-down grid, B {1,4} x KV {256,1024} x heads "
                             "{8/2, 16/2} x pages {16, 64} (the GPU grid is B {1,16,64,128} x "
                             "KV {1k..128k} x heads {32/8, 64/8})",
         cli_timed_iters(m, base->device));
  cli_print_roof(stdout, cli_roof_for(base->device, base->dtype, m));
  printf("%4s %6s %7s %5s %-14s %10s %9s %6s %8s %6s %7s\n", "B", "heads", "KV", "page", "backend",
         "time_us", "GB/s", "%copy", "TFLOP/s", "%peak", "roof");
}

int cli_compare_serving(const cli_problem *base, const cli_measure_opts *m0) {
  if (m0->trace_path) return cli_usage_error("compare --serving: --trace takes one problem");
  cli_measure_opts m = *m0;
  m.check = 0, m.profiled = 0;
  if (base->device >= 0 && !m.max_ms) m.max_ms = 1000;
  serving_grid g;
  grid_for(base->device, &g);
  attn_backend list[MAX_BACKENDS];
  int nbk = cli_backends_for(base->device, list);
  json_t *rows = m.json ? json_array() : NULL;
  if (!m.json) print_header(base, &m);
  int rc = CLI_OK;
  for (int ib = 0; ib < g.nb && !rc; ib++)
    for (int ikv = 0; ikv < g.nkv && !rc; ikv++)
      for (int ih = 0; ih < 2 && !rc; ih++)
        for (int ip = 0; ip < 2 && !rc; ip++) {
          cli_problem p;
          cell_problem(base, &g, ib, ikv, ih, ip, &p);
          rc = measure_cell(&p, list, nbk, &m, rows);
        }
  if (rows && !rc) {
    char dev[160];
    cli_device_describe(base->device, dev, sizeof dev);
    cli_json_print(json_pack("{ss ss ss so so}", "device", dev, "dtype",
                             attn_dtype_name(base->dtype), "grid",
                             base->device >= 0 ? "full" : "scaled-down for the CPU", "roofline",
                             cli_roof_json(cli_roof_for(base->device, base->dtype, &m)), "rows",
                             rows));
  } else {
    json_decref(rows);
  }
  return rc;
}
