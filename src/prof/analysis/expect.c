/* Expectations, "guess first, then look": parsing `metric[(arg)] OP value[%]`
 * items separated by commas or new lines ('#' starts a comment). The metrics
 * live in expect_metrics.c, the checking in expect_check.c. Every parse error
 * is one line naming the item and the token at fault, and what would have
 * been accepted. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "prof/analysis/expect.h"

static const char *const op_text[] = {"==", "!=", "<", "<=", ">", ">="};
#define OPS_ACCEPTED "== != < <= > >="

/* The item being parsed, for error messages. */
typedef struct {
  const char *item;
  const char *p;
} cursor;

static void skip_ws(cursor *c) {
  while (*c->p && isspace((unsigned char)*c->p)) c->p++;
}

static char *dup_range(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) memcpy(d, s, n), d[n] = 0;
  return d;
}

/* The token at the cursor (up to white space), for "unexpected 'x'". */
static int token_len(const char *p) {
  int n = 0;
  while (p[n] && !isspace((unsigned char)p[n]) && n < 40) n++;
  return n ? n : 1;
}

static int fail_at(const cursor *c, const char *what) {
  attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "expectation '%s': %s", c->item, what);
  return -1;
}

/* metric word, then an optional (arg). */
static int parse_metric(cursor *c, prof_expectation *x, char *word, size_t word_len) {
  char msg[768];
  size_t n = 0;
  skip_ws(c);
  while (isalnum((unsigned char)c->p[n]) || c->p[n] == '_') n++;
  if (!n || n >= word_len) {
    snprintf(msg, sizeof msg, "expected a metric at '%.*s'; accepted: %s", token_len(c->p), c->p,
             prof_metric_list());
    return fail_at(c, msg);
  }
  memcpy(word, c->p, n), word[n] = 0;
  c->p += n;
  if (!(x->m = prof_metric_find(word))) {
    snprintf(msg, sizeof msg, "unknown metric '%s'; accepted: %s", word, prof_metric_list());
    return fail_at(c, msg);
  }
  skip_ws(c);
  if (*c->p != '(') return 0;
  const char *close = strchr(c->p, ')');
  if (!close) return fail_at(c, "'(' without ')'");
  x->arg = dup_range(c->p + 1, (size_t)(close - c->p - 1));
  c->p = close + 1;
  return x->arg ? 0 : fail_at(c, "out of memory");
}

static int parse_op(cursor *c, prof_expectation *x) {
  char msg[256];
  skip_ws(c);
  for (int o = PROF_OP_GE; o >= PROF_OP_EQ; o--) { /* ">=" before ">", "<=" before "<" */
    size_t n = strlen(op_text[o]);
    if (!strncmp(c->p, op_text[o], n)) {
      x->op = (prof_cmp_op)o;
      c->p += n;
      return 0;
    }
  }
  if (!*c->p) return fail_at(c, "missing operator and value; accepted operators: " OPS_ACCEPTED);
  if (*c->p == '=')
    return fail_at(c, "'=' is not an operator (did you mean '=='?); accepted: " OPS_ACCEPTED);
  snprintf(msg, sizeof msg, "'%.*s' is not an operator; accepted: " OPS_ACCEPTED,
           token_len(c->p) > 2 ? 2 : token_len(c->p), c->p);
  return fail_at(c, msg);
}

/* A number (with '%' where the metric allows it), or a name. */
static int parse_value(cursor *c, prof_expectation *x, int *percent) {
  char msg[256];
  skip_ws(c);
  int n = token_len(c->p);
  if (!*c->p) return fail_at(c, "missing value after the operator");
  if (x->m->flags & PROF_METRIC_STRING) { /* a word, or a quoted name with spaces */
    const char *start = c->p, *end = c->p;
    if (*start == '"' || *start == '\'') {
      if (!(end = strchr(start + 1, *start)))
        return fail_at(c, "a quoted name without its closing quote");
      c->p = end + 1;
      start++;
    } else {
      while (*end && !isspace((unsigned char)*end)) end++;
      c->p = end;
    }
    x->str = dup_range(start, (size_t)(end - start));
    return x->str ? 0 : fail_at(c, "out of memory");
  }
  char *end;
  x->num = strtod(c->p, &end);
  if (end == c->p || !isfinite(x->num) || isalpha((unsigned char)*end) || *end == '_') {
    snprintf(msg, sizeof msg, "'%.*s' is not a number; %s takes a number, e.g. '%s == 5'", n, c->p,
             x->m->name, x->m->name);
    return fail_at(c, msg);
  }
  c->p = end;
  *percent = *c->p == '%';
  if (*percent) c->p++;
  return 0;
}

