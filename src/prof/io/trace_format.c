/* prof_write_trace: one trace, three file formats (Kineto JSON, the same
 * gzip-compressed, Perfetto protobuf), each written to PATH.tmp and renamed
 * over PATH, so a failure leaves nothing behind. gzip goes through a stdio
 * stream over zlib's gzwrite (fopencookie), so the JSON writer streams into
 * it unchanged and memory never holds the output. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/opts.h"
#include "prof/io/chrome.h"
#include "prof/io/pftrace.h"

static const char *const format_names[] = {"auto", "json", "json.gz", "pftrace"};

const char *prof_trace_format_name(prof_trace_format f) {
  return (unsigned)f < sizeof format_names / sizeof format_names[0] ? format_names[f] : "?";
}

attn_status prof_trace_format_from_name(const char *name, prof_trace_format *out) {
  for (int i = PROF_FORMAT_JSON; name && i <= PROF_FORMAT_PFTRACE; i++)
    if (!strcmp(name, format_names[i])) return *out = (prof_trace_format)i, ATTN_STATUS_OK;
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "unknown trace format '%s' (json, json.gz or pftrace)", name ? name : "(null)");
}

static int ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && !strcmp(s + n - k, tail);
}

prof_trace_format prof_trace_format_for_path(const char *path) {
  if (path && ends_with(path, ".pftrace")) return PROF_FORMAT_PFTRACE;
  if (path && ends_with(path, ".gz")) return PROF_FORMAT_JSON_GZ;
  return PROF_FORMAT_JSON;
}

/* ---- a stdio stream that gzips --------------------------------------------- */

static ssize_t gz_cookie_write(void *cookie, const char *buf, size_t n) {
  size_t done = 0;
  while (done < n) { /* gzwrite takes an unsigned int */
    unsigned k = n - done > (1u << 30) ? 1u << 30 : (unsigned)(n - done);
    int w = gzwrite((gzFile)cookie, buf + done, k);
    if (w <= 0) {
      errno = EIO;
      return done ? (ssize_t)done : -1;
    }
    done += (size_t)w;
  }
  return (ssize_t)done;
}

static int gz_cookie_close(void *cookie) {
  int rc = gzclose((gzFile)cookie);
  if (rc == Z_OK) return 0;
  errno = rc == Z_ERRNO && errno ? errno : EIO;
  return -1;
}

/* level 6: zlib's default; a trace shrinks about 10x. */
static FILE *gz_open_write(const char *path) {
  gzFile gz = gzopen(path, "wb6");
  if (!gz) return NULL;
  gzbuffer(gz, 1 << 18);
  cookie_io_functions_t io = {NULL, gz_cookie_write, NULL, gz_cookie_close};
  FILE *f = fopencookie(gz, "w", io);
  if (!f) gzclose(gz);
  else setvbuf(f, NULL, _IOFBF, 1 << 20);
  return f;
}

/* ---- writing ---------------------------------------------------------------- */

static int write_format(const prof_trace *t, const char *tmp, const char *path, prof_trace_format f,
                        int pftrace_plain) {
  FILE *out = f == PROF_FORMAT_JSON_GZ ? gz_open_write(tmp) : fopen(tmp, "wb");
  if (!out) return errno ? errno : ENOMEM;
  if (f != PROF_FORMAT_JSON_GZ) setvbuf(out, NULL, _IOFBF, 1 << 20);
  int err = f == PROF_FORMAT_PFTRACE ? pft_write_trace_to(t, out, !pftrace_plain)
                                     : chrome_write_to(t, out, path);
  if (fclose(out) && !err) err = errno ? errno : EIO;
  return err;
}

prof_write_opts prof_write_opts_default(void) {
  prof_write_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  return o;
}

attn_status prof_write_trace(const prof_trace *t, const char *path, const prof_write_opts *opts) {
  prof_write_opts o = prof_write_opts_default();
  attn_status st = attn_opts_take(&o, sizeof o, ATTN_OPTS_SIZE(prof_write_opts, pftrace_plain),
                                  opts, "prof_write_opts");
  if (st) return st;
  prof_trace_format f = o.format;
  if (!t || !path || !*path)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "no trace or no path to write it to");
  if (f == PROF_FORMAT_AUTO) f = prof_trace_format_for_path(path);
  if (f == PROF_FORMAT_JSON) return prof_write_chrome_trace(t, path);
  if (f != PROF_FORMAT_JSON_GZ && f != PROF_FORMAT_PFTRACE)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "unknown trace format %d (json, json.gz, pftrace)", (int)f);
  size_t n = strlen(path);
  char *tmp = malloc(n + 5);
  if (!tmp) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no memory");
  memcpy(tmp, path, n), memcpy(tmp + n, ".tmp", 5);
  int err = write_format(t, tmp, path, f, o.pftrace_plain);
  if (!err && rename(tmp, path)) err = errno;
  if (err) unlink(tmp);
  free(tmp);
  if (err)
    return attn_fail(ATTN_STATUS_IO_ERROR, "cannot write trace '%s': %s", path, strerror(err));
  return ATTN_STATUS_OK;
}
