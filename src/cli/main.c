/* attnprof: the command. Each subcommand lives in its own cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_trace.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *help;
} commands[] = {
    {"run", cmd_run, "one backend (or auto) on one problem: ops per forward, times, error"},
    {"compare", cmd_compare, "every available backend on one problem, one table (--sweep, --serving: grids)"},
    {"summary", cmd_summary, "summary of a trace file (torch.profiler's or ours): ranges, kernels"},
    {"diff", cmd_diff, "what appeared, vanished or changed between two trace files"},
    {"report", cmd_report, "one self-contained HTML page over trace files (--html OUT)"},
    {"merge", cmd_merge, "traces of several processes/ranks on one timeline, per-rank figures"},
    {"trace", cmd_trace, "trace any CUDA program through CUPTI: -- CMD ARGS (NVTX ranges summarized)"},
    {"version", cmd_version, "version, backends and collectors compiled in"},
    {"help", cmd_help, "this text"},
};

static const char options_help[] =
    "problem options:\n"
    "  --shape BxHxSxD      batch, heads, sequence, head dim (default 1x8x1024x64 on the CPU)\n"
    "  --sk N               key/value length when it differs from the query length\n"
    "  --kv-heads N         key/value heads (GQA; must divide H)\n"
    "  --dtype T            f32, f16 or bf16 (default bf16)\n"
    "  --causal[=ALIGN]     causal mask, top-left (default) or bottom-right; --causal=none\n"
    "                       (the default problem is causal top-left)\n"
    "  --mask KIND          bool or additive random mask broadcast over heads\n"
    "  --layout L           bhsd (default) or bshd (strided, no transpose copy)\n"
    "  --scale X            softmax scale (default 1/sqrt(D))\n"
    "  --lse                also compute the log-sum-exp per query row\n"
    "  --seed N             seed of the random inputs\n"
    "  --device D           cpu (default), cuda, cuda:N (on a GPU the default shape is\n"
    "                       8x16x1024x64)\n"
    "measure options:\n"
    "  --iters N            timed forwards, the median is reported (default 20; at least\n"
    "                       50 on a GPU, timed with CUDA events)\n"
    "  --warmup N           untimed forwards first (default 2)\n"
    "  --threads N          CPU threads\n"
    "  --no-check           skip the fp64 reference check\n"
    "  --trace FILE         write the profiled forwards as a Chrome/Kineto trace\n"
    "  --format F           the trace's format: json, json.gz or pftrace (Perfetto\n"
    "                       protobuf); default: by FILE's name (.pftrace, .gz, else json)\n"
    "  --json               machine-readable output\n"
    "  --copy-bw GBPS       the copy roof, instead of the one measured once per card and\n"
    "                       kept in $XDG_CACHE_HOME/attnprof/bandwidth.json\n"
    "  --peak-tflops X      the compute roof, instead of the card's measured GEMM rate\n"
    "  --expect EXPR|@FILE  guess first: e.g. 'ops==5, copies==0' (run only; exit 1 if broken)\n";

static int cmd_help(int argc, char **argv) {
  (void)argc, (void)argv;
  printf("attnprof %s: attention backends and what each one really does\n\n"
         "usage: attnprof COMMAND [options]\n\ncommands:\n", ATTNPROF_VERSION);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    printf("  %-10s %s\n", commands[i].name, commands[i].help);
  printf("\n%s\nexit status: 0 ok, 1 an expectation broke, 2 bad usage or input, 3 failure\n",
         options_help);
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

int main(int argc, char **argv) {
  if (argc < 2) return cmd_help(0, NULL), CLI_USAGE;
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) return cmd_version(0, NULL);
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return cmd_help(0, NULL);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 2, argv + 2);
  return cli_usage_error("unknown command '%s': accepted are run, compare, summary, diff, report, merge, trace, version, help",
                         argv[1]);
}
