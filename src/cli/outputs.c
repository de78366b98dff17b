/* What every measuring subcommand does before and after its work: reject a
 * bad --expect or an unwritable --trace before running anything, write the
 * trace, check the expectations. */
#include <stdlib.h>

#include "cli/cli.h"

int cli_status_exit(attn_status st, const char *why) {
  if (st == ATTN_STATUS_INVALID_ARGUMENT || st == ATTN_STATUS_UNSUPPORTED)
    return cli_usage_error("%s", why);
  return cli_failure("%s (%s)", why, attn_status_string(st));
}

int cli_prepare_outputs(const cli_measure_opts *m, prof_expect **ex) {
  *ex = NULL;
  if (m->expect_text) {
    char *text = cli_expect_text(m->expect_text);
    if (!text) return CLI_USAGE;
    attn_status st = prof_expect_parse(text, ex);
    free(text);
    if (st) return cli_usage_error("--expect: %s", attn_last_error());
  }
  if (m->trace_format != PROF_FORMAT_AUTO && !m->trace_path) {
    prof_expect_free(*ex);
    *ex = NULL;
    return cli_usage_error("--format %s: no --trace FILE to write",
                           prof_trace_format_name(m->trace_format));
  }
  if (m->trace_path && prof_check_writable(m->trace_path)) {
    prof_expect_free(*ex);
    *ex = NULL;
    return cli_usage_error("--trace: %s", attn_last_error());
  }
  return CLI_OK;
}

int cli_write_trace(const char *path, prof_trace_format f, const prof_trace *t) {
  if (!path) return CLI_OK;
  prof_write_opts o = prof_write_opts_default();
  o.format = f;
  if (prof_write_trace(t, path, &o)) return cli_failure("--trace: %s", attn_last_error());
  fprintf(stderr, "attnprof: trace written to %s\n", path);
  return CLI_OK;
}

int cli_check_expect(const prof_expect *ex, const prof_trace *t, FILE *f) {
  if (!ex) return CLI_OK;
  fprintf(f, "\nexpectations (per %s):\n", CLI_RANGE);
  int broken = 0;
  if (prof_expect_check(ex, t, CLI_RANGE, f, &broken)) return cli_failure("%s", attn_last_error());
  fprintf(f, "%s\n", broken ? "some expectations BROKE" : "all expectations held");
  return broken ? CLI_EXPECT_BROKEN : CLI_OK;
}
