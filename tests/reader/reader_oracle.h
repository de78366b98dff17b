/* A test-only oracle over jansson: what a trace file holds per call of a
 * range, computed straight from the JSON (a GPU event belongs to a range
 * when the launch call with its correlation id lies inside the range on the
 * same thread), with no code of the reader under test. The tests compare the
 * reader's analyses to it. */
#ifndef ATTNPROF_TESTS_READER_ORACLE_H
#define ATTNPROF_TESTS_READER_ORACLE_H

#include <stddef.h>

enum { ORACLE_MAX_NAMES = 64 };

typedef struct {
  int calls;
  double kernels, memcpy, memset, device_us; /* per call */
  size_t n_names;                            /* distinct GPU event names in the calls */
  char *names[ORACLE_MAX_NAMES];
  char *launch[ORACLE_MAX_NAMES]; /* the launch API of names[i]'s first event */
  int count[ORACLE_MAX_NAMES];    /* events of names[i] in all calls */
  /* Kernels: the footprint and occupancy figure of names[i]'s first event. */
  int grid[ORACLE_MAX_NAMES][3], block[ORACLE_MAX_NAMES][3];
  int regs[ORACLE_MAX_NAMES], smem[ORACLE_MAX_NAMES];
  double occupancy_in_file[ORACLE_MAX_NAMES];
} oracle;

/* Fills o for `range` in the trace file at path (fails the test on error). */
void oracle_of(const char *path, const char *range, oracle *o);
void oracle_free(oracle *o);
/* Index of name in o->names, or -1. */
int oracle_find(const oracle *o, const char *name);

/* A file's per-call row from fixtures/README.md's table: kernels, memcpy,
 * memset, device us. 0, or -1 when the file has no row. */
int readme_row(const char *readme, const char *file, double out[4]);

#endif
