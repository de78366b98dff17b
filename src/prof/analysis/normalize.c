/* Normalized names (prof_normalize_name): what stays the same when the same
 * kernel or range shows up in two runs. Removed: template argument lists
 * (`kernel<128, 4, Functor<float>>` -> `kernel<>`: the instantiation changes
 * with dtypes and tile choices, the kernel does not), hexadecimal addresses
 * (`0x7f3a...` -> `0x?`) and counters after '#' (`ProfilerStep#3`,
 * `{lambda()#12}` -> `#N`). Other digits are kept: in `nvjet_sm90_tst_64x512`
 * they name a different kernel. Linear time whatever the input (brackets are
 * matched with one stack pass), so hostile names cost no more than long ones. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"

/* '<' of "operator<" / "operator<<" and '>' of "->" or "operator>" are no brackets. */
static int literal_angle(const char *s, size_t i) {
  size_t j = i;
  while (j > 0 && (s[j - 1] == '<' || s[j - 1] == '>') && i - j < 2) j--;
  if (j >= 8 && !strncmp(s + j - 8, "operator", 8)) return 1;
  return s[i] == '>' && i > 0 && s[i - 1] == '-';
}

/* close[i] = index of the '>' matching the '<' at i, or 0 when unmatched. */
static void match_angles(const char *s, size_t n, size_t *close, size_t *stack) {
  size_t sp = 0;
  for (size_t i = 0; i < n; i++) {
    close[i] = 0;
    if (s[i] == '<' && !literal_angle(s, i)) stack[sp++] = i;
    else if (s[i] == '>' && sp && !literal_angle(s, i)) close[stack[--sp]] = i;
  }
}

/* An address starts a word: "0x7f.." yes, the "0x1" inside "320x128" no. */
static int word_start(const char *s, size_t i) {
  return i == 0 || (!isalnum((unsigned char)s[i - 1]) && s[i - 1] != '_');
}

typedef struct {
  char *buf;
  size_t len, n;
} out_buf;

static void put(out_buf *o, const char *s, size_t k) {
  for (size_t i = 0; i < k && o->n + 1 < o->len; i++) o->buf[o->n++] = s[i];
}

size_t prof_normalize_name(const char *name, char *buf, size_t len) {
  if (!buf || !len) return 0;
  out_buf o = {buf, len, 0};
  size_t n = name ? strlen(name) : 0;
  size_t *close = malloc((n ? n : 1) * sizeof *close);
  size_t *stack = malloc((n ? n : 1) * sizeof *stack);
  if (close && stack) match_angles(name, n, close, stack);
  for (size_t i = 0; i < n; i++) {
    const char *c = name + i;
    if (close && *c == '<' && close[i]) {
      put(&o, "<>", 2);
      i = close[i];
    } else if (*c == '0' && c[1] == 'x' && isxdigit((unsigned char)c[2]) && word_start(name, i)) {
      put(&o, "0x?", 3);
      for (i += 2; i + 1 < n && isxdigit((unsigned char)name[i + 1]); i++) {}
    } else if (*c == '#' && isdigit((unsigned char)c[1])) {
      put(&o, "#N", 2);
      for (i++; i + 1 < n && isdigit((unsigned char)name[i + 1]); i++) {}
    } else {
      put(&o, c, 1);
    }
  }
  free(close);
  free(stack);
  buf[o.n] = 0;
  return o.n;
}
