/* attnprof compare: every backend available for the device on one problem,
 * one table (or JSON), the fp64 reference computed once for all. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_cuda.h"
#include "cli/cp_launch.h"
#include "cli/gpu_report.h"
#include "cli/preflight.h"
#include "cli/report.h"
#include "cli/roofline.h"

static const char compare_usage[] =
    "usage: attnprof compare [problem options] [measure options] [--sweep | --serving]\n"
    "  --sweep              on a GPU, the throughput grid (docs/cli.md: B*S = 16384, H*D = 2048)\n"
    "  --serving            the paged decode grid: B {1,16,64,128} x KV {1k,8k,32k,128k} x heads\n"
    "                       {32/8, 64/8} x pages {16, 64}, D 128, with GB/s and roofline "
    "fractions\n"
    "                       (on the CPU a scaled-down grid)\n"
    "  --max-forward-ms N   --serving: a backend whose forward takes longer than N ms is not\n"
    "                       timed in that cell, its row says so (default 25 on a GPU, none on\n"
    "                       the CPU)\n"
    "  --mem-limit-mib N    --serving: the K/V pools may take at most N MiB (default: the memory\n"
    "                       free); a cell past it says so in its rows and the grid goes on\n";

/* compare --serving's own options (docs/cli.md). */
typedef struct {
  double max_forward_ms; /* < 0: the grid's default */
  double mem_limit;      /* bytes; 0: what is free */
  int given;             /* either option seen */
} serving_opts;

static int parse_serving_opt(int argc, char **argv, int *i, serving_opts *s) {
  const char *v;
  char *end;
  int r;
  double *dst = NULL, scale = 1;
  const char *name = NULL;
  if ((r = cli_opt_value(argc, argv, i, "--max-forward-ms", &v)))
    name = "--max-forward-ms", dst = &s->max_forward_ms;
  else if ((r = cli_opt_value(argc, argv, i, "--mem-limit-mib", &v)))
    name = "--mem-limit-mib", dst = &s->mem_limit, scale = 1048576.0;
  if (r <= 0) return r;
  double x = strtod(v, &end);
  if (end == v || *end || !(x > 0) || x > 1e9)
    return cli_usage_error("%s %s: give a positive number (compare --serving only)", name, v), -1;
  *dst = x * scale, s->given = 1;
  return 1;
}

static int parse_compare(int argc, char **argv, cli_problem *p, cli_measure_opts *m, int *sweep,
                         int *serving, serving_opts *so) {
  for (int i = 0; i < argc; i++) {
    int r;
    if ((r = parse_serving_opt(argc, argv, &i, so))) {
      if (r < 0) return -1;
      continue;
    }
    if (cli_opt_flag(argc, argv, &i, "--sweep")) {
      *sweep = 1;
      continue;
    }
    if (cli_opt_flag(argc, argv, &i, "--serving")) {
      *serving = 1;
      continue;
    }
    if ((r = cli_parse_problem_opt(argc, argv, &i, p)) ||
        (r = cli_parse_measure_opt(argc, argv, &i, m))) {
      if (r < 0) return -1;
      continue;
    }
    return cli_usage_error("compare: unknown option '%s' (attnprof help compare lists them)",
                           argv[i]),
           -1;
  }
  return 0;
}

/* Backends that have an implementation for the problem's device, each once,
 * in the table's order. */
int cli_backends_for(int device, attn_backend *out) {
  attn_backend_info info[32];
  size_t n = attn_backend_list(info, 32);
  int count = 0;
  for (size_t i = 0; i < n && i < 32; i++) {
    int on_device = device < 0 ? info[i].device_kind == ATTN_DEVICE_CPU : info[i].device_kind >= 0;
    int seen = 0;
    for (int j = 0; j < count; j++) seen |= out[j] == info[i].backend;
    if (on_device && !seen) out[count++] = info[i].backend;
  }
  return count;
}

/* One trace holding every backend's profiled forwards, each group inside a
 * range named after its backend. */
static prof_trace *merge_traces(const cli_result *rs, int n) {
  prof_trace *all = NULL;
  prof_trace_create(&all);
  for (int i = 0; all && i < n; i++) {
    if (rs[i].status || !rs[i].trace || !prof_trace_count(rs[i].trace)) continue;
    const prof_trace *t = rs[i].trace;
    for (size_t j = 0; j < prof_trace_count(t); j++)
      prof_trace_append(all, prof_trace_at(t, j), NULL);
    cli_roof_group(all, &rs[i]);
  }
  return all;
}

