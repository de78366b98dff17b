/* Shared pieces of the attnprof command: option parsing, the problem a run
 * sets up, and the measurement every subcommand reports. */
#ifndef ATTNPROF_CLI_H
#define ATTNPROF_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "attnprof/attn.h"
#include "attnprof/prof.h"

/* Exit statuses: 0 all good, 1 an expectation broke, 2 bad usage or input,
 * 3 a run failed for another reason (no memory, backend error). */
enum { CLI_OK = 0, CLI_EXPECT_BROKEN = 1, CLI_USAGE = 2, CLI_FAILED = 3 };

/* Prints "attnprof: error: ..." on one line to stderr; returns CLI_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, for failures that are not the user's input; returns CLI_FAILED. */
int cli_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What to compute: everything attn_args needs, in CLI terms. */
typedef struct {
  int64_t b, hq, hkv, sq, sk, d;
  attn_dtype dtype;
  attn_causal causal;
  attn_mask_kind mask;
  int bshd;     /* lay Q/K/V/out out as [B, S, H, D] in memory */
  double scale; /* 0: 1/sqrt(D) */
  int want_lse;
  int device; /* ATTN_DEVICE_CPU or a CUDA ordinal */
  uint64_t seed;
  int64_t page_size; /* > 0: K/V in a paged cache of pages this long (decode problems) */
} cli_problem;

/* How to measure and what to print. */
typedef struct {
  int iters, warmup, profiled, threads;
  int cuda_graphs;  /* --cuda-graphs: the engine handle's graph mode */
  int flash_kernel; /* --flash-kernel: an attn_flash_kernel, or -1 (the environment's) */
  int max_ms; /* GPU: fewer timed forwards (at least 10) past this much device time; 0 = none */
  int json, check;
  int force; /* run past the memory and time estimates (preflight.c) */
  const char *trace_path;
  prof_trace_format trace_format; /* --format; AUTO: by --trace's name */
  const char *expect_text;
  double copy_bw;     /* --copy-bw GB/s: the copy roof, instead of the measured one; 0 = measure */
  double peak_tflops; /* --peak-tflops: the compute roof, instead of the stated one; 0 = table */
  /* compare --serving: a backend whose one forward after the warm-up takes
   * longer than skip_ms is not timed further (0 = no limit); device_only
   * leaves out the host-time pass (the grid reports device time). */
  double skip_ms;
  int device_only;
} cli_measure_opts;

/* Option parsing: each subcommand walks argv with cli_opt_*; an option is
 * "--name value" or "--name=value". Returns 1 if argv[*i] matched (and
 * advances *i past its value), 0 if not, -1 after printing a usage error. */
int cli_opt_flag(int argc, char **argv, int *i, const char *name);
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value);
/* Parses the shared problem and measurement options; returns 1 matched, 0 not,
 * -1 bad value (message printed). */
int cli_parse_problem_opt(int argc, char **argv, int *i, cli_problem *p);
int cli_parse_measure_opt(int argc, char **argv, int *i, cli_measure_opts *m);
void cli_problem_defaults(cli_problem *p);
void cli_measure_defaults(cli_measure_opts *m);
/* "--shape 8x16x1024x64": B x H x S x D (Sq = Sk = S, Hkv = H until --sk or
 * --kv-heads say otherwise). */
int cli_parse_shape(const char *text, cli_problem *p);
void cli_problem_describe(const cli_problem *p, char *buf, size_t len);
/* Resolves the --expect value: inline text, or @FILE read whole. NULL on error
 * (message printed); the caller frees. */
char *cli_expect_text(const char *value);

/* The command's engine handle: made once from the environment
 * (attn_ctx_opts_from_env) and the options (--threads, --cuda-graphs,
 * --flash-kernel); freed at exit. Returns NULL after printing a usage error
 * (exit status 2) when the environment holds a value not understood. */
attn_ctx *cli_engine(const cli_measure_opts *m);

/* Inputs for one problem, random but seeded. */
typedef struct {
  attn_args args;
  void *bufs[6]; /* q, k, v, out, mask, lse */
  /* The same problem in host memory, which the fp64 reference reads: equal
   * to args on the CPU; with --device cuda, args holds device copies
   * (dev_bufs) of these host buffers. */
  attn_args host;
  void *dev_bufs[6];
  /* --page-size: the sequences (host tables in tables[], device copies in
   * dev_tables[]; args.seqs points at dev_seqs on a device, at seqs here). */
  attn_seqs seqs, dev_seqs;
  int32_t *tables[2]; /* kv_lens [B], block_table [B, pages per sequence] */
  void *dev_tables[2];
} cli_inputs;

