/* What the commands that read trace files share (summary, diff, report):
 * loading a file with its warnings and exit status, JSON text that survives
 * any bytes a trace holds, and terminal cells that no name can break. */
#ifndef ATTNPROF_CLI_TRACES_H
#define ATTNPROF_CLI_TRACES_H

#include <jansson.h>

#include "cli/cli.h"

/* --verbose (any subcommand; main.c takes it out of argv): routine notes too. */
extern int cli_verbose;
/* --wide (likewise): tables show names whole instead of cut to a width. */
extern int cli_wide;

/* Reads path; prints the reader's warnings to stderr (routine skips only
 * with --verbose). Returns CLI_OK and the
 * trace, or the exit status after one error line: CLI_USAGE (2) when the
 * file is unreadable or no trace, CLI_FAILED on out of memory. */
int cli_load_trace(const char *path, prof_trace **out, prof_read_stats *stats);

/* A JSON string of s; bytes that are not UTF-8 become U+FFFD (jansson would
 * refuse the whole string). NULL s gives null. */
json_t *cli_json_text(const char *s);
/* null for a figure marked unknown (< 0), else the number. */
json_t *cli_json_known(double v);
/* [x, y, z] */
json_t *cli_json_dim3(const int32_t v[3]);
/* The reader's counts as a JSON object. */
json_t *cli_read_stats_json(const prof_read_stats *s);

/* s cut to width characters ("..." marks the cut) and padded (width < 0:
 * whole); control characters shown as '?', so a hostile name cannot drive
 * the terminal. */
void cli_put_cell(FILE *f, const char *s, int width);

#endif
