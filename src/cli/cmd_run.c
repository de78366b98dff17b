/* attnprof run: one backend (or AUTO, with its reasons) on one problem, the
 * per-forward table, key averages, an optional trace and expectations. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_cuda.h"
#include "cli/preflight.h"
#include "cli/report.h"
#include "cli/roofline.h"

static const char run_usage[] =
    "usage: attnprof run [--backend NAME] [problem options] [measure options]\n"
    "  --backend NAME       auto (default), naive, naive_inplace, math, efficient, flash, cudnn\n";

static int parse_run(int argc, char **argv, attn_backend *b, cli_problem *p, cli_measure_opts *m) {
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if ((r = cli_opt_value(argc, argv, &i, "--backend", &v))) {
      if (r < 0) return -1;
      if (attn_backend_from_name(v, b)) return cli_usage_error("%s", attn_last_error()), -1;
      continue;
    }
    if ((r = cli_parse_problem_opt(argc, argv, &i, p)) ||
        (r = cli_parse_measure_opt(argc, argv, &i, m))) {
      if (r < 0) return -1;
      continue;
    }
    return cli_usage_error("run: unknown option '%s' (attnprof help run lists them)", argv[i]), -1;
  }
  return 0;
}

static void print_run(const cli_problem *p, const cli_measure_opts *m, const cli_result *r,
                      const char *auto_log) {
  char desc[256];
  cli_problem_describe(p, desc, sizeof desc);
  printf("attnprof run: %s on %s\n", attn_backend_name(r->backend), desc);
  if (auto_log) printf("auto:\n%s", auto_log);
  cli_print_results(stdout, r, 1);
  cli_print_roof(stdout, cli_roof_for(p->device, p->dtype, m));
  prof_key_average *rows = NULL;
  int64_t n;
  if (prof_key_averages(r->trace, &rows, &n)) n = -1;
  if (n > 0) {
    printf("\nkey averages over %lld profiled forwards:\n", (long long)r->per_fwd.calls);
    prof_print_key_averages(stdout, rows, n, 20);
  }
  free(rows);
}

static int run_measured(const cli_problem *p, cli_measure_opts *m, attn_backend b,
                        prof_expect *ex) {
  cli_inputs in;
  cli_result r;
  char auto_log[2048] = "";
  /* The backend's why-not and the estimates before any allocation. */
  int pre = cli_preflight(p, m, &b, auto_log, sizeof auto_log);
  if (pre) return pre;
  attn_status st = cli_inputs_create(p, &in);
  if (st) return cli_inputs_destroy(&in), cli_status_exit(st, attn_last_error());
  double *ref = m->check ? cli_reference(&in) : NULL;
  cli_measure(b, &in, ref, m, &r);
  free(ref);
  cli_inputs_destroy(&in);
  /* A refusal is about the inputs (exit 2), whatever its status. */
  if (r.status) {
    int rc = r.refused ? cli_usage_error("%s", r.why) : cli_status_exit(r.status, r.why);
    cli_result_free(&r);
    return rc;
  }
  if (m->json) {
    json_t *doc = json_pack("{ss so so so}", "device", "cpu", "shape", cli_problem_json(p),
                            "roofline", cli_roof_json(cli_roof_for(p->device, p->dtype, m)),
                            "backend", cli_result_json(&r));
    if (auto_log[0]) json_object_set_new(doc, "auto", json_string(auto_log));
    cli_json_print(doc);
  } else {
    print_run(p, m, &r, auto_log[0] ? auto_log : NULL);
  }
  if (m->trace_path) cli_roof_group(r.trace, &r); /* the report's roofline point */
  int rc = cli_write_trace(m->trace_path, m->trace_format, r.trace);
  if (!rc) rc = cli_check_expect(ex, r.trace, m->json ? stderr : stdout);
  cli_result_free(&r);
  return rc;
}

int cmd_run(int argc, char **argv) {
  attn_backend b = ATTN_BACKEND_AUTO;
  cli_problem p;
  cli_measure_opts m;
  cli_problem_defaults(&p);
  cli_measure_defaults(&m);
  if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
    return fputs(run_usage, stdout), cli_print_options(stdout, 1), CLI_OK;
  if (parse_run(argc, argv, &b, &p, &m) || !cli_engine(&m)) return CLI_USAGE;
  cli_gpu_default_shape(argc, argv, &p);
  prof_expect *ex = NULL;
  int rc = cli_prepare_outputs(&m, &ex);
  if (!rc) rc = run_measured(&p, &m, b, ex);
  prof_expect_free(ex);
  return rc;
}
