/* The status table's messages and the per-thread error line (core/error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"

static _Thread_local char last_error[1024];

const char *attn_status_string(attn_status s) {
  static const char *const msg[] = {
#define ATTN_STATUS_MSG(name, m) m,
      ATTN_STATUS_MAP(ATTN_STATUS_MSG)
#undef ATTN_STATUS_MSG
  };
  return (unsigned)s < ATTN_STATUS_COUNT ? msg[s] : "unknown status";
}

const char *attn_last_error(void) { return last_error; }

attn_status attn_fail(attn_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}
