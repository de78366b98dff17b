/* attnprof compare --sweep: the throughput grid (B*S = 16384, H*D = 2048) on a GPU, every
 * backend at every point. B*S = 16384 and H*D = 2048 keep the work per
 * point comparable; FLOPs are 4*B*H*S^2*D, halved when causal. No accuracy
 * check here (the fp64 reference at S = 16384 takes hours on the host: the
 * default-shape compare and the GPU harness check accuracy), no profiled
 * forwards: device time from CUDA events, at most about max_ms (default
 * 1 s) of timed forwards per backend and point, at least 10. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_cuda.h"
#include "cli/report.h"

static const struct {
  int64_t d, s;
} grid[] = {{64, 1024}, {64, 16384}, {128, 4096}, {128, 16384}, {256, 4096}};

enum { N_SHAPES = sizeof grid / sizeof grid[0], N_POINTS = 2 * N_SHAPES, MAX_B = 16 };

typedef struct {
  cli_problem p;
  cli_result r[MAX_B];
} sweep_point;

static void point_problem(const cli_problem *base, int shape, int causal, cli_problem *p) {
  *p = *base;
  p->d = grid[shape].d, p->sq = p->sk = grid[shape].s;
  p->b = 16384 / grid[shape].s, p->hq = p->hkv = 2048 / grid[shape].d;
  p->causal = causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
  p->mask = ATTN_MASK_NONE, p->bshd = 0, p->want_lse = 0;
}

/* One (D, S): the inputs are made once and the causal flag toggled. */
static int measure_shape(const cli_problem *base, int shape, const attn_backend *list, int nb,
                         const cli_measure_opts *m, sweep_point *pts) {
  cli_inputs in;
  point_problem(base, shape, 0, &pts[0].p);
  attn_status st = cli_inputs_create(&pts[0].p, &in);
  if (st) return cli_inputs_destroy(&in), cli_status_exit(st, attn_last_error());
  for (int c = 0; c < 2; c++) {
    point_problem(base, shape, c, &pts[c].p);
    in.args.causal = in.host.causal = pts[c].p.causal;
    for (int i = 0; i < nb; i++) {
      cli_measure(list[i], &in, NULL, m, &pts[c].r[i]);
      cli_result_free(&pts[c].r[i]);
      fprintf(stderr, "sweep: D=%lld S=%lld causal=%d %s done\n", (long long)grid[shape].d,
              (long long)grid[shape].s, c, attn_backend_name(list[i]));
    }
  }
  cli_inputs_destroy(&in);
  return CLI_OK;
}

static json_t *point_json(const sweep_point *pt, const attn_backend *list, int nb) {
  json_t *bs = json_array();
  for (int i = 0; i < nb; i++) {
    const cli_result *r = &pt->r[i];
    json_t *o = json_pack("{ss ss}", "name", attn_backend_name(list[i]), "status",
                          r->status ? "refused" : "ok");
    if (r->status) {
      json_object_set_new(o, "why", json_string(r->why));
    } else {
      json_object_set_new(o, "device_us", json_real(r->time_us_median));
      json_object_set_new(o, "host_us", json_real(r->host_us_median));
      json_object_set_new(o, "tflops", json_real(r->gflops / 1e3));
    }
    json_array_append_new(bs, o);
  }
  return json_pack("{sI sI sI sI sb so}", "B", (json_int_t)pt->p.b, "H", (json_int_t)pt->p.hq, "S",
                   (json_int_t)pt->p.sq, "D", (json_int_t)pt->p.d, "causal",
                   pt->p.causal != ATTN_CAUSAL_NONE, "backends", bs);
}

static void print_table(const sweep_point *pts, const attn_backend *list, int nb, int tflops) {
  printf("\n%s\n%4s %6s %6s",
         tflops ? "TFLOP/s (4*B*H*S^2*D, halved when causal):"
                : "device us per forward (CUDA events, median):",
         "D", "S", "causal");
  for (int i = 0; i < nb; i++) printf(" %14s", attn_backend_name(list[i]));
  printf("\n");
  for (int k = 0; k < N_POINTS; k++) {
    const sweep_point *pt = &pts[k];
    printf("%4lld %6lld %6s", (long long)pt->p.d, (long long)pt->p.sq, pt->p.causal ? "yes" : "no");
    for (int i = 0; i < nb; i++) {
      const cli_result *r = &pt->r[i];
      if (r->status) printf(" %14s", "-");
      else printf(" %14.1f", tflops ? r->gflops / 1e3 : r->time_us_median);
    }
    printf("\n");
  }
}

static void print_refusals(const sweep_point *pts, const attn_backend *list, int nb) {
  for (int i = 0; i < nb; i++)
    for (int k = 0; k < N_POINTS; k++)
      if (pts[k].r[i].status) {
        printf("- %s at D=%lld S=%lld causal=%s: %s\n", attn_backend_name(list[i]),
               (long long)pts[k].p.d, (long long)pts[k].p.sq, pts[k].p.causal ? "yes" : "no",
               pts[k].r[i].why);
        break; /* the first refusal of each backend says why */
      }
}

static void report(const cli_problem *base, const cli_measure_opts *m, const sweep_point *pts,
                   const attn_backend *list, int nb) {
  char dev[160];
  cli_device_describe(base->device, dev, sizeof dev);
  if (m->json) {
    json_t *arr = json_array();
    for (int k = 0; k < N_POINTS; k++) json_array_append_new(arr, point_json(&pts[k], list, nb));
    cli_json_print(json_pack("{ss ss so}", "device", dev, "dtype", attn_dtype_name(base->dtype),
                             "points", arr));
    return;
  }
  printf("attnprof compare --sweep: %s, %s, B*S = 16384, H*D = 2048; device time from CUDA "
         "events, median of up to %d forwards (about %d ms each backend and point, at least 10)\n",
         dev, attn_dtype_name(base->dtype), cli_timed_iters(m, base->device), m->max_ms);
  print_table(pts, list, nb, 1);
  print_table(pts, list, nb, 0);
  print_refusals(pts, list, nb);
}

int cli_compare_sweep(const cli_problem *base, const cli_measure_opts *m0) {
  if (base->device < 0)
    return cli_usage_error("compare --sweep: the grid (B*S = 16384, S up to 16384) is sized for "
                           "a GPU; add --device cuda, or use --shape on the CPU");
  if (m0->trace_path) return cli_usage_error("compare --sweep: --trace takes one problem");
  cli_measure_opts m = *m0;
  m.check = 0, m.profiled = 0;
  if (!m.max_ms) m.max_ms = 1000;
  attn_backend list[MAX_B];
  int nb = cli_backends_for(base->device, list);
  sweep_point *pts = calloc(N_POINTS, sizeof *pts);
  if (!pts) return cli_failure("no memory for the sweep");
  int rc = CLI_OK;
  for (int s = 0; s < N_SHAPES && rc == CLI_OK; s++)
    rc = measure_shape(base, s, list, nb, &m, &pts[2 * s]);
  if (rc == CLI_OK) report(base, &m, pts, list, nb);
  free(pts);
  return rc;
}
