/* String interning pool (see strpool.h): an open-addressing hash set of
 * pointers into bump-allocated blocks. Names repeat millions of times in a
 * trace ("cudaLaunchKernel", "gemm") but are few distinct, so the set stays
 * small and each event costs one pointer. */
#include "prof/model/strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { BLOCK_BYTES = 64 * 1024 };

struct prof_strpool_block {
  prof_strpool_block *next;
  size_t used, cap;
  char data[];
};

void prof_strpool_init(prof_strpool *p) { memset(p, 0, sizeof *p); }

void prof_strpool_free(prof_strpool *p) {
  for (prof_strpool_block *b = p->blocks, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(p->slots);
  memset(p, 0, sizeof *p);
}

/* FNV-1a: short strings, no need for anything stronger. */
static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int grow(prof_strpool *p) {
  size_t cap = p->cap ? p->cap * 2 : 256;
  const char **slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < p->cap; i++) {
    if (!p->slots[i]) continue;
    size_t j = hash_str(p->slots[i]) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = p->slots[i];
  }
  free(p->slots);
  p->slots = slots;
  p->cap = cap;
  return 0;
}

/* Copies len+1 bytes into the current block, or a new one (a long string gets
 * a block of its own size). */
static const char *store(prof_strpool *p, const char *s, size_t len) {
  prof_strpool_block *b = p->blocks;
  if (!b || b->cap - b->used < len + 1) {
    size_t cap = len + 1 > BLOCK_BYTES ? len + 1 : BLOCK_BYTES;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->used = 0;
    b->cap = cap;
    /* Keep a partly used block at the head only if it has more room. */
    if (p->blocks && cap == len + 1 && cap > BLOCK_BYTES) {
      b->next = p->blocks->next;
      p->blocks->next = b;
    } else {
      b->next = p->blocks;
      p->blocks = b;
    }
  }
  char *dst = b->data + b->used;
  memcpy(dst, s, len + 1);
  b->used += len + 1;
  return dst;
}

static const char *intern(prof_strpool *p, const char *s) {
  if ((p->used + 1) * 2 > p->cap && grow(p)) return NULL;
  size_t j = hash_str(s) & (p->cap - 1);
  for (; p->slots[j]; j = (j + 1) & (p->cap - 1))
    if (!strcmp(p->slots[j], s)) return p->slots[j];
  const char *copy = store(p, s, strlen(s));
  if (!copy) return NULL;
  p->slots[j] = copy;
  p->used++;
  return copy;
}

const char *prof_strpool_intern(prof_strpool *p, const char *s) {
  size_t r = ((uintptr_t)s >> 3) % PROF_STRPOOL_RECENT;
  if (p->recent_in[r] == s && !strcmp(p->recent_out[r], s)) return p->recent_out[r];
  const char *pooled = intern(p, s);
  if (pooled) p->recent_in[r] = s, p->recent_out[r] = pooled;
  return pooled;
}
