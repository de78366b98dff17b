/* attnprof trace follows exec'd children: the injection library is inherited
 * with the environment, and each process but the program's own streams its
 * trace to OUT.partial.<pid> (inject.c). After the program ends, each one is
 * finished here into OUT.<pid>.json, one trace per process (torchrun's
 * workers, a script's CUDA child). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_trace.h"

/* The pid in name when name is prefix + digits, else 0. */
static long long pid_suffix(const char *name, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n) || !name[n]) return 0;
  for (const char *p = name + n; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return atoll(name + n);
}

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

/* OUT.json -> OUT.<pid>.json (and .json.gz, .pftrace: the pid before the
 * suffix, which names the format); any other name gets ".<pid>" at the end. */
static char *child_out(const char *out, long long pid) {
  static const char *const suffixes[] = {".json.gz", ".pftrace", ".json"};
  size_t n = strlen(out), len = n + 32;
  char *s = malloc(len);
  if (!s) return NULL;
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    size_t k = strlen(suffixes[i]);
    if (n > k && !strcmp(out + n - k, suffixes[i])) {
      snprintf(s, len, "%.*s.%lld%s", (int)(n - k), out, pid, suffixes[i]);
      return s;
    }
  }
  snprintf(s, len, "%s.%lld", out, pid);
  return s;
}

/* The pids of OUT.partial.<pid> files, sorted; their count, or -1. */
static int list_children(const char *partial, long long **pids) {
  const char *slash = strrchr(partial, '/');
  char dir[4096], prefix[1024];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - partial) : 1, slash ? partial : ".");
  if (slash && slash == partial) snprintf(dir, sizeof dir, "/");
  snprintf(prefix, sizeof prefix, "%s.", slash ? slash + 1 : partial);
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 0;
  *pids = NULL;
  for (struct dirent *e; (e = readdir(d));) {
    long long pid = pid_suffix(e->d_name, prefix);
    if (!pid) continue;
    if (n == cap) {
      long long *grown = realloc(*pids, (size_t)(cap = cap ? 2 * cap : 8) * sizeof *grown);
      if (!grown) break;
      *pids = grown;
    }
    (*pids)[n++] = pid;
  }
  closedir(d);
  if (n > 1) qsort(*pids, (size_t)n, sizeof **pids, cmp_ll);
  return n;
}

int trace_children(const trace_opts *o, const trace_paths *p) {
  long long *pids = NULL;
  int n = list_children(p->partial, &pids);
  for (int i = 0; i < n; i++) {
    char partial[4200], report[4200];
    snprintf(partial, sizeof partial, "%s.%lld", p->partial, pids[i]);
    snprintf(report, sizeof report, "%s.%lld", p->report, pids[i]);
    char *out = child_out(o->out, pids[i]);
    if (!out) break;
    trace_opts co = *o;
    co.out = out;
    trace_paths cp = {p->inject, partial, report, NULL};
    if (trace_finish_child(&co, &cp, pids[i]))
      fprintf(stderr, "attnprof: child process %lld: its trace could not be finished (kept %s)\n",
              pids[i], partial);
    free(out);
  }
  free(pids);
  return n < 0 ? 0 : n;
}

void trace_children_clean(const trace_paths *p) {
  long long *pids = NULL;
  int n = list_children(p->partial, &pids);
  for (int i = 0; i < n; i++) { /* an earlier run's leftovers are not this run's children */
    char path[4200];
    snprintf(path, sizeof path, "%s.%lld", p->partial, pids[i]);
    remove(path);
    snprintf(path, sizeof path, "%s.%lld", p->report, pids[i]);
    remove(path);
  }
  free(pids);
}
