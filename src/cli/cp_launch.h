/* attnprof cp's two halves: the launcher (one process per GPU, cp_launch.c)
 * and one rank's work (cp_rank.c). */
#ifndef ATTNPROF_CLI_CP_LAUNCH_H
#define ATTNPROF_CLI_CP_LAUNCH_H

#include "attnprof/cp.h"
#include "cli/cli.h"

/* Runs `attnprof cp ARGS` once per rank (argv: the arguments after "cp"),
 * waits, prints the run's row (and the header unless row_only), merges the
 * traces under trace_dir. Returns the worst exit status. */
int cli_cp_launch(int argc, char **argv, int gpus, attn_cp_variant variant, const char *trace_dir,
                  int row_only);
/* One rank (from the environment the launcher set). */
int cli_cp_rank(const cli_problem *p, int nranks, int rank, attn_cp_variant variant, int iters,
                int warmup, int check, const char *trace_dir);
/* The header of the rows cli_cp_launch prints. */
void cli_cp_print_header(void);

int cmd_cp(int argc, char **argv);
/* compare --gpus N: one row per variant. */
int cli_cp_compare(int argc, char **argv);

#endif
