/* The roofline yardsticks of every run/compare row. The copy bandwidth is
 * measured once per card (device name and driver; the host's CPU model) and
 * kept in a small JSON file so that later runs do not pay for it; the file is
 * replaced whole (a temporary file renamed over it), never half-written. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attnprof/device.h"
#include "cli/roofline.h"

/* A GPU copy of 2 GiB (4 GiB read + written) sits far past every cache; the
 * host's 64 MiB copy past the last-level cache of CI machines, and fast. */
#define GPU_COPY_BYTES ((size_t)2 << 30)
#define HOST_COPY_BYTES ((size_t)64 << 20)
#define COPY_REPS 9

int cli_roof_cache_path(char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(buf, len, "%s/attnprof/bandwidth.json", xdg);
  else if (home && home[0]) n = snprintf(buf, len, "%s/.cache/attnprof/bandwidth.json", home);
  else return -1;
  return n > 0 && (size_t)n < len ? 0 : -1;
}

/* mkdir -p of the file's folder. */
static int make_parent(const char *path) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0755) && errno != EEXIST) return -1;
    *p = '/';
  }
  return 0;
}

/* A positive figure kept under key, or 0. */
static double cached(const char *path, const char *key, const char *field) {
  json_t *doc = json_load_file(path, 0, NULL);
  double v = json_number_value(json_object_get(json_object_get(doc, key), field));
  json_decref(doc);
  return isfinite(v) && v > 0 ? v : 0;
}

/* Read, merge the fields (taken) into the key's entry, write a temporary
 * file beside it, rename over it. */
static int keep(const char *path, const char *key, json_t *fields) {
  json_t *doc = json_load_file(path, 0, NULL);
  if (!json_is_object(doc)) json_decref(doc), doc = json_object();
  json_t *entry = json_object_get(doc, key);
  if (!json_is_object(entry)) json_object_set_new(doc, key, entry = json_object());
  json_object_update(entry, fields);
  json_decref(fields);
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int rc = make_parent(path) || json_dump_file(doc, tmp, JSON_INDENT(2) | JSON_SORT_KEYS);
  json_decref(doc);
  if (!rc && rename(tmp, path)) rc = -1;
  if (rc) unlink(tmp);
  return rc;
}

static void find_copy_bw(int device, const cli_measure_opts *m, cli_roof *r) {
  if (m && m->copy_bw > 0) {
    r->copy_gbps = m->copy_bw;
    snprintf(r->copy_source, sizeof r->copy_source, "--copy-bw");
    return;
  }
  char key[300], path[1024];
  if (attn_device_key(device, key, sizeof key)) {
    snprintf(r->copy_source, sizeof r->copy_source, "unknown: %s", attn_last_error());
    return;
  }
  int have_path = !cli_roof_cache_path(path, sizeof path);
  if (have_path && (r->copy_gbps = cached(path, key, "copy_gbps")) > 0) {
    snprintf(r->copy_source, sizeof r->copy_source, "measured earlier, kept in %s", path);
    return;
  }
  size_t bytes = device >= 0 ? GPU_COPY_BYTES : HOST_COPY_BYTES;
  if (attn_copy_bandwidth(device, bytes, COPY_REPS, &r->copy_gbps)) {
    r->copy_gbps = 0;
    snprintf(r->copy_source, sizeof r->copy_source, "unknown: %s", attn_last_error());
    return;
  }
  int kept =
      have_path && !keep(path, key,
                         json_pack("{sf sI sI sI}", "copy_gbps", r->copy_gbps, "bytes_per_copy",
                                   (json_int_t)bytes, "copies", (json_int_t)COPY_REPS,
                                   "measured_unix", (json_int_t)time(NULL)));
  snprintf(r->copy_source, sizeof r->copy_source, "measured now (%s, median of %d)%s%s",
           device >= 0 ? "device-to-device cudaMemcpy" : "memcpy", COPY_REPS,
           kept ? ", kept in " : ", not kept: cannot write the cache file", kept ? path : "");
}

/* --peak-tflops; else on a GPU a cuBLAS GEMM measured once per card and
 * dtype and kept beside the copy bandwidth; else (or when that fails) the
 * stated table; unknown on the CPU. */
