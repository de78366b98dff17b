/* CUPTI activity records -> prof_event: one function per record kind, and the
 * little state the conversion needs across records (names of API callback
 * ids, NVTX ranges still open, which device each context is on). Separate
 * from the collector so the mapping of every field can be tested on records
 * built by hand, without a GPU. */
#ifndef ATTNPROF_SRC_PROF_CUPTI_RECORDS_H
#define ATTNPROF_SRC_PROF_CUPTI_RECORDS_H

#include <cupti.h>

#include "attnprof/prof.h"

typedef struct cupti_conv cupti_conv;

/* name_of(domain, cbid) gives an API's name ("cudaLaunchKernel"); NULL means
 * CUPTI is not loaded and names are written as "cbid N". */
typedef const char *(*cupti_cbid_name_fn)(CUpti_CallbackDomain domain, uint32_t cbid);

cupti_conv *cupti_conv_create(cupti_cbid_name_fn name_of);
void cupti_conv_destroy(cupti_conv *cv);

/* Converts one record. Returns 1 with *out filled (name pointers valid until
 * the next call; prof_trace_append copies them), 0 when the record makes no
 * event by itself (an NVTX range start, a kind we do not keep), -1 when an
 * NVTX range end had no start (counted as dropped by the caller). */
int cupti_conv_record(cupti_conv *cv, const CUpti_Activity *rec, prof_event *out);

/* When CUPTI could not take our clock it stamps CLOCK_REALTIME: offset =
 * realtime - monotonic brings its times onto attn_clock_ns. */
void cupti_conv_set_clock_offset(cupti_conv *cv, int64_t offset);

/* NVTX ranges still open (pushed, not popped): the caller counts them as
 * lost when a session ends. */
size_t cupti_conv_open_ranges(const cupti_conv *cv);

/* The API name for a callback id with CUPTI's version suffix removed
 * ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"), into buf. */
const char *cupti_strip_version(const char *name, char *buf, size_t len);

/* Kineto's names: "Memcpy HtoD (Pageable -> Device)", "Memset (Device)". */
const char *cupti_memcpy_name(unsigned copy_kind, unsigned src, unsigned dst, char *buf,
                              size_t len);
const char *cupti_memset_name(unsigned memory_kind, char *buf, size_t len);

#endif
