/* compare --serving's inputs made in place (serving_cells.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cli/cli_cuda.h"
#include "cli/serving_cells.h"

static double pool_bytes(const cli_problem *p) {
  return 2.0 * (double)p->b * (double)p->sk * (double)p->hkv * (double)p->d *
         (double)attn_dtype_size(p->dtype);
}

/* "1.50 GiB" or "3.0 MiB". */
const char *cli_human_bytes(double b, char *buf, size_t len) {
  if (b >= 1073741824.0) snprintf(buf, len, "%.2f GiB", b / 1073741824.0);
  else snprintf(buf, len, "%.1f MiB", b / 1048576.0);
  return buf;
}

/* Allocates and fills the pool; on failure *why says why (fit or OOM). */
attn_status cli_pool_make(const cli_problem *p, double mem_limit, cli_pool *pool, char *why,
                          size_t len) {
  memset(pool, 0, sizeof *pool);
  double need = pool_bytes(p), avail = mem_limit > 0 ? mem_limit : cli_mem_available(p->device);
  const char *where = p->device >= 0 ? "on the device" : "on the host";
  char hn[32], ha[32];
  cli_human_bytes(need, hn, sizeof hn), cli_human_bytes(avail, ha, sizeof ha);
  if (avail > 0 && need > avail) {
    snprintf(why, len, "K and V need %s, %s %s %s: this cell does not fit", hn, ha,
             mem_limit > 0 ? "allowed by --mem-limit-mib" : "free", where);
    return ATTN_STATUS_OUT_OF_MEMORY;
  }
  pool->elems = (size_t)(p->b * p->sk * p->hkv * p->d);
  size_t bytes = pool->elems * attn_dtype_size(p->dtype);
  attn_status st = cli_buf_alloc(p->device, bytes, &pool->k);
  if (!st) st = cli_buf_alloc(p->device, bytes, &pool->v);
  if (!st) st = cli_buf_fill_uniform(p->device, pool->k, p->dtype, pool->elems, p->seed * 4 + 1);
  if (!st) st = cli_buf_fill_uniform(p->device, pool->v, p->dtype, pool->elems, p->seed * 4 + 2);
  if (st) snprintf(why, len, "K and V (%s) %s: %s", hn, where, attn_last_error());
  return st;
}

void cli_pool_free(int device, cli_pool *pool) {
  cli_buf_free(device, pool->k), cli_buf_free(device, pool->v);
  memset(pool, 0, sizeof *pool);
}

void cli_cell_free(int device, cli_cell *c) {
  cli_buf_free(device, c->q), cli_buf_free(device, c->out);
  cli_buf_free(device, c->lens), cli_buf_free(device, c->table);
  free(c->host_lens), free(c->host_table);
  memset(c, 0, sizeof *c);
}

/* splitmix64, for the table's shuffle. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Lengths all KV, the pool's pages shuffled over the sequences (seeded). */
static attn_status cell_tables(const cli_problem *p, int64_t npages, cli_cell *c) {
  c->host_lens = malloc((size_t)p->b * sizeof(int32_t));
  c->host_table = malloc((size_t)npages * sizeof(int32_t));
  if (!c->host_lens || !c->host_table)
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for the block table");
  uint64_t seed = p->seed;
  for (int64_t i = 0; i < npages; i++) c->host_table[i] = (int32_t)i;
  for (int64_t i = npages - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(next_u64(&seed) % (uint64_t)(i + 1));
    int32_t t = c->host_table[i];
    c->host_table[i] = c->host_table[j], c->host_table[j] = t;
  }
  for (int64_t b = 0; b < p->b; b++) c->host_lens[b] = (int32_t)p->sk;
  size_t lb = (size_t)p->b * 4, tb = (size_t)npages * 4;
  attn_status st = cli_buf_alloc(p->device, lb, &c->lens);
  if (!st) st = cli_buf_alloc(p->device, tb, &c->table);
  if (!st) st = cli_buf_upload(p->device, c->lens, c->host_lens, lb);
  if (!st) st = cli_buf_upload(p->device, c->table, c->host_table, tb);
  return st;
}

/* The cell's inputs over the pool; its tables checked here, once, then
 * passed trusted to every timed forward. */
attn_status cli_cell_make(const cli_problem *p, const cli_pool *pool, cli_cell *c) {
  memset(c, 0, sizeof *c);
  int64_t per = p->sk / p->page_size, npages = p->b * per;
  size_t qn = (size_t)(p->b * p->hq * p->d), qb = qn * attn_dtype_size(p->dtype);
  attn_status st = cli_buf_alloc(p->device, qb, &c->q);
  if (!st) st = cli_buf_alloc(p->device, qb, &c->out);
  if (!st) st = cli_buf_fill_uniform(p->device, c->q, p->dtype, qn, p->seed * 4 + 3);
  if (!st) st = cell_tables(p, npages, c);
  if (st) return st;
  attn_tensor q = attn_tensor_bhsd(c->q, p->dtype, p->device, p->b, p->hq, 1, p->d);
  attn_tensor o = attn_tensor_bhsd(c->out, p->dtype, p->device, p->b, p->hq, 1, p->d);
  attn_tensor kv[2];
  for (int i = 0; i < 2; i++) { /* memory [pages, page, Hkv, D] */
    kv[i] = attn_tensor_bhsd(i ? pool->v : pool->k, p->dtype, p->device, npages, p->hkv,
                             p->page_size, p->d);
    kv[i].strides[1] = p->d, kv[i].strides[2] = p->hkv * p->d;
  }
  c->args = attn_args_make(q, kv[0], kv[1], o);
  c->seqs =
      (attn_seqs){.batch = p->b, .kv_lens = c->lens, .block_table = c->table, .max_pages = per};
  c->args.seqs = &c->seqs;
  if ((st = attn_args_check(&c->args))) return st;
  c->seqs.trusted = 1, c->seqs.max_q = 1, c->seqs.max_kv = p->sk;
  return ATTN_STATUS_OK;
}