attn_status cli_inputs_create(const cli_problem *p, cli_inputs *in);
void cli_inputs_destroy(cli_inputs *in);

/* One backend measured on one problem. Counts come from the recorded trace. */
typedef struct {
  attn_backend backend;
  attn_status status;
  int refused;                   /* the backend's why-not check said no */
  int skipped;                   /* not timed: one forward took longer than skip_ms */
  char why[512];                 /* refusal or failure, one line */
  prof_range_summary per_fwd;    /* range "attn_fwd" of the profiled forwards */
  double time_us_median;         /* wall time of one forward, median */
  double time_us_q1, time_us_q3; /* its quartiles: the spread under load */
  double host_us_median;         /* time for attn_forward to return, median */
  double gflops;                 /* from time_us_median */
  double bytes, gbps;            /* attn_bytes and bytes / time_us_median */
  double flops;                  /* attn_flops */
  double copy_gbps, peak_tflops; /* the two roofs (roofline.h); 0 = unknown */
  double copy_frac, peak_frac;   /* gbps / copy_gbps, TFLOP/s / peak_tflops; NaN = unknown */
  const char *roof;              /* "memory", "compute" or "unknown" */
  double rel_err;                /* against the fp64 reference; NaN when not checked */
  prof_trace *trace;             /* the profiled forwards; owned */
  int device;                    /* the problem's: ATTN_DEVICE_CPU or a CUDA ordinal */
} cli_result;

/* Sorts v[0..n) and gives its quartiles and median (linear interpolation). */
void cli_quartiles(double *v, int n, double *q1, double *median, double *q3);

/* The fp64 reference for the problem's inputs (NULL when not checking). */
double *cli_reference(const cli_inputs *in);
/* Warm-up, timed iterations, profiled iterations inside "attn_fwd" ranges, and
 * the accuracy check. Fills r (r->trace owned by r). */
void cli_measure(attn_backend b, cli_inputs *in, const double *ref, const cli_measure_opts *m,
                 cli_result *r);
void cli_result_free(cli_result *r);

/* The range every profiled forward sits in. */
#define CLI_RANGE "attn_fwd"

/* Exit status for a library status: the user's input (2) or a failure (3). */
int cli_status_exit(attn_status st, const char *why);
/* Before any work: parse --expect, check that --trace can be written. */
int cli_prepare_outputs(const cli_measure_opts *m, prof_expect **ex);
/* Writes the trace if a path was given; CLI_OK or an exit status. */
int cli_write_trace(const char *path, prof_trace_format f, const prof_trace *t);
/* Checks expectations (NULL: none) on the CLI_RANGE range; CLI_OK or
 * CLI_EXPECT_BROKEN. */
int cli_check_expect(const prof_expect *ex, const prof_trace *t, FILE *f);

/* Backends with an implementation for `device` (CPU, or any CUDA device),
 * each once, in the table's order; returns the count. */
int cli_backends_for(int device, attn_backend *out);
/* compare --sweep: the throughput grid (compare_sweep.c). */
int cli_compare_sweep(const cli_problem *base, const cli_measure_opts *m);
/* compare --serving: the decode grid of issue 13 (compare_serving.c).
 * mem_limit: bytes the grid's K/V pools may take (0: what the device or host
 * reports free). */
int cli_compare_serving(const cli_problem *base, const cli_measure_opts *m, double mem_limit);

/* The problem and measure options, one line each (run: with --expect). */
void cli_print_options(FILE *f, int run);

int cmd_run(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_merge(int argc, char **argv); /* several processes on one timeline: cmd_merge.c */
/* Loads n files; on failure none stays loaded. */
int cli_load_traces(const char *const *files, size_t n, prof_trace **traces);
int cmd_summary(int argc, char **argv); /* trace files (issue 7): cmd_summary.c, */
int cmd_diff(int argc, char **argv);    /* cmd_diff.c, */
int cmd_report(int argc, char **argv);  /* cmd_report.c */

#endif
