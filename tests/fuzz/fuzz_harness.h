/* One input through the trace reader and every analysis that reads its
 * result, shared by the libFuzzer target (fuzz_reader.c) and the regression
 * test that replays the corpus and every past crash in normal ctest
 * (replay.c). */
#ifndef ATTNPROF_TESTS_FUZZ_HARNESS_H
#define ATTNPROF_TESTS_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* Returns 1 when the input was read as a trace, 0 when it was refused. */
int attnprof_fuzz_one(const uint8_t *data, size_t size);

#endif
