/* Options structs begin with `size_t size`, the caller's sizeof (their
 * *_default function sets it), so a library and a caller built against
 * different headers notice. A size below the oldest layout the library knows,
 * or past its own, is refused; in between (a caller built against an older
 * header) the caller's fields are taken and the rest keep their defaults. */
#ifndef ATTNPROF_SRC_CORE_OPTS_H
#define ATTNPROF_SRC_CORE_OPTS_H

#include <stddef.h>
#include <string.h>

#include "core/error.h"

/* dst holds the defaults (size included); src (NULL: keep them) is copied
 * over them up to its size. what names the struct in the error. */
static inline attn_status attn_opts_take(void *dst, size_t full, size_t oldest, const void *src,
                                         const char *what) {
  if (!src) return ATTN_STATUS_OK;
  size_t size;
  memcpy(&size, src, sizeof size);
  if (size < oldest || size > full)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "%s.size is %zu: accepted is %zu to %zu (start from %s_default(), which "
                     "sets it)",
                     what, size, oldest, full, what);
  memcpy(dst, src, size);
  memcpy(dst, &full, sizeof full);
  return ATTN_STATUS_OK;
}

/* The size of a layout that ends with field `last` of type T. */
#define ATTN_OPTS_SIZE(T, last) (offsetof(T, last) + sizeof(((T *)0)->last))

#endif
