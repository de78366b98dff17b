/* Helpers of the commands that read trace files (see traces.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/traces.h"

int cli_verbose, cli_wide;

int cli_load_trace(const char *path, prof_trace **out, prof_read_stats *stats) {
  attn_status st = prof_read_chrome_trace(path, out, stats);
  if (st == ATTN_STATUS_OUT_OF_MEMORY) return cli_failure("%s", attn_last_error());
  if (st) return cli_usage_error("%s", attn_last_error());
  char prefix[512];
  snprintf(prefix, sizeof prefix, "attnprof: warning: %s: ", path);
  /* Every PyTorch trace holds events of categories and phases the model
   * leaves out (Trace, instant events): routine, so said only with --verbose. */
  prof_read_stats shown = *stats;
  if (!cli_verbose) shown.unknown_category = 0, shown.unsupported_phase = 0;
  prof_read_stats_print(stderr, prefix, &shown);
  if (!stats->events) fprintf(stderr, "%sno events kept: nothing to analyse\n", prefix);
  return CLI_OK;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *p) {
  if (p[0] < 0x80) return 1;
  size_t n = p[0] >= 0xF0 && p[0] <= 0xF4  ? 4
             : p[0] >= 0xE0                ? 3
             : p[0] >= 0xC2 && p[0] < 0xE0 ? 2
                                           : 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  if (n == 3 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0))) return 0;
  if (n == 4 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90))) return 0;
  return n;
}

json_t *cli_json_text(const char *s) {
  if (!s) return json_null();
  json_t *j = json_string(s);
  if (j) return j;
  size_t n = strlen(s);
  char *clean = malloc(3 * n + 1), *o = clean; /* each bad byte becomes 3 bytes */
  if (!clean) return json_string("");
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t k = utf8_len(p);
    if (k) memcpy(o, p, k), o += k, p += k;
    else memcpy(o, "\xEF\xBF\xBD", 3), o += 3, p++;
  }
  *o = 0;
  j = json_string(clean);
  free(clean);
  return j ? j : json_string("");
}

json_t *cli_json_known(double v) { return v < 0 || !isfinite(v) ? json_null() : json_real(v); }

json_t *cli_json_dim3(const int32_t v[3]) {
  return json_pack("[iii]", (int)v[0], (int)v[1], (int)v[2]);
}

json_t *cli_read_stats_json(const prof_read_stats *s) {
  json_t *o = json_pack(
      "{sI sI sI sI sI sI sI sI sI sI sI}", "events", (json_int_t)s->events, "devices",
      (json_int_t)s->devices, "metadata", (json_int_t)s->metadata, "flows", (json_int_t)s->flows,
      "unknown_category", (json_int_t)s->unknown_category, "unsupported_phase",
      (json_int_t)s->unsupported_phase, "missing_time", (json_int_t)s->missing_time, "not_an_event",
      (json_int_t)s->not_an_event, "bad_values", (json_int_t)s->bad_values, "truncated_strings",
      (json_int_t)s->truncated_strings, "out_of_order", (json_int_t)s->out_of_order);
  json_t *cats = json_array(); /* [{name, count}]: a file's names may not be valid keys */
  for (int i = 0; i < s->n_categories; i++)
    json_array_append_new(cats, json_pack("{so sI}", "name", cli_json_text(s->categories[i].name),
                                          "count", (json_int_t)s->categories[i].count));
  json_object_set_new(o, "unknown_categories", cats);
  return o;
}

/* Bytes of the character at p shown as is, or 0 to show '?': controls
 * (C0, DEL, and C1 both as UTF-8 and as stray bytes) and invalid UTF-8. */
static size_t printable_len(const unsigned char *p) {
  size_t k = utf8_len(p);
  if (k == 1 && (p[0] < 0x20 || p[0] == 0x7F)) return 0;
  if (k == 2 && p[0] == 0xC2 && p[1] < 0xA0) return 0;
  return k;
}

void cli_put_cell(FILE *f, const char *s, int width) {
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  int w = 0, shown = 0;
  for (const unsigned char *q = p; *q; w++) {
    size_t k = utf8_len(q);
    q += k ? k : 1;
  }
  if (width < 0) width = w;
  int keep = w > width ? width - 3 : w;
  while (*p && shown < keep) {
    size_t k = printable_len(p);
    if (k) fwrite(p, 1, k, f);
    else fputc('?', f);
    p += k ? k : (utf8_len(p) ? utf8_len(p) : 1);
    shown++;
  }
  if (w > width) fputs("...", f), shown += 3;
  for (; shown < width; shown++) fputc(' ', f);
}
