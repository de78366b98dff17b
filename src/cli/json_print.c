/* The CLI's --json documents, printed with every number in full: jansson's
 * dump takes one precision for all reals (printf's %.Ng), and at 6 digits
 * 2617.8517 came out 2617.85 and a total of 12054612.3 as 12054600.0.
 * Here each real is written in the shortest form that reads back the same,
 * keys in insertion order, indented as before; strings and the rest are
 * jansson's own encoding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/report.h"

static void indent(FILE *f, int depth) {
  fputc('\n', f);
  for (int i = 0; i < depth; i++) fputs("  ", f);
}

/* The shortest %.Ng that reads back as v (N <= 17 always does); integral
 * values as integers, NaN and infinities (not JSON) as null. */
static void put_real(FILE *f, double v) {
  char buf[40];
  if (!isfinite(v)) {
    fputs("null", f);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  fputs(buf, f);
}

/* jansson's encoding of a scalar (strings escaped as it does). */
static void put_scalar(FILE *f, json_t *v) {
  char *s = json_dumps(v, JSON_ENCODE_ANY);
  fputs(s ? s : "null", f);
  free(s);
}

static void put_value(FILE *f, json_t *v, int depth) {
  const char *key;
  json_t *item;
  size_t i, n = 0;
  switch (json_typeof(v)) {
    case JSON_OBJECT:
      fputc('{', f);
      json_object_foreach(v, key, item) {
        if (n++) fputc(',', f);
        indent(f, depth + 1);
        json_t *k = json_string(key);
        put_scalar(f, k);
        json_decref(k);
        fputs(": ", f);
        put_value(f, item, depth + 1);
      }
      if (n) indent(f, depth);
      fputc('}', f);
      return;
    case JSON_ARRAY:
      fputc('[', f);
      json_array_foreach(v, i, item) {
        if (i) fputc(',', f);
        indent(f, depth + 1);
        put_value(f, item, depth + 1);
      }
      if (json_array_size(v)) indent(f, depth);
      fputc(']', f);
      return;
    case JSON_REAL:
      put_real(f, json_real_value(v));
      return;
    default:
      put_scalar(f, v);
      return;
  }
}

int cli_json_print(json_t *doc) {
  put_value(stdout, doc, 0);
  fputc('\n', stdout);
  json_decref(doc);
  return ferror(stdout) || fflush(stdout) ? cli_failure("could not write JSON to standard output")
                                          : CLI_OK;
}
