/* The test kit: what the tests, the benches and the attnprof command use
 * beyond the product API. Not installed and not exported by libattnprof.so:
 * link the static library attnprof_testing (it brings libattnprof_static).
 * Host tensors here; device memory, events, fills and the roofline's
 * yardsticks in attnprof/device.h, which this header includes. */
#ifndef ATTNPROF_TESTING_H
#define ATTNPROF_TESTING_H

#include <stdint.h>

#include "attnprof/attn.h"
#include "attnprof/device.h"
#include "attnprof/prof.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Storage conversions (bf16/f16 are storage only; compute is fp32). Rounding
 * to nearest even. */
float attn_bf16_to_f32(uint16_t v);
uint16_t attn_f32_to_bf16(float v);
float attn_f16_to_f32(uint16_t v);
uint16_t attn_f32_to_f16(float v);
/* Element (b, h, s, d) of a host tensor as double; set rounds to its dtype. */
double attn_tensor_get(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);
void attn_tensor_set(attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d, double v);
/* Number of elements the strides can reach (the allocation a tensor needs). */
int64_t attn_tensor_span(const attn_tensor *t);

/* The trace reader with yajl alone, the fast tokenizer skipped, so tests and
 * the fuzzer hold the tokenizer to yajl (same status, error, counts and
 * events); otherwise as prof_read_chrome_trace(_buffer). */
attn_status prof_testing_read_yajl(const char *path, prof_trace **out, prof_read_stats *stats);
attn_status prof_testing_read_buffer_yajl(const void *data, size_t len, prof_trace **out,
                                          prof_read_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
