/* Values of the trace reader: bounded strings, JSON number text into exact
 * nanoseconds and bounded integers, and string pids/tids into stable ids.
 * Numbers arrive as yajl's raw text, so a timestamp such as
 * 5132418966677.728 µs becomes 5132418966677728 ns exactly, with no trip
 * through a double. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof/io/chrome_reader.h"

/* ---- strings ------------------------------------------------------------- */

/* The longest prefix of s[0..n) that does not end inside a UTF-8 sequence. */
static size_t utf8_cut(const unsigned char *s, size_t n) {
  size_t i = n, back = 0;
  while (i > 0 && back < 4 && (s[i - 1] & 0xC0) == 0x80) i--, back++;
  if (i == 0 || s[i - 1] < 0xC0) return n; /* plain byte or stray continuation */
  unsigned lead = s[i - 1];
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  return back + 1 >= need ? n : i - 1;
}

/* "\u0000" decodes to a NUL byte, which would cut the C string there and
 * merge two names that differ after it; each becomes U+2400 (the visible
 * symbol for NUL, 3 bytes), so names stay apart and readable. */
static const unsigned char *without_nul(const unsigned char *text, size_t *len,
                                        unsigned char **copy) {
  size_t nuls = 0;
  for (const unsigned char *p = text; (p = memchr(p, 0, *len - (size_t)(p - text))); p++) nuls++;
  if (!nuls) return text;
  size_t n = *len + 2 * nuls;
  unsigned char *out = malloc(n ? n : 1);
  if (!out) return text; /* cut at the NUL: a shorter name beats a failed read */
  for (size_t i = 0, j = 0; i < *len; i++) {
    if (text[i]) out[j++] = text[i];
    else out[j++] = 0xE2, out[j++] = 0x90, out[j++] = 0x80;
  }
  *copy = out;
  *len = n;
  return out;
}

void rd_str_set(rd_str *s, const unsigned char *text, size_t len, prof_read_stats *st) {
  unsigned char *copy = NULL;
  text = without_nul(text, &len, &copy);
  size_t n = len;
  s->truncated = 0;
  if (n > PROF_READ_NAME_MAX) {
    n = utf8_cut(text, PROF_READ_NAME_MAX);
    s->truncated = 1;
    st->truncated_strings++;
  }
  if (n + 1 > s->cap) {
    size_t cap = n + 1 < 64 ? 64 : n + 1;
    char *p = realloc(s->s, cap);
    if (!p) { /* keep what fits: a cut name beats a failed read */
      n = s->cap ? s->cap - 1 : 0;
      st->truncated_strings++;
    } else {
      s->s = p, s->cap = cap;
    }
  }
  if (s->s) {
    memcpy(s->s, text, n);
    s->s[n] = 0;
  }
  s->len = s->s ? n : 0;
  free(copy);
}

void rd_str_free(rd_str *s) {
  free(s->s);
  memset(s, 0, sizeof *s);
}

void rd_event_reset(rd_event *e) {
  rd_str keep[] = {e->ph, e->cat, e->name, e->op_kind, e->meta_name, e->labels};
  memset(e, 0, sizeof *e);
  rd_str *strs[] = {&e->ph, &e->cat, &e->name, &e->op_kind, &e->meta_name, &e->labels};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
    *strs[i] = keep[i];
    strs[i]->len = 0;
    strs[i]->truncated = 0;
    if (strs[i]->s) strs[i]->s[0] = 0;
  }
}

/* ---- numbers ------------------------------------------------------------- */

/* A NUL-terminated copy of number text; 0, or -1 when too long to be sane. */
static int copy_num(const char *text, size_t len, char *buf, size_t cap) {
  if (len == 0 || len >= cap) return -1;
  memcpy(buf, text, len);
  buf[len] = 0;
  return 0;
}

