/* The GPU half of the attnprof command: device copies of the inputs,
 * CUDA-event timing, the accuracy check on device output, and the GPU
 * defaults. Built with or without CUDA: without it every entry point says
 * the build has no CUDA backends. */
#ifndef ATTNPROF_CLI_CUDA_H
#define ATTNPROF_CLI_CUDA_H

#include "cli/cli.h"

/* The default GPU shape (8x16x1024x64), used when --device cuda comes without --shape. */
#define CLI_GPU_SHAPE_B 8
#define CLI_GPU_SHAPE_H 16
#define CLI_GPU_SHAPE_S 1024
#define CLI_GPU_SHAPE_D 64
/* Timed forwards on a GPU: at least this many (the median of >= 50). */
#define CLI_GPU_MIN_ITERS 50

/* Replaces the CPU default shape by the GPU one when the problem is on a
 * GPU and argv gave no --shape (an explicit --sk or --kv-heads stays). */
void cli_gpu_default_shape(int argc, char **argv, cli_problem *p);

/* Moves in->args onto CUDA device p->device: device copies of every buffer
 * (in->dev_bufs); in->host keeps the host problem. */
attn_status cli_inputs_to_device(const cli_problem *p, cli_inputs *in);
void cli_inputs_free_device(cli_inputs *in);

/* Timed forwards on a GPU. Device time per forward: CUDA events around each
 * of back-to-back forwards (the queue stays full, so launch gaps do not
 * count), median of max(iters, 50) after the warm-up. Host time per call:
 * the device drained before each call, median. Sets r->status/why on error
 * and returns -1. */
int cli_cuda_time_forwards(cli_result *r, const attn_args *a, const cli_measure_opts *m);
/* When m->skip_ms is set and one forward took longer (us), marks r skipped
 * with the reason (time_us_median = us) and returns 1; else 0. */
int cli_skip_slow(cli_result *r, double us, const cli_measure_opts *m);
/* The number of timed forwards on `device` (before any max_ms cap). */
int cli_timed_iters(const cli_measure_opts *m, int device);
attn_status cli_cuda_sync(int device);
/* Output poisoned on the device (0xFF), one forward, copied back into
 * in->host.out, relative error against ref. */
int cli_cuda_check_accuracy(cli_result *r, cli_inputs *in, const double *ref);
/* Buffers in the problem's memory (device < 0: the host), for inputs made
 * in place (compare --serving): allocate, free, seeded uniform fill in
 * [-1, 1) (element i from (seed, i), the same values on host and device),
 * copy in from the host, and the bytes free there. */
attn_status cli_buf_alloc(int device, size_t bytes, void **p);
void cli_buf_free(int device, void *p);
attn_status cli_buf_fill_uniform(int device, void *p, attn_dtype dt, size_t n, uint64_t seed);
attn_status cli_buf_upload(int device, void *dst, const void *src, size_t bytes);
double cli_mem_available(int device);
/* "cuda:0 NVIDIA H200" or "cpu". */
void cli_device_describe(int device, char *buf, size_t len);

#endif