/* The argument and '%' rules of the metric. */
static int check_form(const cursor *c, const prof_expectation *x, int percent) {
  char msg[256];
  unsigned f = x->m->flags;
  if (x->arg && !(f & PROF_METRIC_ARG))
    snprintf(msg, sizeof msg, "'%s' takes no argument, remove '(%s)'", x->m->name, x->arg);
  else if (!x->arg && (f & PROF_METRIC_ARG))
    snprintf(msg, sizeof msg, "'%s' needs an argument, e.g. '%s(top)'", x->m->name, x->m->name);
  else if (percent && !(f & PROF_METRIC_PERCENT))
    snprintf(msg, sizeof msg, "'%s' is a count or a time, not a percentage: drop the '%%'",
             x->m->name);
  else if ((f & PROF_METRIC_STRING) && x->op != PROF_OP_EQ && x->op != PROF_OP_NE)
    snprintf(msg, sizeof msg, "'%s' compares names: only == and != apply", x->m->name);
  else return 0;
  return fail_at(c, msg);
}

static int normalize(prof_expectation *x, const char *word, const char *value, int vlen,
                     int percent) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s%s%s%s %s %.*s%s", word, x->arg ? "(" : "", x->arg ? x->arg : "",
           x->arg ? ")" : "", op_text[x->op], vlen, value, percent ? "%" : "");
  return (x->text = dup_range(buf, strlen(buf))) ? 0 : -1;
}

static void free_one(prof_expectation *x) {
  free(x->range);
  free(x->text);
  free(x->arg);
  free(x->str);
}

/* One item, already trimmed and non-empty. */
static int parse_item(const char *item, prof_expectation *x) {
  cursor c = {item, item};
  char word[64], msg[128];
  int percent = 0;
  memset(x, 0, sizeof *x);
  if (parse_metric(&c, x, word, sizeof word) || parse_op(&c, x)) return -1;
  skip_ws(&c);
  const char *value = c.p;
  if (parse_value(&c, x, &percent)) return -1;
  int vlen = (int)(c.p - value) - percent;
  skip_ws(&c);
  if (*c.p) {
    snprintf(msg, sizeof msg,
             "unexpected '%.*s' after the value; separate expectations with "
             "',' or a new line",
             token_len(c.p), c.p);
    return fail_at(&c, msg);
  }
  if (check_form(&c, x, percent)) return -1;
  return normalize(x, word, value, vlen, percent) ? fail_at(&c, "out of memory") : 0;
}

/* Files the expectation under its "[range]" section: the range goes with it
 * and its text says so ("[attn_fwd] kernels == 5"). */
static int file_under(prof_expectation *x, const char *section) {
  if (!section) return 0;
  size_t n = strlen(section) + strlen(x->text) + 4;
  char *text = malloc(n);
  x->range = dup_range(section, strlen(section));
  if (!text || !x->range)
    return free(text), attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "out of memory"), -1;
  snprintf(text, n, "[%s] %s", section, x->text);
  free(x->text);
  x->text = text;
  return 0;
}

static int add_item(prof_expect *e, const char *item, const char *section) {
  if (e->n == e->cap) {
    size_t cap = e->cap ? 2 * e->cap : 8;
    prof_expectation *v = realloc(e->v, cap * sizeof *v);
    if (!v) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "out of memory"), -1;
    e->v = v, e->cap = cap;
  }
  if (parse_item(item, &e->v[e->n]) || file_under(&e->v[e->n], section)) {
    free_one(&e->v[e->n]);
    return -1;
  }
  e->n++;
  return 0;
}