static void find_peak(int device, attn_dtype dtype, const cli_measure_opts *m, cli_roof *r) {
  const char *src = NULL;
  char key[300], path[1024], field[64];
  if (m && m->peak_tflops > 0) {
    r->peak_tflops = m->peak_tflops;
    snprintf(r->peak_source, sizeof r->peak_source, "--peak-tflops");
    return;
  }
  snprintf(field, sizeof field, "matmul_tflops_%s", attn_dtype_name(dtype));
  int have_path = device >= 0 && !attn_device_key(device, key, sizeof key) &&
                  !cli_roof_cache_path(path, sizeof path);
  if (have_path && (r->peak_tflops = cached(path, key, field)) > 0) {
    snprintf(r->peak_source, sizeof r->peak_source, "cuBLAS %s GEMM 8192^3 measured earlier",
             attn_dtype_name(dtype));
    return;
  }
  if (device >= 0 && !attn_matmul_tflops_measured(device, dtype, &r->peak_tflops)) {
    if (have_path) keep(path, key, json_pack("{sf}", field, r->peak_tflops));
    snprintf(r->peak_source, sizeof r->peak_source,
             "cuBLAS %s GEMM 8192^3 measured now, median of 9", attn_dtype_name(dtype));
    return;
  }
  r->peak_tflops = attn_matmul_peak_tflops(device, dtype, &src);
  snprintf(r->peak_source, sizeof r->peak_source, "%s", src ? src : "unknown");
}

const cli_roof *cli_roof_for(int device, attn_dtype dtype, const cli_measure_opts *m) {
  static cli_roof roof;
  static int have, have_device;
  static attn_dtype have_dtype;
  if (have && have_device == device && have_dtype == dtype) return &roof;
  if (!have || have_device != device) {
    memset(&roof, 0, sizeof roof);
    find_copy_bw(device, m, &roof);
  }
  find_peak(device, dtype, m, &roof);
  have = 1, have_device = device, have_dtype = dtype;
  return &roof;
}

const char *cli_roof_word(double bytes, double flops, double copy_gbps, double peak_tflops) {
  if (!(copy_gbps > 0) || !(peak_tflops > 0)) return "unknown";
  return bytes / (copy_gbps * 1e9) > flops / (peak_tflops * 1e12) ? "memory" : "compute";
}

void cli_roof_apply(cli_result *r, double flops, const cli_roof *roof) {
  r->flops = flops;
  r->copy_gbps = roof->copy_gbps, r->peak_tflops = roof->peak_tflops;
  r->copy_frac = roof->copy_gbps > 0 ? r->gbps / roof->copy_gbps : NAN;
  r->peak_frac = roof->peak_tflops > 0 ? r->gflops / 1e3 / roof->peak_tflops : NAN;
  r->roof = cli_roof_word(r->bytes, flops, roof->copy_gbps, roof->peak_tflops);
}

json_t *cli_roof_json(const cli_roof *roof) {
  return json_pack("{so ss so ss}", "copy_gbps",
                   roof->copy_gbps > 0 ? json_real(roof->copy_gbps) : json_null(), "copy_source",
                   roof->copy_source, "peak_tflops",
                   roof->peak_tflops > 0 ? json_real(roof->peak_tflops) : json_null(),
                   "peak_source", roof->peak_source);
}

void cli_print_roof(FILE *f, const cli_roof *roof) {
  fprintf(f, "roofs: copy ");
  if (roof->copy_gbps > 0) fprintf(f, "%.1f GB/s (%s)", roof->copy_gbps, roof->copy_source);
  else fprintf(f, "%s", roof->copy_source);
  fprintf(f, "; matmul peak ");
  if (roof->peak_tflops > 0)
    fprintf(f, "%.1f TFLOP/s (%s)\n", roof->peak_tflops, roof->peak_source);
  else fprintf(f, "unknown (give --peak-tflops)\n");
}

static void pct(FILE *f, double frac) {
  if (isfinite(frac)) fprintf(f, "%6.1f", 100 * frac);
  else fprintf(f, "%6s", "-");
}

void cli_print_roof_cols(FILE *f, const cli_result *r) {
  pct(f, r->copy_frac);
  fprintf(f, " %8.3f ", r->gflops / 1e3);
  pct(f, r->peak_frac);
  fprintf(f, " %7s", r->roof ? r->roof : "unknown");
}

void cli_roof_group(prof_trace *dst, const cli_result *r) {
  const prof_trace *t = r->trace;
  if (!t || !prof_trace_count(t)) return;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t j = 0; j < prof_trace_count(t); j++) {
    const prof_event *e = prof_trace_at(t, j);
    if (e->start_ns < lo) lo = e->start_ns;
    if (e->start_ns + e->dur_ns > hi) hi = e->start_ns + e->dur_ns;
  }
  prof_event g = prof_event_init(PROF_CAT_USER_ANNOTATION, attn_backend_name(r->backend));
  const prof_event *first = prof_trace_at(t, 0);
  g.start_ns = lo, g.dur_ns = hi - lo, g.pid = first->pid, g.tid = first->tid;
  g.bytes = (int64_t)r->bytes, g.flops = r->flops;
  g.roof = (prof_roof){r->time_us_median, r->copy_gbps, r->peak_tflops};
  prof_trace_append(dst, &g, NULL);
}
