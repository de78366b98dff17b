/* The core both halves and the command line share: the error line, and the
 * host's free memory. A failing call sets one line (what was wrong, what
 * would be accepted) on the calling thread, like errno, and returns its
 * status; attn_last_error() reads it. Exported from the library (ATTN_API),
 * so the library and its callers share one error line. */
#ifndef ATTNPROF_SRC_CORE_ERROR_H
#define ATTNPROF_SRC_CORE_ERROR_H

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets this thread's attn_last_error() (printf-style) and returns status. */
ATTN_API attn_status attn_fail(attn_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Host memory available now (MemAvailable), in bytes; 0 if unknown. */
ATTN_API size_t attn_host_memory_available(void);

#ifdef __cplusplus
}
#endif
#endif
