/* A JSON tokenizer for valid documents, driving the reader's yajl callbacks
 * (chrome_sax.c) in the order yajl would. Why: on a 2 GB trace yajl's lexer
 * was half of the read (docs/design/reader.md). This one finds the end of a string
 * with one byte test per character, hands strings without escapes straight
 * from its buffer, and passes number text through; it keeps a bit stack, so
 * any depth costs no recursion.
 *
 * It is not the judge of bad input: at the first thing it does not take
 * (any syntax error, a lone surrogate, a control byte in a string, trailing
 * bytes) it stops with RD_SCAN_FALLBACK, and the reader starts over with
 * yajl, whose messages (what, byte, line) the commands show. */
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "core/error.h"
#include "prof/io/chrome_reader.h"

enum { START_CAP = 1 << 20 };

typedef struct {
  rd_pull_fn pull;
  void *src;
  unsigned char *buf;
  size_t cap, len, pos;
  int eof, err;         /* err: the pull's attn_status */
  unsigned char *stack; /* 'o' / 'a' per open container */
  size_t depth, scap;
  unsigned char *tmp; /* decoded strings with escapes */
  size_t tcap;
} scanner;

/* Bytes a string stops at: '"', '\\' and control bytes (which JSON forbids
 * raw); and JSON's whitespace (a pretty-printed trace is a third spaces). */
static unsigned char stop[256], space[256];

static void init_tables(void) {
  for (int c = 0; c < 0x20; c++) stop[c] = 1;
  stop['"'] = stop['\\'] = 1;
  space[' '] = space['\n'] = space['\r'] = space['\t'] = 1;
}

/* More bytes after buf[len], keeping buf[from..len) (moved to the front).
 * Returns how many came (0: end of input or error). */
static size_t refill(scanner *s, size_t *from) {
  if (s->eof) return 0;
  if (*from > 0) {
    memmove(s->buf, s->buf + *from, s->len - *from);
    s->len -= *from, s->pos -= *from, *from = 0;
  }
  if (s->len == s->cap) { /* one token fills the buffer: grow it */
    unsigned char *b = realloc(s->buf, 2 * s->cap);
    if (!b) return s->eof = 1, 0; /* yajl gets its turn, and says it */
    s->buf = b, s->cap *= 2;
  }
  size_t got = 0;
  int st = s->pull(s->src, s->buf + s->len, s->cap - s->len, &got);
  if (st) return s->err = st, s->eof = 1, 0;
  if (!got) s->eof = 1;
  s->len += got;
  return got;
}

/* At least n bytes from pos (unless the input ends): 1, or 0. */
static int have(scanner *s, size_t n) {
  while (s->len - s->pos < n) {
    size_t from = s->pos;
    if (!refill(s, &from)) return 0;
  }
  return 1;
}

static int push(scanner *s, unsigned char kind) {
  if (s->depth == s->scap) {
    size_t cap = s->scap ? 2 * s->scap : 64;
    unsigned char *st = realloc(s->stack, cap);
    if (!st) return 0;
    s->stack = st, s->scap = cap;
  }
  s->stack[s->depth++] = kind;
  return 1;
}

static int hex4(const unsigned char *p, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i], d = c >= '0' && c <= '9'                 ? c - '0'
                           : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                                : 16;
    if (d > 15) return 0;
    *v = *v << 4 | d;
  }
  return 1;
}

static size_t put_utf8(unsigned char *o, unsigned cp) {
  if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x800)
    return o[0] = (unsigned char)(0xc0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 63)), 2;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xe0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 63));
    o[2] = (unsigned char)(0x80 | (cp & 63));
    return 3;
  }
  o[0] = (unsigned char)(0xf0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 63));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 63)), o[3] = (unsigned char)(0x80 | (cp & 63));
  return 4;
}

/* Decodes the escaped string in p[0..n) (between the quotes) into s->tmp. */
static int unescape(scanner *s, const unsigned char *p, size_t n, size_t *out) {
  if (n + 1 > s->tcap) {
    unsigned char *t = realloc(s->tmp, n + 1);
    if (!t) return 0;
    s->tmp = t, s->tcap = n + 1;
  }
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] != '\\') {
      s->tmp[j++] = p[i];
      continue;
    }
    unsigned char c = p[++i];
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k = c ? strchr(from, c) : NULL;
    if (k) {
      s->tmp[j++] = (unsigned char)to[k - from];
      continue;
    }
    unsigned cp, lo;
    if (c != 'u' || i + 4 >= n || !hex4(p + i + 1, &cp)) return 0;
    i += 4;
    if (cp >= 0xdc00 && cp <= 0xdfff) return 0; /* a lone low surrogate: yajl's call */
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (i + 6 >= n || p[i + 1] != '\\' || p[i + 2] != 'u' || !hex4(p + i + 3, &lo) ||
          lo < 0xdc00 || lo > 0xdfff)
        return 0;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
      i += 6;
    }
    j += put_utf8(s->tmp + j, cp); /* never longer than the escape it replaces */
  }
  *out = j;
  return 1;
}

/* A string at pos (its opening quote): the callback's text and length. */
static int string(scanner *s, const unsigned char **text, size_t *n) {
  size_t i = s->pos + 1;
  int escaped = 0;
  for (;;) {
    while (i < s->len && !stop[s->buf[i]]) i++;
    if (i == s->len) {
      size_t from = s->pos, off = i - s->pos;
      if (!refill(s, &from)) return 0;
      i = s->pos + off;
      continue;
    }
    unsigned char c = s->buf[i];
    if (c == '"') break;
    if (c != '\\') return 0; /* a raw control byte */
    escaped = 1;
    if (i + 1 >= s->len) { /* the escaped byte is in the next piece */
      size_t from = s->pos, off = i - s->pos;
      if (!refill(s, &from)) return 0;
      i = s->pos + off;
      continue;
    }
    i += 2;
  }
  const unsigned char *p = s->buf + s->pos + 1;
  size_t len = i - s->pos - 1;
  s->pos = i + 1;
  if (!escaped) return *text = p, *n = len, 1;
  if (!unescape(s, p, len, n)) return 0;
  *text = s->tmp;
  return 1;
}

