/* Expectation metrics about one kernel of a range (rows of expect_metrics.c):
 * occupancy(K) is our estimated achieved occupancy in percent, launch(K) the
 * API that launched it. K is "top" (the kernel with the most device time in
 * the range) or text a kernel name contains (quotes optional); among several
 * matches the costliest. Both come from the kernel table
 * (prof_summarize_kernels), so a trace read from disk is checked as a live one. */
#include <stdlib.h>
#include <string.h>

#include "prof/analysis/expect.h"

/* The kernel K names in the range, copied into *out; 0, or -1 with why set. */
static int pick_kernel(const prof_expect_ctx *c, const char *arg, prof_kernel_summary *out,
                       char *why, size_t len) {
  char key[256];
  size_t n = arg ? strlen(arg) : 0;
  if (n >= 2 && (arg[0] == '"' || arg[0] == '\'') && arg[n - 1] == arg[0]) arg++, n -= 2;
  snprintf(key, sizeof key, "%.*s", (int)n, arg ? arg : "");
  prof_kernel_summary *rows = NULL;
  int64_t rn = -1, hit = -1;
  if (prof_summarize_kernels(c->t, c->row->name, &rows, &rn)) rn = -1;
  for (int64_t i = 0; i < rn && hit < 0; i++)
    if (!strcmp(key, "top") || strstr(rows[i].name, key)) hit = i;
  if (hit >= 0) *out = rows[hit];
  else if (rn < 0) snprintf(why, len, "out of memory");
  else if (!rn) snprintf(why, len, "no kernel in the range");
  else snprintf(why, len, "no kernel named like '%.24s'", key);
  free(rows);
  return hit >= 0 ? 0 : -1;
}

int prof_observe_occupancy(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                           prof_observed *out, char *why, size_t len) {
  prof_kernel_summary k;
  if (pick_kernel(c, arg, &k, why, len)) return -1;
  if (k.occupancy_pct < 0) return snprintf(why, len, "no device properties in the trace"), -1;
  out->num = k.occupancy_pct;
  return 0;
}

int prof_observe_launch(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                        prof_observed *out, char *why, size_t len) {
  prof_kernel_summary k;
  if (pick_kernel(c, arg, &k, why, len)) return -1;
  if (!k.launch_api) return snprintf(why, len, "its launch call is not in the trace"), -1;
  snprintf(out->str, sizeof out->str, "%s", k.launch_api);
  return 0;
}
