/* The CLI's --json documents, printed with every number in full: jansson's
 * dump takes one precision for all reals (printf's %.Ng), and at 6 digits
 * 2617.8517 came out 2617.85 and a total of 12054612.3 as 12054600.0.
 * Here each real is written in the shortest form that reads back the same
 * (json_out's json_num), keys in insertion order, indented as before. */
#include <stdio.h>

#include "cli/report.h"
#include "prof/io/json_out.h"

static void indent(json_out *o, int depth) {
  json_raw(o, "\n");
  for (int i = 0; i < depth; i++) json_raw(o, "  ");
}

static void put_value(json_out *o, json_t *v, int depth) {
  const char *key;
  json_t *item;
  size_t i, n = 0;
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    json_raw(o, "{");
    json_object_foreach(v, key, item) {
      json_raw(o, n++ ? "," : "");
      indent(o, depth + 1);
      json_key(o, key);
      put_value(o, item, depth + 1);
    }
    if (n) indent(o, depth);
    json_raw(o, "}");
    return;
  case JSON_ARRAY:
    json_raw(o, "[");
    json_array_foreach(v, i, item) {
      json_raw(o, i ? "," : "");
      indent(o, depth + 1);
      put_value(o, item, depth + 1);
    }
    if (json_array_size(v)) indent(o, depth);
    json_raw(o, "]");
    return;
  case JSON_STRING: json_str(o, json_string_value(v)); return;
  case JSON_INTEGER: json_int(o, (int64_t)json_integer_value(v)); return;
  case JSON_REAL: json_num(o, json_real_value(v)); return;
  case JSON_TRUE: json_raw(o, "true"); return;
  case JSON_FALSE: json_raw(o, "false"); return;
  case JSON_NULL: json_raw(o, "null"); return;
  }
}

int cli_json_print(json_t *doc) {
  json_out o = {stdout, 0};
  put_value(&o, doc, 0);
  json_raw(&o, "\n");
  json_decref(doc);
  return o.err || fflush(stdout) ? cli_failure("could not write JSON to standard output") : CLI_OK;
}