static int digits(scanner *s, size_t *i) {
  size_t start = *i;
  for (;;) {
    while (*i < s->len && s->buf[*i] >= '0' && s->buf[*i] <= '9') (*i)++;
    if (*i < s->len || s->eof) break;
    size_t from = s->pos, off = *i - s->pos, st = start - s->pos;
    if (!refill(s, &from)) break;
    *i = s->pos + off, start = s->pos + st;
  }
  return *i > start;
}

/* The byte at i, reading on when needed; -1 at the end. */
static int peek(scanner *s, size_t *i) {
  if (*i >= s->len) {
    size_t from = s->pos, off = *i - s->pos;
    if (!refill(s, &from)) return -1;
    *i = s->pos + off;
  }
  return *i < s->len ? s->buf[*i] : -1;
}

/* JSON's number grammar; the text is handed over as it is. */
static int number(scanner *s, size_t *n) {
  size_t i = s->pos;
  if (peek(s, &i) == '-') i++;
  int c = peek(s, &i);
  if (c == '0') i++;
  else if (!digits(s, &i)) return 0;
  if (peek(s, &i) == '.') {
    i++;
    if (!digits(s, &i)) return 0;
  }
  c = peek(s, &i);
  if (c == 'e' || c == 'E') {
    i++;
    c = peek(s, &i);
    if (c == '+' || c == '-') i++;
    if (!digits(s, &i)) return 0;
  }
  *n = i - s->pos;
  return 1;
}

enum { S_VALUE, S_FIRST_VALUE, S_FIRST_KEY, S_KEY, S_COLON, S_NEXT };

/* One token in state *state; 1 to go on, 0 to stop (fallback or error). */
static int token(scanner *s, const yajl_callbacks *cb, void *ctx, int *state) {
  unsigned char c = s->buf[s->pos];
  const unsigned char *text;
  size_t n;
  switch (*state) {
    case S_FIRST_VALUE:
      if (c == ']') return s->pos++, s->depth--, *state = S_NEXT, cb->yajl_end_array(ctx);
      /* fall through */
    case S_VALUE:
      *state = S_NEXT;
      if (c == '{') return s->pos++, *state = S_FIRST_KEY, push(s, 'o') && cb->yajl_start_map(ctx);
      if (c == '[')
        return s->pos++, *state = S_FIRST_VALUE, push(s, 'a') && cb->yajl_start_array(ctx);
      if (c == '"') return string(s, &text, &n) && cb->yajl_string(ctx, text, n);
      if (c == '-' || (c >= '0' && c <= '9')) {
        if (!number(s, &n)) return 0;
        s->pos += n;
        return cb->yajl_number(ctx, (const char *)s->buf + s->pos - n, n);
      }
      static const char *const lit[] = {"true", "false", "null"};
      for (int k = 0; k < 3; k++) {
        size_t l = strlen(lit[k]);
        if (c != (unsigned char)lit[k][0]) continue;
        if (!have(s, l) || memcmp(s->buf + s->pos, lit[k], l)) return 0;
        s->pos += l;
        return k == 2 ? cb->yajl_null(ctx) : cb->yajl_boolean(ctx, k == 0);
      }
      return 0;
    case S_FIRST_KEY:
      if (c == '}') return s->pos++, s->depth--, *state = S_NEXT, cb->yajl_end_map(ctx);
      /* fall through */
    case S_KEY:
      if (c != '"' || !string(s, &text, &n)) return 0;
      *state = S_COLON;
      return cb->yajl_map_key(ctx, text, n);
    case S_COLON:
      if (c != ':') return 0;
      return s->pos++, *state = S_VALUE, 1;
    default:                   /* S_NEXT */
      if (!s->depth) return 0; /* bytes after the document */
      if (c == ',') return s->pos++, *state = s->stack[s->depth - 1] == 'o' ? S_KEY : S_VALUE, 1;
      if (c == (s->stack[s->depth - 1] == 'o' ? '}' : ']')) {
        s->pos++, s->depth--;
        return c == '}' ? cb->yajl_end_map(ctx) : cb->yajl_end_array(ctx);
      }
      return 0;
  }
}

int rd_scan(rd_pull_fn pull, void *src, const yajl_callbacks *cb, void *ctx) {
  if (!stop['"']) init_tables(); /* idempotent: racing threads write the same bytes */
  scanner s = {.pull = pull, .src = src, .cap = START_CAP};
  s.buf = malloc(s.cap);
  if (!s.buf) return RD_SCAN_FALLBACK;
  int state = S_VALUE, ok = 1, done = 0;
  while (ok && !done) {
    while (s.pos < s.len && space[s.buf[s.pos]]) s.pos++;
    if (s.pos == s.len) {
      size_t from = s.pos;
      if (!refill(&s, &from)) done = 1;
      continue;
    }
    ok = token(&s, cb, ctx, &state);
  }
  int rc = s.err ? s.err : ok && state == S_NEXT && !s.depth && done ? 0 : RD_SCAN_FALLBACK;
  free(s.buf);
  free(s.stack);
  free(s.tmp);
  return rc;
}
