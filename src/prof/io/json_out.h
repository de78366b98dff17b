/* Streaming JSON output to a FILE: strings escaped, times printed exactly,
 * and the first write error remembered (errno) so a writer checks once at
 * the end instead of after every call. Small writes gather in a buffer of
 * JSON_OUT_BUF bytes inside json_out and reach the FILE in blocks (stdio's
 * per-call path was a fifth of a streamed trace's cost), so output of any
 * size costs no more memory. Use: json_out o = {.f = f}; ...; json_flush(&o)
 * before anything else writes, flushes or closes f; then check o.err. */
#ifndef ATTNPROF_SRC_PROF_JSON_OUT_H
#define ATTNPROF_SRC_PROF_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { JSON_OUT_BUF = 8192 };

typedef struct {
  FILE *f;
  int err;        /* errno of the first failed write; 0 = all written */
  size_t n;       /* bytes of buf not yet handed to f */
  size_t flushes; /* times buf was handed over: text at buf[k..n) is whole while it holds */
  char buf[JSON_OUT_BUF];
} json_out;

/* Hands the buffered bytes to f (not fflush: f keeps its own buffer). */
void json_flush(json_out *o);
void json_put_long(json_out *o, const char *s, size_t n);

/* n bytes of s, as they are. */
static inline void json_put(json_out *o, const char *s, size_t n) {
  if (n <= JSON_OUT_BUF - o->n) {
    memcpy(o->buf + o->n, s, n);
    o->n += n;
  } else {
    json_put_long(o, s, n);
  }
}

/* Inline, so a literal's length is known when compiled. */
static inline void json_raw(json_out *o, const char *s) { json_put(o, s, strlen(s)); }

void json_fmt(json_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string of s, escaped as little as JSON needs, because Perfetto's
 * JSON importer (v52) shows \uXXXX and \/ literally (and \n, \t too in a
 * string without \" or \\), so every escape is a visible wart there:
 * quotes, backslashes and control characters are escaped; "</" is written
 * "<\/" so no "</script>" appears in the file (the one escape beyond JSON's
 * needs; C++ kernel names keep their raw '<' and '>'); valid UTF-8 passes
 * through; a byte that is not valid UTF-8 becomes U+FFFD (written raw), so
 * the output is always valid JSON in valid UTF-8. */
void json_str(json_out *o, const char *s);
/* "key": (a key from kineto_keys.h, or any string) */
void json_key(json_out *o, const char *key);
void json_int(json_out *o, int64_t v);
/* A finite double in the shortest form that reads back the same; NaN and
 * infinities (not JSON) are written as null. */
void json_num(json_out *o, double v);
/* Nanoseconds as microseconds with every ns kept: 1234567 -> 1234.567.
 * Negative values clamp to 0, as Kineto does. */
void json_us(json_out *o, int64_t ns);

#endif
