/* compare --serving's inputs, made in place in the problem's memory (host or
 * CUDA device, through buffers.c): one K/V pool per (B, KV) pair, shared by
 * its cells, and per cell the queries, the output and the tables. */
#ifndef ATTNPROF_CLI_SERVING_CELLS_H
#define ATTNPROF_CLI_SERVING_CELLS_H

#include "cli/cli.h"

/* One (B, KV) pair's K and V, [B * KV / P, P, Hkv, D] for either P. */
typedef struct {
  void *k, *v;
  size_t elems;
} cli_pool;

/* One cell: queries, output and tables in the problem's memory, the host
 * tables, and the args over the pool. */
typedef struct {
  void *q, *out, *lens, *table;
  int32_t *host_lens, *host_table;
  attn_seqs seqs;
  attn_args args;
} cli_cell;

/* "1.50 GiB" or "3.0 MiB" into buf; returns buf. */
const char *cli_human_bytes(double b, char *buf, size_t len);
/* K and V for p (B x KV x Hkv x D each), allocated and filled with seeded
 * values, unless they need more than mem_limit bytes (0: what is free
 * there). On failure why says why: the cell does not fit, or the error. */
attn_status cli_pool_make(const cli_problem *p, double mem_limit, cli_pool *pool, char *why,
                          size_t len);
void cli_pool_free(int device, cli_pool *pool);
/* The cell's inputs over the pool (pages of p->page_size, shuffled over the
 * sequences); its tables checked once here (attn_args_check), then marked
 * trusted for the timed forwards. */
attn_status cli_cell_make(const cli_problem *p, const cli_pool *pool, cli_cell *c);
void cli_cell_free(int device, cli_cell *c);

#endif
