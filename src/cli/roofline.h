/* The two roofs a measured row is set against: the copy bandwidth (measured
 * once per card and kept in a cache file, or --copy-bw) and the matmul peak
 * (on a GPU a cuBLAS GEMM measured once per card and dtype and kept there
 * too, else a stated figure; or --peak-tflops). */
#ifndef ATTNPROF_CLI_ROOFLINE_H
#define ATTNPROF_CLI_ROOFLINE_H

#include <jansson.h>

#include "cli/cli.h"

typedef struct {
  double copy_gbps; /* 0: unknown */
  char copy_source[1400];
  double peak_tflops; /* 0: unknown */
  char peak_source[256];
} cli_roof;

/* The yardsticks for device and dtype, found once per process (the CLI keeps
 * them; the engine handle does not). Never NULL. */
const cli_roof *cli_roof_for(int device, attn_dtype dtype, const cli_measure_opts *m);
/* Fills r's flops, copy_frac, peak_frac and roof from its bytes and time. */
void cli_roof_apply(cli_result *r, double flops, const cli_roof *roof);
/* "memory" when bytes/bandwidth exceeds flops/peak, else "compute";
 * "unknown" without both yardsticks. */
const char *cli_roof_word(double bytes, double flops, double copy_gbps, double peak_tflops);
/* {"copy_gbps", "copy_source", "peak_tflops", "peak_source"} (null when unknown). */
json_t *cli_roof_json(const cli_roof *roof);
/* The columns "%copy TFLOP/s %peak roof" of one row ("-": unknown), no
 * spaces around. */
void cli_print_roof_cols(FILE *f, const cli_result *r);
/* Appends to dst the user annotation named after r's backend that spans r's
 * trace, carrying its roofline point (prof_roof; bytes and flops of one
 * forward), for the HTML report. */
void cli_roof_group(prof_trace *dst, const cli_result *r);
/* One line under a table: the two roofs and where each comes from. */
void cli_print_roof(FILE *f, const cli_roof *roof);
/* The cache file's path ($XDG_CACHE_HOME or ~/.cache, then attnprof/bandwidth.json). */
int cli_roof_cache_path(char *buf, size_t len);

#endif
