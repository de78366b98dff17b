/* Streaming JSON output to a FILE: strings escaped, times printed exactly,
 * and the first write error remembered (errno) so a writer checks once at
 * the end instead of after every call. Nothing is buffered beyond stdio, so
 * output of any size costs no memory. Use: json_out o = {f, 0}; ...; then
 * check o.err (and fflush/fclose f). */
#ifndef ATTNPROF_SRC_PROF_JSON_OUT_H
#define ATTNPROF_SRC_PROF_JSON_OUT_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
  FILE *f;
  int err; /* errno of the first failed write; 0 = all written */
} json_out;

void json_raw(json_out *o, const char *s);
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
