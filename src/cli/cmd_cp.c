/* attnprof cp: context-parallel attention over N GPUs, one process per GPU.
 *
 * The command forks and execs itself once per rank with ATTNPROF_CP_RANK,
 * ATTNPROF_CP_NRANKS, ATTNPROF_CP_ID (the file NCCL's unique id travels
 * through) and NCCL_NVLS_ENABLE=0 in the child's environment. Each rank
 * makes its zigzag shard of a seeded problem, runs attn_cp_forward, times it,
 * optionally checks its rows against single-GPU flash and the fp64 reference,
 * and writes its trace (--trace DIR: DIR/rank<r>.json). The parent waits,
 * prints one row for the run, and with --trace merges the ranks' traces into
 * DIR/merged.json and prints compute, communication and hidden share per rank
 * and step. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnprof/cp.h"
#include "attnprof/device.h"
#include "attnprof/prof/ranks.h"
#include "cli/cli.h"
#include "cli/cp_launch.h"

typedef struct {
  cli_problem p;
  int gpus, iters, warmup, check, row_only;
  attn_cp_variant variant;
  const char *trace_dir;
} cp_opts;

static const char cp_usage[] =
    "usage: attnprof cp --gpus N [--variant ring|allgather|auto] --shape BxHxSxD [--kv-heads H]\n"
    "       [--dtype bf16|f16] [--causal] [--iters N] [--warmup N] [--check] [--trace DIR]\n";

static int parse_int(const char *name, const char *v, int lo, int hi, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == 0 || *end || x < lo || x > hi)
    return cli_usage_error("%s %s: give an integer from %d to %d", name, v, lo, hi), -1;
  *out = (int)x;
  return 0;
}

static int parse_cp(int argc, char **argv, cp_opts *o) {
  memset(o, 0, sizeof *o);
  cli_problem_defaults(&o->p);
  o->p.dtype = ATTN_DTYPE_BF16;
  o->iters = 20, o->warmup = 3;
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r;
    if ((r = cli_opt_value(argc, argv, &i, "--gpus", &v))) {
      if (r < 0 || parse_int("--gpus", v, 1, 1024, &o->gpus)) return -1;
    } else if ((r = cli_opt_value(argc, argv, &i, "--variant", &v))) {
      if (r < 0) return -1;
      if (attn_cp_variant_from_name(v, &o->variant))
        return cli_usage_error("%s", attn_last_error()), -1;
    } else if ((r = cli_opt_value(argc, argv, &i, "--iters", &v))) {
      if (r < 0 || parse_int("--iters", v, 1, 100000, &o->iters)) return -1;
    } else if ((r = cli_opt_value(argc, argv, &i, "--warmup", &v))) {
      if (r < 0 || parse_int("--warmup", v, 0, 100000, &o->warmup)) return -1;
    } else if ((r = cli_opt_value(argc, argv, &i, "--trace", &v))) {
      if (r < 0) return -1;
      o->trace_dir = v;
    } else if (cli_opt_flag(argc, argv, &i, "--check")) {
      o->check = 1;
    } else if (cli_opt_flag(argc, argv, &i, "--row")) {
      o->row_only = 1; /* compare --gpus: the summary row only */
    } else if ((r = cli_parse_problem_opt(argc, argv, &i, &o->p))) {
      if (r < 0) return -1;
    } else {
      return cli_usage_error("cp: unknown option '%s'\n%s", argv[i], cp_usage), -1;
    }
  }
  if (!o->gpus) return cli_usage_error("cp: --gpus N is required\n%s", cp_usage), -1;
  if (o->p.sk != o->p.sq)
    return cli_usage_error("cp: one sequence (--sk must equal S, got %lld and %lld)",
                           (long long)o->p.sk, (long long)o->p.sq),
           -1;
  if (o->p.causal == ATTN_CAUSAL_BOTTOM_RIGHT || o->p.mask != ATTN_MASK_NONE)
    return cli_usage_error("cp: --causal (top-left) or none, no --mask"), -1;
  if (o->p.dtype == ATTN_DTYPE_F32)
    return cli_usage_error("cp: --dtype bf16 or f16 (the CUDA flash kernel's)"), -1;
  return 0;
}

int cmd_cp(int argc, char **argv) {
  cp_opts o;
  if (parse_cp(argc, argv, &o)) return CLI_USAGE;
  const char *rank = getenv("ATTNPROF_CP_RANK");
  if (rank && *rank)
    return cli_cp_rank(&o.p, o.gpus, atoi(rank), o.variant, o.iters, o.warmup, o.check,
                       o.trace_dir);
  int have = attn_cp_device_count();
  if (have < o.gpus)
    return cli_usage_error("cp --gpus %d needs %d CUDA device(s), this machine has %d", o.gpus,
                           o.gpus, have);
  char why[600];
  if (o.gpus > 1 && attn_cp_nccl_available(why, sizeof why) != ATTN_STATUS_OK)
    return cli_failure("%s", why);
  if (o.trace_dir && mkdir(o.trace_dir, 0777) != 0 && errno != EEXIST)
    return cli_usage_error("cp --trace %s: cannot create the folder: %s", o.trace_dir,
                           strerror(errno));
  return cli_cp_launch(argc, argv, o.gpus, o.variant, o.trace_dir, o.row_only);
}

/* compare --gpus N: one `attnprof cp` run per variant, one row each. */
int cli_cp_compare(int argc, char **argv) {
  cp_opts o;
  if (parse_cp(argc, argv, &o)) return CLI_USAGE;
  if (o.trace_dir)
    return cli_usage_error("compare --gpus: no --trace (trace one variant with attnprof cp "
                           "--variant V --trace DIR)");
  int have = attn_cp_device_count();
  if (have < o.gpus)
    return cli_usage_error("compare --gpus %d needs %d CUDA device(s), this machine has %d", o.gpus,
                           o.gpus, have);
  char why[600];
  if (o.gpus > 1 && attn_cp_nccl_available(why, sizeof why) != ATTN_STATUS_OK)
    return cli_failure("%s", why);
  char **av = calloc((size_t)argc + 3, sizeof *av);
  if (!av) return cli_failure("compare: no memory");
  memcpy(av, argv, (size_t)argc * sizeof *av);
  static char *variants[] = {"ring", "allgather"};
  int worst = CLI_OK;
  printf("attnprof compare: context parallelism over %d GPUs, one row per variant\n", o.gpus);
  cli_cp_print_header();
  for (int v = 0; v < 2; v++) {
    av[argc] = "--variant";
    av[argc + 1] = variants[v];
    av[argc + 2] = "--row";
    int rc = cli_cp_launch(argc + 3, av, o.gpus, ATTN_CP_AUTO, NULL, 1);
    worst = rc > worst ? rc : worst;
  }
  free(av);
  return worst;
}
