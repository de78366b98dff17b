/* The jansson oracle of reader_oracle.h: quadratic and plain on purpose,
 * sharing nothing with the reader or the analyses it checks. */
#include "reader/reader_oracle.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static int is(json_t *e, const char *key, const char *value) {
  const char *s = json_string_value(json_object_get(e, key));
  return s && !strcmp(s, value);
}

static json_int_t corr_of(json_t *e) {
  return json_integer_value(json_object_get(json_object_get(e, "args"), "correlation"));
}

static int same_thread(json_t *a, json_t *b) {
  return json_equal(json_object_get(a, "pid"), json_object_get(b, "pid")) &&
         json_equal(json_object_get(a, "tid"), json_object_get(b, "tid"));
}

static double num(json_t *e, const char *key) { return json_number_value(json_object_get(e, key)); }

/* The launch call with correlation c, or NULL. */
static json_t *launch_of(json_t *events, json_int_t c) {
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    if ((is(e, "cat", "cuda_runtime") || is(e, "cat", "cuda_driver")) && is(e, "ph", "X") &&
        corr_of(e) == c)
      return e;
  }
  return NULL;
}

static int inside_some(json_t *events, const char *range, json_t *launch) {
  size_t i;
  json_t *r;
  double ts = num(launch, "ts");
  json_array_foreach(events, i, r) {
    if (is(r, "cat", "user_annotation") && is(r, "name", range) && same_thread(r, launch) &&
        ts >= num(r, "ts") && ts <= num(r, "ts") + num(r, "dur"))
      return 1;
  }
  return 0;
}

static int arg_int(json_t *args, const char *key) {
  return (int)json_integer_value(json_object_get(args, key));
}

static void add_name(oracle *o, json_t *e, const char *launch) {
  const char *name = json_string_value(json_object_get(e, "name"));
  int i = oracle_find(o, name);
  if (i < 0 && o->n_names == ORACLE_MAX_NAMES) return;
  if (i >= 0) {
    o->count[i]++;
    return;
  }
  i = (int)o->n_names++;
  o->names[i] = strdup(name);
  o->launch[i] = strdup(launch);
  o->count[i] = 1;
  json_t *a = json_object_get(e, "args");
  for (int d = 0; d < 3; d++) {
    o->grid[i][d] = (int)json_integer_value(json_array_get(json_object_get(a, "grid"), (size_t)d));
    o->block[i][d] =
        (int)json_integer_value(json_array_get(json_object_get(a, "block"), (size_t)d));
  }
  o->regs[i] = arg_int(a, "registers per thread");
  o->smem[i] = arg_int(a, "shared memory");
  json_t *occ = json_object_get(a, "est. achieved occupancy %");
  o->occupancy_in_file[i] = occ ? json_number_value(occ) : -1;
}

void oracle_of(const char *path, const char *range, oracle *o) {
  memset(o, 0, sizeof *o);
  json_error_t err;
  json_t *doc = json_load_file(path, 0, &err);
  if (!doc) fail_msg("oracle: cannot load %s: %s", path, err.text);
  json_t *events = json_object_get(doc, "traceEvents"), *e;
  size_t i;
  json_array_foreach(events, i, e) {
    if (is(e, "cat", "user_annotation") && is(e, "name", range)) o->calls++;
    int k = is(e, "cat", "kernel")       ? 0
            : is(e, "cat", "gpu_memcpy") ? 1
            : is(e, "cat", "gpu_memset") ? 2
                                         : -1;
    json_t *l = k >= 0 ? launch_of(events, corr_of(e)) : NULL;
    if (!l || !inside_some(events, range, l)) continue;
    double *count[] = {&o->kernels, &o->memcpy, &o->memset};
    *count[k] += 1;
    o->device_us += num(e, "dur");
    add_name(o, e, json_string_value(json_object_get(l, "name")));
  }
  json_decref(doc);
  if (!o->calls) fail_msg("oracle: no range %s in %s", range, path);
  o->kernels /= o->calls, o->memcpy /= o->calls, o->memset /= o->calls, o->device_us /= o->calls;
}

void oracle_free(oracle *o) {
  for (size_t i = 0; i < o->n_names; i++) free(o->names[i]), free(o->launch[i]);
  memset(o, 0, sizeof *o);
}

int oracle_find(const oracle *o, const char *name) {
  for (size_t i = 0; i < o->n_names; i++)
    if (!strcmp(o->names[i], name)) return (int)i;
  return -1;
}

/* "| trace_naive.json | 5 | 1 (DtoD) | 1 | 1062.450 |": cells split at '|'. */
static int parse_row(char *line, const char *file, double out[4]) {
  char *cell[6];
  int n = 0;
  for (char *tok = strtok(line, "|"); tok && n < 6; tok = strtok(NULL, "|")) cell[n++] = tok;
  if (n < 5) return -1;
  char name[128];
  if (sscanf(cell[0], " %127s", name) != 1 || strcmp(name, file)) return -1;
  for (int k = 0; k < 4; k++)
    if (sscanf(cell[k + 1], " %lf", &out[k]) != 1) return -1;
  return 0;
}

int readme_row(const char *readme, const char *file, double out[4]) {
  FILE *f = fopen(readme, "r");
  if (!f) fail_msg("cannot open %s", readme);
  char line[512];
  int found = -1;
  while (found < 0 && fgets(line, sizeof line, f)) found = parse_row(line, file, out);
  fclose(f);
  return found;
}
