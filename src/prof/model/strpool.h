/* String interning pool: one copy of each distinct text, at a stable address,
 * so events can hold `const char *` names and analyses can compare names by
 * pointer. Not thread-safe by itself; prof_trace locks around it. */
#ifndef ATTNPROF_SRC_PROF_STRPOOL_H
#define ATTNPROF_SRC_PROF_STRPOOL_H

#include <stddef.h>

typedef struct prof_strpool_block prof_strpool_block;

enum { PROF_STRPOOL_RECENT = 8 };

typedef struct {
  const char **slots;         /* open addressing; NULL = empty */
  size_t cap, used;           /* cap is a power of two */
  prof_strpool_block *blocks; /* the text lives here; never moves */
  /* The texts last interned, by the caller's pointer: a collector passes the
   * same few name pointers millions of times, and comparing is cheaper than
   * hashing a 150-byte kernel name. A hit still compares the text. */
  const char *recent_in[PROF_STRPOOL_RECENT], *recent_out[PROF_STRPOOL_RECENT];
} prof_strpool;

void prof_strpool_init(prof_strpool *p);
void prof_strpool_free(prof_strpool *p);
/* The pooled copy of s (NULL on out of memory). */
const char *prof_strpool_intern(prof_strpool *p, const char *s);

#endif