int rd_parse_double(const char *text, size_t len, double *out) {
  char buf[64], *end;
  if (copy_num(text, len, buf, sizeof buf)) return -1;
  errno = 0;
  double v = strtod(buf, &end);
  if (*end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* Plain decimal digits (an optional '-', at most 18 digits: no overflow), the
 * form nearly every integer in a trace has; 0, or -1 for anything else. */
static int plain_int(const char *text, size_t len, int64_t *out) {
  size_t i = text[0] == '-';
  if (len <= i || len - i > 18) return -1;
  int64_t v = 0;
  for (size_t j = i; j < len; j++) {
    unsigned d = (unsigned)(text[j] - '0');
    if (d > 9) return -1;
    v = v * 10 + d;
  }
  *out = i ? -v : v;
  return 0;
}

int rd_parse_int(const char *text, size_t len, int64_t lo, int64_t hi, int64_t *out) {
  int64_t fast;
  if (len && !plain_int(text, len, &fast)) {
    if (fast < lo || fast > hi) return -1;
    *out = fast;
    return 0;
  }
  char buf[64], *end;
  if (copy_num(text, len, buf, sizeof buf)) return -1;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (*end) { /* 12.0 or 1e3: integral values written as doubles */
    double d;
    if (rd_parse_double(text, len, &d) || d != floor(d) || d < (double)lo || d > (double)hi)
      return -1;
    v = (long long)d;
  } else if (errno) {
    return -1;
  }
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* Digits of the integer part; -1 on overflow past limit. */
static int int_part(const char **p, int64_t limit_us, int64_t *us) {
  int64_t v = 0;
  if (**p < '0' || **p > '9') return -1;
  for (; **p >= '0' && **p <= '9'; (*p)++) {
    v = v * 10 + (**p - '0');
    if (v > limit_us) return -1;
  }
  *us = v;
  return 0;
}

/* Three fraction digits are the ns; a fourth rounds (half up); more are noise. */
static int64_t frac_ns(const char **p) {
  int64_t ns = 0;
  int digits = 0, round_up = 0;
  for (; **p >= '0' && **p <= '9'; (*p)++, digits++) {
    if (digits < 3) ns = ns * 10 + (**p - '0');
    else if (digits == 3) round_up = **p >= '5';
  }
  for (; digits < 3; digits++) ns *= 10;
  return ns + round_up;
}

int rd_parse_us_to_ns(const char *text, size_t len, int64_t limit, int64_t *ns) {
  char buf[64];
  if (copy_num(text, len, buf, sizeof buf)) return -1;
  const char *p = buf;
  int neg = *p == '-';
  p += neg;
  int64_t us, frac = 0;
  if (int_part(&p, limit / 1000 + 1, &us)) return -1;
  if (*p == '.') p++, frac = frac_ns(&p);
  int64_t v;
  if (*p == 'e' || *p == 'E') { /* an exponent: rare enough to go through a double */
    double d;
    if (rd_parse_double(text, len, &d) || fabs(d) * 1e3 > (double)limit) return -1;
    v = (int64_t)llround(fabs(d) * 1e3);
  } else if (*p) {
    return -1;
  } else {
    v = us * 1000 + frac;
  }
  if (v > limit) return -1;
  *ns = neg ? -v : v;
  return 0;
}

/* ---- string ids ---------------------------------------------------------- */

/* Ids of non-numeric pid/tid strings start here: far from any OS id and from
 * Kineto's -1, and far enough from INT64_MIN that no analysis overflows. */
#define RD_STRING_ID_BASE (-((int64_t)1 << 61))

int64_t rd_string_id(rd_model *m, const char *text, size_t len) {
  int64_t v;
  if (len && len < 32 && !rd_parse_int(text, len, -((int64_t)1 << 60), (int64_t)1 << 60, &v))
    return v;
  for (int i = 0; i < m->n_ids; i++)
    if (m->ids[i].len == len && !memcmp(m->ids[i].text, text, len < RD_ID_TEXT ? len : RD_ID_TEXT))
      return RD_STRING_ID_BASE + i;
  if (m->n_ids == RD_MAX_IDS) return RD_STRING_ID_BASE + RD_MAX_IDS; /* the rest share one id */
  rd_id *id = &m->ids[m->n_ids];
  id->len = len;
  memcpy(id->text, text, len < RD_ID_TEXT ? len : RD_ID_TEXT);
  return RD_STRING_ID_BASE + m->n_ids++;
}
