/* Testing surface of the trace reader, not the product API: the reader with
 * yajl alone, the fast tokenizer (chrome_scan.c) skipped, so tests and the
 * fuzzer hold the tokenizer to yajl (same status, error, counts and events).
 * Otherwise as prof_read_chrome_trace and prof_read_chrome_trace_buffer. */
#ifndef ATTNPROF_SRC_PROF_READER_TESTING_H
#define ATTNPROF_SRC_PROF_READER_TESTING_H

#include "attnprof/prof.h"

attn_status prof_testing_read_yajl(const char *path, prof_trace **out, prof_read_stats *stats);
attn_status prof_testing_read_buffer_yajl(const void *data, size_t len, prof_trace **out,
                                          prof_read_stats *stats);

#endif
