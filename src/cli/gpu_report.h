/* What compare prints for a GPU beyond the shared table: each backend's top
 * kernel (the one with the most device time per forward) with its footprint
 * and occupancy, all read from the recorded trace. */
#ifndef ATTNPROF_CLI_GPU_REPORT_H
#define ATTNPROF_CLI_GPU_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "cli/cli.h"

typedef struct {
  const char *name;        /* NULL: the trace holds no kernel */
  double calls, device_us; /* per forward */
  prof_footprint fp;
  int have_occ; /* the trace knows the device's limits */
  prof_occupancy occ;
} cli_top_kernel;

/* The top kernel of a trace of `forwards` forwards. */
void cli_top_kernel_find(const prof_trace *t, int64_t forwards, cli_top_kernel *out);
/* {"name", "calls_per_forward", "device_us_per_forward", "grid", "block",
 * "registers_per_thread", "shared_memory", "occupancy_pct",
 * "occupancy_est_achieved_pct", "limited_by"}, or null. */
json_t *cli_top_kernel_json(const prof_trace *t, int64_t forwards);
/* One line per backend that ran. */
void cli_print_top_kernels(FILE *f, const cli_result *rs, int n);

#endif