static int report(const cli_problem *p, const cli_measure_opts *m, const cli_result *rs, int n) {
  char dev[160];
  cli_device_describe(p->device, dev, sizeof dev);
  if (m->json) {
    json_t *list = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(list, cli_result_json(&rs[i]));
    cli_json_print(json_pack("{ss so so so}", "device", dev, "shape", cli_problem_json(p),
                             "roofline", cli_roof_json(cli_roof_for(p->device, p->dtype, m)),
                             "backends", list));
  } else {
    char desc[256];
    cli_problem_describe(p, desc, sizeof desc);
    printf(
        "attnprof compare: %s, %s; median of %d forwards after %d warm-up%s, ops from the "
        "trace of %d profiled forwards\n",
        dev, desc, cli_timed_iters(m, p->device), m->warmup,
        p->device >= 0 ? " (time_us: CUDA events per forward; host_us: one call, device idle)" : "",
        m->profiled);
    cli_print_results(stdout, rs, n);
    cli_print_roof(stdout, cli_roof_for(p->device, p->dtype, m));
    if (p->device >= 0) cli_print_top_kernels(stdout, rs, n);
  }
  int rc = CLI_OK;
  if (m->trace_path) {
    prof_trace *all = merge_traces(rs, n);
    rc = all ? cli_write_trace(m->trace_path, m->trace_format, all)
             : cli_failure("no memory for the trace");
    prof_trace_destroy(all);
  }
  return rc;
}

static int compare(const cli_problem *p, const cli_measure_opts *opts) {
  cli_inputs in;
  attn_backend list[ATTN_BACKEND_COUNT * 2];
  cli_result rs[ATTN_BACKEND_COUNT * 2];
  cli_measure_opts mm = *opts, *m = &mm;
  cli_preflight_reference(p, m); /* skips the fp64 check, saying so, when too large */
  attn_status st = cli_inputs_create(p, &in);
  if (st) return cli_inputs_destroy(&in), cli_status_exit(st, attn_last_error());
  if ((st = attn_args_check(&in.args)))
    return cli_inputs_destroy(&in), cli_status_exit(st, attn_last_error());
  double *ref = m->check ? cli_reference(&in) : NULL;
  int n = cli_backends_for(p->device, list);
  for (int i = 0; i < n; i++) cli_measure(list[i], &in, ref, m, &rs[i]);
  free(ref);
  cli_inputs_destroy(&in);
  int rc = report(p, m, rs, n);
  for (int i = 0; i < n; i++) cli_result_free(&rs[i]);
  return rc;
}

int cmd_compare(int argc, char **argv) {
  cli_problem p;
  cli_measure_opts m;
  cli_problem_defaults(&p);
  cli_measure_defaults(&m);
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
    return fputs(compare_usage, stdout), cli_print_options(stdout, 0), CLI_OK;
  for (int i = 0; i < argc; i++) /* several GPUs: one row per context-parallel variant */
    if (!strcmp(argv[i], "--gpus") || !strncmp(argv[i], "--gpus=", 7))
      return cli_cp_compare(argc, argv);
  int sweep = 0, serving = 0;
  serving_opts so = {.max_forward_ms = -1};
  if (parse_compare(argc, argv, &p, &m, &sweep, &serving, &so) || !cli_engine(&m)) return CLI_USAGE;
  if (sweep && serving) return cli_usage_error("compare: --sweep or --serving, not both");
  if (so.given && !serving)
    return cli_usage_error("compare: --max-forward-ms and --mem-limit-mib belong to --serving");
  if (m.expect_text) return cli_usage_error("compare: --expect belongs to 'attnprof run'");
  cli_gpu_default_shape(argc, argv, &p);
  if (sweep) return cli_compare_sweep(&p, &m);
  if (serving) {
    m.skip_ms = so.max_forward_ms;
    return cli_compare_serving(&p, &m, so.mem_limit);
  }
  prof_expect *ex = NULL;
  int rc = cli_prepare_outputs(&m, &ex);
  return rc ? rc : compare(&p, &m);
}
