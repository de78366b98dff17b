/* The pair-keyed hash map of map.h: open addressing, linear probing, load at
 * most one half. */
#include "prof/model/map.h"

#include <stdlib.h>
#include <string.h>

void prof_map_init(prof_map *m) { memset(m, 0, sizeof *m); }

void prof_map_free(prof_map *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

/* splitmix64's finalizer: pointers and small ids both spread well. */
static uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static size_t find(const prof_map *m, uint64_t a, uint64_t b) {
  size_t j = mix(a, b) & (m->cap - 1);
  while (m->slots[j].value >= 0 && (m->slots[j].a != a || m->slots[j].b != b))
    j = (j + 1) & (m->cap - 1);
  return j;
}

static int grow(prof_map *m) {
  prof_map old = *m;
  m->cap = old.cap ? old.cap * 2 : 64;
  m->slots = malloc(m->cap * sizeof *m->slots);
  if (!m->slots) {
    *m = old;
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) m->slots[i].value = -1;
  for (size_t i = 0; i < old.cap; i++)
    if (old.slots[i].value >= 0) m->slots[find(m, old.slots[i].a, old.slots[i].b)] = old.slots[i];
  free(old.slots);
  return 0;
}

int64_t prof_map_get(const prof_map *m, uint64_t a, uint64_t b) {
  return m->cap ? m->slots[find(m, a, b)].value : -1;
}

int64_t prof_map_put(prof_map *m, uint64_t a, uint64_t b, int64_t value) {
  if ((m->used + 1) * 2 > m->cap && grow(m)) return -1;
  prof_map_slot *s = &m->slots[find(m, a, b)];
  if (s->value >= 0) return s->value;
  s->a = a, s->b = b, s->value = value;
  m->used++;
  return value;
}
