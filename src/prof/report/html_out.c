/* Escaping for the HTML report (see report.h). Two contexts only: HTML text
 * (element content and quoted attribute values, one escaping serves both)
 * and a JSON string inside a <script type="application/json"> block, where
 * HTML entities mean nothing and the danger is text that ends the block or
 * switches the tokenizer's state ("</script>", "<!--"). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof/report/report.h"

void html_raw(html_out *o, const char *s) {
  if (!o->err && fputs(s, o->f) == EOF) o->err = errno ? errno : EIO;
}

void html_fmt(html_out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (!o->err && vfprintf(o->f, fmt, ap) < 0) o->err = errno ? errno : EIO;
  va_end(ap);
}

void html_num(html_out *o, double v) {
  char buf[32];
  if (!isfinite(v)) return html_raw(o, "null");
  snprintf(buf, sizeof buf, "%.15g", v); /* the shortest of the two that reads back */
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  html_raw(o, buf);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0: RFC 3629, no
 * overlong forms, no surrogates. */
static int utf8_seq(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
  unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  if (!n || s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

static const char *html_escape(unsigned char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&#39;";
    default:
      return c < 0x20 || c == 0x7F ? "\xEF\xBF\xBD" : NULL;
  }
}

static void put_n(html_out *o, const unsigned char *s, size_t n) {
  char buf[8];
  memcpy(buf, s, n);
  buf[n] = 0;
  html_raw(o, buf);
}

void html_text(html_out *o, const char *str, size_t max_chars) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  size_t chars = 0;
  for (; *s; chars++) {
    if (max_chars && chars + 1 == max_chars && s[utf8_seq(s) ? utf8_seq(s) : 1]) {
      html_raw(o, "...");
      return;
    }
    int n = utf8_seq(s);
    const char *esc = n == 1 ? html_escape(*s) : n ? NULL : "\xEF\xBF\xBD";
    if (esc) html_raw(o, esc);
    else put_n(o, s, (size_t)n);
    s += n ? n : 1;
  }
}

/* The escape of one character in a script-safe JSON string, or NULL. */
static const char *json_escape(const unsigned char *s, int n, char buf[8]) {
  if (n == 3 && s[0] == 0xE2 && s[1] == 0x80 && (s[2] == 0xA8 || s[2] == 0xA9))
    return s[2] == 0xA8 ? "\\u2028" : "\\u2029";
  if (n != 1) return NULL;
  switch (*s) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '<':
      return "\\u003c";
    case '>':
      return "\\u003e";
    case '&':
      return "\\u0026";
    default:
      break;
  }
  if (*s < 0x20 || *s == 0x7F) {
    snprintf(buf, 8, "\\u%04x", *s);
    return buf;
  }
  return NULL;
}

void html_json_str(html_out *o, const char *str) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  char buf[8];
  html_raw(o, "\"");
  while (*s) {
    int n = utf8_seq(s);
    const char *esc = n ? json_escape(s, n, buf) : "\\ufffd";
    if (esc) html_raw(o, esc);
    else put_n(o, s, (size_t)n);
    s += n ? n : 1;
  }
  html_raw(o, "\"");
}
