/* Streaming JSON output (see json_out.h). */
#include "prof/io/json_out.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* fwrite_unlocked (GNU): the writer owns its FILE, and fwrite's lock was a
 * third of a large export when every small write took it. */
void json_flush(json_out *o) {
  if (o->n && !o->err && fwrite_unlocked(o->buf, 1, o->n, o->f) != o->n)
    o->err = errno ? errno : EIO;
  o->n = 0;
  o->flushes++;
}

void json_put_long(json_out *o, const char *s, size_t n) {
  json_flush(o);
  if (n < JSON_OUT_BUF) {
    memcpy(o->buf, s, n);
    o->n = n;
  } else if (!o->err && fwrite_unlocked(s, 1, n, o->f) != n) {
    o->err = errno ? errno : EIO;
  }
}

void json_fmt(json_out *o, const char *fmt, ...) {
  json_flush(o); /* straight to f, after what came before */
  if (o->err) return;
  va_list ap;
  va_start(ap, fmt);
  if (vfprintf(o->f, fmt, ap) < 0) o->err = errno ? errno : EIO;
  va_end(ap);
}

/* Length of the valid UTF-8 sequence at s (2..4), or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF). */
static int utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n) return 0;
  unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
  if (c == 0xe0) lo = 0xa0;
  if (c == 0xed) hi = 0x9f;
  if (c == 0xf0) lo = 0x90;
  if (c == 0xf4) hi = 0x8f;
  if (s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xbf) return 0;
  return n;
}

/* The escape for byte c (s points at it), or NULL when c is written as is. */
static const char *escape_of(const unsigned char *s, char buf[8]) {
  switch (*s) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '<':
      return s[1] == '/' ? "<\\" : NULL; /* then the '/' itself: "<\/" */
    default:
      break;
  }
  if (*s < 0x20) {
    snprintf(buf, 8, "\\u%04x", *s);
    return buf;
  }
  return NULL;
}

/* 0 for a byte written as it is: printable ASCII but '"', '\\' and '<'
 * (a table: one load per byte of a name, where five compares were). */
static const unsigned char special[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

void json_str(json_out *o, const char *str) {
  const unsigned char *s = (const unsigned char *)(str ? str : "");
  const unsigned char *run = s; /* bytes not yet written that need no escape */
  char buf[8];
  json_put(o, "\"", 1);
  for (;;) {
    while (!special[*s]) s++;
    if (!*s) break;
    const char *esc = NULL;
    int n = 1;
    if (*s < 0x80) esc = escape_of(s, buf);
    else if (!(n = utf8_len(s))) esc = "\xef\xbf\xbd", n = 1; /* U+FFFD */
    if (esc) {
      json_put(o, (const char *)run, (size_t)(s - run));
      json_raw(o, esc);
      run = s + n;
    }
    s += n;
  }
  json_put(o, (const char *)run, (size_t)(s - run));
  json_put(o, "\"", 1);
}

void json_key(json_out *o, const char *key) {
  json_str(o, key);
  json_put(o, ": ", 2);
}

/* Digits by hand, two per division: the writer prints several integers per
 * event, and printf's format parsing was most of the time of a large export. */
static size_t format_u64(char *end, uint64_t v) {
  static const char pairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char *p = end;
  for (; v >= 100; v /= 100) p -= 2, memcpy(p, pairs + 2 * (v % 100), 2);
  if (v >= 10) p -= 2, memcpy(p, pairs + 2 * v, 2);
  else *--p = (char)('0' + v);
  return (size_t)(end - p);
}

void json_int(json_out *o, int64_t v) {
  char buf[24], *end = buf + sizeof buf;
  uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  size_t n = format_u64(end, mag);
  if (v < 0) buf[sizeof buf - ++n] = '-';
  json_put(o, end - n, n);
}

void json_num(json_out *o, double v) {
  if (!isfinite(v)) {
    json_raw(o, "null");
    return;
  }
  /* Whole numbers below 1e15 as digits: what "%.15g" prints for them, at a
   * fraction of its cost (-0 keeps its sign, as printf writes it). */
  if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
    if (v == 0 && signbit(v)) json_put(o, "-0", 2);
    else json_int(o, (int64_t)v);
    return;
  }
  char buf[32];
  snprintf(buf, sizeof buf, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  json_raw(o, buf);
}

void json_us(json_out *o, int64_t ns) {
  char buf[32], *end = buf + sizeof buf;
  uint64_t v = ns < 0 ? 0 : (uint64_t)ns;
  unsigned frac = (unsigned)(v % 1000);
  v /= 1000;
  *--end = (char)('0' + frac % 10), *--end = (char)('0' + frac / 10 % 10),
  *--end = (char)('0' + frac / 100);
  *--end = '.';
  size_t n = format_u64(end, v) + 4;
  json_put(o, buf + sizeof buf - n, n);
}
