/* The metrics an expectation can name, and how each is observed in a range's
 * per-call figures (prof_summarize_ranges). */
#include <stdio.h>
#include <string.h>

#include "prof/analysis/expect.h"

static int observe_ops(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                       prof_observed *out, char *why, size_t len) {
  out->num = c->row->per_call_total;
  return 0;
}

static int observe_kind(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                        prof_observed *out, char *why, size_t len) {
  out->num = c->row->per_call_kind[m->param];
  return 0;
}

static int observe_device_us(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                             prof_observed *out, char *why, size_t len) {
  out->num = c->row->device_us_per_call;
  return 0;
}

static int observe_host_us(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                           prof_observed *out, char *why, size_t len) {
  out->num = c->row->host_us_per_call;
  return 0;
}

static int observe_calls(const prof_metric *m, const prof_expect_ctx *c, const char *arg,
                         prof_observed *out, char *why, size_t len) {
  out->num = (double)c->row->calls;
  return 0;
}

/* Plural spellings of the kind names (a kind added later without one here is
 * accepted in the singular only). */
#define PLURAL_KERNEL "kernels"
#define PLURAL_MEMCPY "memcpys"
#define PLURAL_MEMSET "memsets"
#define PLURAL_GEMM "gemms"
#define PLURAL_ELEMENTWISE NULL
#define PLURAL_COPY "copies"
#define PLURAL_SOFTMAX "softmaxes"
#define PLURAL_CAST "casts"
#define PLURAL_FUSED NULL
#define PLURAL_COMM NULL
#define PLURAL_OTHER "others"

static const prof_metric metrics[] = {
    {"ops", NULL, 0, 0, observe_ops},
#define KIND_METRIC(name, str) {str, PLURAL_##name, PROF_KIND_##name, 0, observe_kind},
    PROF_KIND_MAP(KIND_METRIC)
#undef KIND_METRIC
        {"device_us", NULL, 0, 0, observe_device_us},
    {"host_us", NULL, 0, 0, observe_host_us},
    {"calls", NULL, 0, 0, observe_calls},
    {"occupancy", NULL, 0, PROF_METRIC_ARG | PROF_METRIC_PERCENT, prof_observe_occupancy},
    {"launch", NULL, 0, PROF_METRIC_ARG | PROF_METRIC_STRING, prof_observe_launch},
};
enum { N_METRICS = sizeof metrics / sizeof metrics[0] };

const prof_metric *prof_metric_find(const char *word) {
  for (size_t i = 0; i < N_METRICS; i++)
    if (!strcmp(metrics[i].name, word) || (metrics[i].plural && !strcmp(metrics[i].plural, word)))
      return &metrics[i];
  return NULL;
}

/* Appends "name", "name(s)" or "name/plural" (whichever reads best). */
static void append_spelling(char *buf, size_t len, const prof_metric *m) {
  size_t used = strlen(buf), n = strlen(m->name);
  const char *sep = used ? ", " : "";
  const char *p = m->plural;
  if (!p) snprintf(buf + used, len - used, "%s%s", sep, m->name);
  else if (!strncmp(p, m->name, n))
    snprintf(buf + used, len - used, "%s%s(%s)", sep, m->name, p + n);
  else snprintf(buf + used, len - used, "%s%s/%s", sep, m->name, p);
}

const char *prof_metric_list(void) {
  static _Thread_local char buf[512];
  buf[0] = 0;
  for (size_t i = 0; i < N_METRICS; i++) append_spelling(buf, sizeof buf, &metrics[i]);
  return buf;
}
