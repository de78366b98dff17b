/* The summary of a trace read from disk, computed once and shown as text or
 * as the JSON of docs/output-contract.md (`summary --json`), and the expectation checks the
 * summary command runs on it. */
#ifndef ATTNPROF_CLI_SUMMARY_JSON_H
#define ATTNPROF_CLI_SUMMARY_JSON_H

#include <jansson.h>

#include "cli/cli.h"

typedef struct {
  prof_range_summary *ranges; /* all, or the one --range names */
  int64_t n_ranges;
  prof_kernel_summary *kernels;
  int64_t n_kernels;
  prof_key_average *keys;
  int64_t n_keys;
  prof_link_stats links; /* what linking and nesting could not settle */
} cli_summary;

/* CLI_OK, or an exit status after one error line (--range not in the trace: 2).
 * Profiler steps are one row "ProfilerStep#N" unless flags has
 * PROF_SUMMARY_PER_STEP or range names one step. */
int cli_summary_build(const prof_trace *t, const char *range, cli_summary *s);
int cli_summary_build_ex(const prof_trace *t, const char *range, unsigned flags, cli_summary *s);
/* The lines that say what linking could not settle (nothing when all was). */
void cli_print_links(FILE *f, const prof_link_stats *l);
json_t *cli_links_json(const prof_link_stats *l);
void cli_summary_free(cli_summary *s);

json_t *cli_summary_json(const char *file, const prof_read_stats *stats, const prof_trace *t,
                         const cli_summary *s);
json_t *cli_range_json(const prof_range_summary *r);
json_t *cli_kernel_json(const prof_kernel_summary *k);
json_t *cli_key_json(const prof_key_average *r);
void cli_print_kernels(FILE *f, const prof_kernel_summary *rows, int64_t n);

/* --expect VALUE (inline or @FILE) parsed; CLI_OK or CLI_USAGE after one line. */
int cli_parse_expect(const char *value, prof_expect **out);
/* The range expectations without a [section] check: --range, else attn_fwd
 * when the trace has it, else the trace's only range. */
const char *cli_expect_range(const prof_trace *t, const char *range);
/* Held/BROKEN lines to f; CLI_OK, CLI_EXPECT_BROKEN, or CLI_USAGE (range missing). */
int cli_expect_print(FILE *f, const prof_expect *ex, const prof_trace *t, const char *range);
/* [{"expectation", "observed", "held"}]; *rc set as cli_expect_print returns. */
json_t *cli_expect_json(const prof_expect *ex, const prof_trace *t, const char *range, int *rc);

#endif
