/* The report file the injected collector leaves for `attnprof trace`:
 * key=value lines, replaced whole (write then rename) at every update so the
 * reader never sees half of one. Keys:
 *   pid, closed (0/1), safe_offset, events, dropped, signal, error,
 *   peak_rss_kib (VmHWM), write_ms (time spent writing the stream),
 *   records, buffers, buffers_allocated, buffer_bytes, cupti_dropped,
 *   buffers_refused, incomplete, open_ranges, unmatched_range_ends,
 *   cupti_version, api_all, exit_status (-1: the process did not call
 *   exit), rank (torchrun's RANK variable, -1 when unset) */
#ifndef ATTNPROF_SRC_PROF_INJECT_REPORT_H
#define ATTNPROF_SRC_PROF_INJECT_REPORT_H

#include <stdint.h>

#include "prof/collect/collector_cupti.h"

/* path NULL: no report (the trace is still written). */
void inject_report_open(const char *path);
void inject_report_progress(int64_t safe_offset, int64_t events, int64_t dropped);
void inject_report_error(const char *what, const char *why);
/* What the process gave exit(), for the final report (else it says -1). */
void inject_report_exit_status(int status);
/* write_s: seconds spent converting and writing chunks (the export rate). */
void inject_report_final(const cupti_stats *st, int write_error, int signal, double write_s);

#endif
