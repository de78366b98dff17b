/* Per-rank figures for summary and merge (ranks.c): a rank is one file of
 * several, or one process of a trace that holds several. */
#ifndef ATTNPROF_CLI_RANKS_H
#define ATTNPROF_CLI_RANKS_H

#include <jansson.h>
#include <stdio.h>

#include "cli/cli.h"

typedef struct {
  const prof_trace *t;
  int64_t pid;      /* -1: the whole trace (a file per rank); else this process only */
  const char *file; /* the rank's file, NULL for a process of one trace */
} cli_rank;

/* What each rank's figures are made of. */
typedef struct {
  prof_range_summary *ranges;
  int64_t n_ranges;
  prof_kernel_summary *kernels;
  int64_t n_kernels;
  prof_key_average *keys;
  int64_t n_keys;
} cli_rank_tables;

/* The processes of t as ranks, in pid order (malloc'd *out); their count,
 * or -1 (out of memory). */
int64_t cli_ranks_of_trace(const prof_trace *t, cli_rank **out);
/* Per range each rank's calls, kernels and collectives per call, device and
 * host time per call, and the spread; then the kernel table and the key
 * averages (the first `top` names) with a row per rank. CLI_OK or an exit
 * status after one line. */
int cli_print_ranks(FILE *f, const cli_rank *ranks, size_t n, int64_t top);
/* The same as {"ranks": [{"rank", "file" | "pid", "ranges", "kernels",
 * "key_averages"}], "spread": [{"name", "ranks", "device_us_min", ...}]};
 * NULL when out of memory. */
json_t *cli_ranks_json(const cli_rank *ranks, size_t n);

#endif
