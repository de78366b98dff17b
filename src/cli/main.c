/* attnprof: the command. Each subcommand lives in its own cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_trace.h"
#include "cli/traces.h"
#include "cli/cp_launch.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *help;
} commands[] = {
    {"run", cmd_run, "one backend (or auto) on one problem: ops per forward, times, error"},
    {"compare", cmd_compare,
     "every available backend on one problem, one table (--sweep, --serving: grids)"},
    {"summary", cmd_summary, "summary of a trace file (torch.profiler's or ours): ranges, kernels"},
    {"diff", cmd_diff, "what appeared, vanished or changed between two trace files"},
    {"report", cmd_report, "one self-contained HTML page over trace files (--html OUT)"},
    {"merge", cmd_merge, "traces of several processes/ranks on one timeline, per-rank figures"},
    {"trace", cmd_trace,
     "trace any CUDA program through CUPTI: -- CMD ARGS (NVTX ranges summarized)"},
    {"cp", cmd_cp, "context-parallel attention over N GPUs (one process each), per-rank traces"},
    {"version", cmd_version, "version, backends and collectors compiled in"},
    {"help", cmd_help, "this text"},
};

/* The options run and compare share, one line each. */
static const char *const problem_options[] = {
    "  --shape BxHxSxD      batch, heads, sequence, head dim (CPU default 1x8x1024x64, GPU "
    "8x16x1024x64)",
    "  --sk N               key/value length when it differs from the query length",
    "  --kv-heads N         key/value heads (GQA; must divide H)",
    "  --dtype T            f32, f16 or bf16 (default bf16)",
    "  --causal[=ALIGN]     top-left (the default problem's), bottom-right, or none",
    "  --mask KIND          bool or additive random mask broadcast over heads",
    "  --layout L           bhsd (default) or bshd (strided, no transpose copy)",
    "  --scale X            softmax scale (default 1/sqrt(D))",
    "  --lse                also compute the log-sum-exp per query row",
    "  --seed N             seed of the random inputs",
    "  --device D           cpu (default), cuda, cuda:N",
};
static const char *const measure_options[] = {
    "  --iters N            timed forwards; median and spread reported (default 20, GPU >= 50)",
    "  --warmup N           untimed forwards first (default 2)",
    "  --threads N          CPU threads (the engine handle's cpu_threads)",
    "  --cuda-graphs        GPU baselines replayed as a CUDA graph (docs/engine.md)",
    "  --flash-kernel K     auto, mma_sync, wgmma or ws: which kernel CUDA flash runs",
    "  --no-check           skip the fp64 reference check",
    "  --force              run past the memory and time estimates (see docs/cli.md)",
    "  --trace FILE         write the profiled forwards as a Chrome/Kineto trace",
    "  --format F           the trace's format: json, json.gz or pftrace (default: by FILE's name)",
    "  --json               machine-readable output (docs/output-contract.md)",
    "  --copy-bw GBPS       the copy roof, instead of the one measured once per card (cache file)",
    "  --peak-tflops X      the compute roof, instead of the card's measured GEMM rate",
    "  --verbose            routine notes too",
    "  --wide               tables show names whole (default: cut to fit)",
};

void cli_print_options(FILE *f, int run) {
  fputs("problem options:\n", f);
  for (size_t i = 0; i < sizeof problem_options / sizeof *problem_options; i++)
    fprintf(f, "%s\n", problem_options[i]);
  fputs("measure options:\n", f);
  for (size_t i = 0; i < sizeof measure_options / sizeof *measure_options; i++)
    fprintf(f, "%s\n", measure_options[i]);
  if (run)
    fputs("  --expect EXPR|@FILE  guess first: e.g. 'ops==5, copies==0'; exit 1 if broken\n", f);
}

static int cmd_help(int argc, char **argv) {
  /* attnprof help CMD: that command's own help. */
  for (size_t i = 0; argc > 0 && i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[0], commands[i].name) && commands[i].fn != cmd_help) {
      char help[] = "--help";
      char *args[] = {help, NULL};
      return commands[i].fn(1, args);
    }
  if (argc > 0)
    return cli_usage_error("help %s: no such command: accepted are run, compare, summary, diff, "
                           "report, trace, version",
                           argv[0]);
  printf("attnprof %s: attention backends and what each one really does\n\n"
         "usage: attnprof COMMAND [options]\n\ncommands:\n",
         ATTNPROF_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    printf("  %-10s %s\n", commands[i].name, commands[i].help);
  printf("\nattnprof help COMMAND (or COMMAND --help) lists its options.\n"
         "exit status: 0 ok, 1 an expectation broke, 2 bad usage or input, 3 failure\n");
  return CLI_OK;
}

static int cmd_version(int argc, char **argv) {
  (void)argc, (void)argv;
  attn_backend_info info[32];
  size_t n = attn_backend_list(info, 32);
  printf("attnprof %s\nbackends:\n", ATTNPROF_VERSION);
  for (size_t i = 0; i < n && i < 32; i++)
    printf("  %-14s %-20s %s\n", info[i].name, info[i].impl, info[i].summary);
  const char *names[8];
  size_t nc = prof_collector_list(names, 8);
  printf("collectors:");
  for (size_t i = 0; i < nc && i < 8; i++) printf(" %s", names[i]);
  printf("\n");
  return CLI_OK;
}

/* --verbose and --wide anywhere before "--" are taken out of argv for every
 * subcommand. */
static int take_verbose(int argc, char **argv) {
  int n = 0;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      while (i < argc) argv[n++] = argv[i++];
      break;
    }
    if (!strcmp(argv[i], "--verbose")) cli_verbose = 1;
    else if (!strcmp(argv[i], "--wide")) cli_wide = 1;
    else argv[n++] = argv[i];
  }
  argv[n] = NULL;
  return n;
}

int main(int argc, char **argv) {
  argc = take_verbose(argc, argv);
  if (argc < 2)
    return cli_usage_error("no command given: accepted are run, compare, summary, diff, report, "
                           "trace, version, help (attnprof help)");
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) return cmd_version(0, NULL);
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return cmd_help(0, NULL);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 2, argv + 2);
  return cli_usage_error("unknown command '%s': accepted are run, compare, summary, diff, report, "
                         "merge, trace, cp, version, help",
                         argv[1]);
}
