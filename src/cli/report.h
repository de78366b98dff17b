/* Text rows and JSON objects for measured backends. */
#ifndef ATTNPROF_CLI_REPORT_H
#define ATTNPROF_CLI_REPORT_H

#include <jansson.h>

#include "cli/cli.h"

json_t *cli_problem_json(const cli_problem *p);
json_t *cli_result_json(const cli_result *r);
/* Prints doc to stdout and releases it. */
int cli_json_print(json_t *doc);
/* One aligned table: ops per forward by kind, times, GFLOP/s, error. */
void cli_print_results(FILE *f, const cli_result *rs, int n);

#endif
