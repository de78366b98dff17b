/* A small hash map from a pair of 64-bit keys to an index, for the analyses:
 * (interned name pointer, category) -> table row, (pid, tid) -> seen, and so
 * on. Interned names make pointer keys exact (same text, same pointer). */
#ifndef ATTNPROF_SRC_PROF_MAP_H
#define ATTNPROF_SRC_PROF_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t a, b;
  int64_t value;
} prof_map_slot;

typedef struct {
  prof_map_slot *slots; /* value -1 = empty */
  size_t cap, used;
} prof_map;

void prof_map_init(prof_map *m);
void prof_map_free(prof_map *m);
/* The value stored for (a, b), or -1. */
int64_t prof_map_get(const prof_map *m, uint64_t a, uint64_t b);
/* Stores value (>= 0) for (a, b) unless a value is there; returns the value
 * now stored, or -1 on out of memory. */
int64_t prof_map_put(prof_map *m, uint64_t a, uint64_t b, int64_t value);

static inline uint64_t prof_map_ptr(const void *p) { return (uint64_t)(uintptr_t)p; }

#endif
