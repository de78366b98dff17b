/* Checks made before anything is allocated (issue 14, item 7): the
 * backend's why-not on the problem's shapes, estimates of memory and time
 * (refused with the figures unless --force), and whether the fp64 check
 * fits (skipped, saying so, when it would not). */
#ifndef ATTNPROF_CLI_PREFLIGHT_H
#define ATTNPROF_CLI_PREFLIGHT_H

#include "cli/cli.h"

/* Past this estimate a run is refused without --force; the fp64 check is
 * skipped past CLI_REF_LIMIT_S or past half the available memory. */
#define CLI_TIME_LIMIT_S 600.0
#define CLI_REF_LIMIT_S 120.0

/* Resolves AUTO into *b (its reasons into log), refuses with one line when
 * the backend would, when the inputs cannot fit in memory, or when the run
 * is estimated past CLI_TIME_LIMIT_S (unless m->force). May clear m->check
 * with a line on stderr. CLI_OK or the exit status. */
int cli_preflight(const cli_problem *p, cli_measure_opts *m, attn_backend *b, char *log,
                  size_t len);
/* Only the fp64-check half (compare, which runs every backend). */
void cli_preflight_reference(const cli_problem *p, cli_measure_opts *m);

#endif