/* The end of the item at p: a new line, or a ',' or '#' outside parentheses
 * and quotes (an argument or a quoted name may hold them: a kernel name with
 * commas, "ProfilerStep#2"). */
static char *item_end(char *p) {
  int depth = 0;
  char quote = 0;
  for (; *p && *p != '\n'; p++) {
    if (quote) quote = *p == quote ? 0 : quote;
    else if (*p == '"' || *p == '\'') quote = *p;
    else if (*p == '(') depth++;
    else if (*p == ')' && depth > 0) depth--;
    else if ((*p == ',' || *p == '#') && !depth) break;
  }
  return p;
}

/* A line "[range]" starts a section: the expectations after it check that
 * range ("[]": the caller's range again). Returns the end of the line and
 * sets *section (NULL for "[]"), or returns NULL when the line is no section.
 * Read before items are split, as a range name may hold ',' or '#'. */
static char *section_line(char *line, char **section, int *err) {
  char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (*p != '[') return NULL;
  char *close = strchr(p, ']'), *eol = strchr(p, '\n');
  if (!close || (eol && close > eol)) {
    *err = attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "expectation section '%.*s': '[' without ']' "
                     "on its line; write [range name]",
                     token_len(p), p);
    return p;
  }
  free(*section);
  *section = close > p + 1 ? dup_range(p + 1, (size_t)(close - p - 1)) : NULL;
  if (close > p + 1 && !*section) *err = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "out of memory");
  for (p = close + 1; *p && *p != '\n' && isspace((unsigned char)*p); p++) {}
  if (*p && *p != '\n' && *p != '#' && !*err)
    *err = attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "expectation section [%s]: unexpected '%.*s' after "
                     "']'; put expectations on the lines below it",
                     *section ? *section : "", token_len(p), p);
  while (*p && *p != '\n') p++;
  return p;
}

/* Splits text into items, drops '#' comments, trims each item; "[range]"
 * lines file the items after them under that range. */
static int parse_all(prof_expect *e, char *s) {
  char *section = NULL;
  int rc = 0;
  for (char *item = s; !rc;) {
    char *p = section_line(item, &section, &rc);
    if (p) {
      if (!*p || rc) break;
      item = p + 1;
      continue;
    }
    p = item_end(item);
    char stop = *p;
    char *end = p;
    if (stop == '#') { /* comment to the end of the line */
      while (*p && *p != '\n') p++;
      stop = *p;
    }
    while (end > item && isspace((unsigned char)end[-1])) end--;
    *end = 0;
    while (isspace((unsigned char)*item)) item++;
    if (*item && add_item(e, item, section)) rc = -1;
    if (!stop) break;
    item = p + 1;
  }
  free(section);
  return rc ? -1 : 0;
}

attn_status prof_expect_parse(const char *text, prof_expect **out) {
  *out = NULL;
  if (!text) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "no expectations given");
  prof_expect *e = calloc(1, sizeof *e);
  char *copy = dup_range(text, strlen(text));
  if (!e || !copy) {
    free(e), free(copy);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  int rc = parse_all(e, copy); /* on failure it said why */
  free(copy);
  if (!rc && !e->n)
    rc = -1, attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                       "no expectations given (only blanks and comments); write comparisons "
                       "such as 'ops == 5, copies == 0'");
  if (rc) {
    prof_expect_free(e);
    return ATTN_STATUS_INVALID_ARGUMENT;
  }
  *out = e;
  return ATTN_STATUS_OK;
}

void prof_expect_free(prof_expect *e) {
  if (!e) return;
  for (size_t i = 0; i < e->n; i++) free_one(&e->v[i]);
  free(e->v);
  free(e);
}

size_t prof_expect_count(const prof_expect *e) { return e ? e->n : 0; }
