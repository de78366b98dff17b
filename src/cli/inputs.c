/* Random, seeded inputs for one problem: Q, K, V (optionally laid out as
 * [B, S, H, D]), out, an optional mask broadcast over heads, and the LSE. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/testing.h"
#include "core/error.h"
#include "cli/cli.h"
#include "cli/cli_cuda.h"

/* splitmix64: small, seedable, good enough for test data. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

static attn_tensor make_tensor(const cli_problem *p, int64_t h, int64_t s, void **buf,
                               attn_status *st) {
  /* In double: four sizes of up to 2^24 overflow int64. */
  double bytes = (double)p->b * (double)h * (double)s * (double)p->d * attn_dtype_size(p->dtype);
  double avail = (double)attn_host_memory_available();
  *buf = NULL;
  if (*st == ATTN_STATUS_OK && avail > 0 && bytes > avail)
    *st = attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                    "one input tensor needs %.0f bytes but %.0f are available: choose a smaller "
                    "--shape",
                    bytes, avail);
  else if (*st == ATTN_STATUS_OK && !(*buf = malloc((size_t)bytes)))
    *st = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cannot allocate %.0f bytes for an input", bytes);
  attn_tensor t = attn_tensor_bhsd(*buf, p->dtype, p->device, p->b, h, s, p->d);
  if (p->bshd) {
    t.strides[0] = s * h * p->d, t.strides[1] = p->d, t.strides[2] = h * p->d, t.strides[3] = 1;
  }
  return t;
}

static void fill_uniform(attn_tensor *t, uint64_t *seed) {
  for (int64_t b = 0; b < t->shape[0]; b++)
    for (int64_t h = 0; h < t->shape[1]; h++)
      for (int64_t s = 0; s < t->shape[2]; s++)
        for (int64_t d = 0; d < t->shape[3]; d++)
          attn_tensor_set(t, b, h, s, d, 2 * uniform(seed) - 1);
}

/* [B, 1, Sq, Sk] broadcast over heads: bool with about 1 in 5 masked, or
 * additive in [-2, 2] with about 1 in 10 at -inf. */
static void fill_mask(attn_tensor *m, attn_mask_kind kind, uint64_t *seed) {
  for (int64_t b = 0; b < m->shape[0]; b++)
    for (int64_t i = 0; i < m->shape[2]; i++)
      for (int64_t j = 0; j < m->shape[3]; j++) {
        double u = uniform(seed);
        double v = kind == ATTN_MASK_BOOL ? (u >= 0.2) : u < 0.1 ? -INFINITY : 4 * u - 2;
        attn_tensor_set(m, b, 0, i, j, v);
      }
}

static attn_status make_mask(const cli_problem *p, cli_inputs *in, uint64_t *seed) {
  attn_dtype dt = p->mask == ATTN_MASK_BOOL ? ATTN_DTYPE_BOOL : p->dtype;
  double bytes = (double)p->b * (double)p->sq * (double)p->sk * attn_dtype_size(dt);
  double avail = (double)attn_host_memory_available();
  if (avail > 0 && bytes > avail)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "the mask needs %.0f bytes but %.0f are available: choose a smaller --shape",
                     bytes, avail);
  if (!(in->bufs[4] = malloc((size_t)bytes)))
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cannot allocate %.0f bytes for the mask", bytes);
  attn_tensor m = attn_tensor_bhsd(in->bufs[4], dt, p->device, p->b, 1, p->sq, p->sk);
  m.shape[1] = p->hq, m.strides[1] = 0;
  in->args.mask = m;
  in->args.mask_kind = p->mask;
  fill_mask(&m, p->mask, seed);
  return ATTN_STATUS_OK;
}

/* --page-size: K and V were made as [B, S_pad, Hkv, D] (S_pad a multiple of
 * the page size); the same memory is a pool of B * S_pad / P pages, handed
 * out to the sequences in a seeded random order (the block table), each
 * sequence seeing its first Sk keys. Causal means bottom-right per sequence. */
static attn_status make_paged(const cli_problem *p, cli_inputs *in, uint64_t *seed) {
  int64_t per = (p->sk + p->page_size - 1) / p->page_size, pages = p->b * per;
  if (p->mask != ATTN_MASK_NONE)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "--page-size takes no --mask (a paged cache runs causal or none)");
  if (pages > INT32_MAX)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "--page-size %lld: %lld pages do not fit "
                     "int32 page indices: use larger pages",
                     (long long)p->page_size, (long long)pages);
  in->tables[0] = malloc((size_t)p->b * sizeof(int32_t));
  in->tables[1] = malloc((size_t)pages * sizeof(int32_t));
  if (!in->tables[0] || !in->tables[1])
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cannot allocate the block table");
  for (int64_t i = 0; i < pages; i++) in->tables[1][i] = (int32_t)i;
  for (int64_t i = pages - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(next_u64(seed) % (uint64_t)(i + 1));
    int32_t t = in->tables[1][i];
    in->tables[1][i] = in->tables[1][j], in->tables[1][j] = t;
  }
  for (int64_t b = 0; b < p->b; b++) in->tables[0][b] = (int32_t)p->sk;
  attn_tensor *kv[2] = {&in->args.k, &in->args.v};
  for (int i = 0; i < 2; i++) {
    attn_tensor *t = kv[i];
    int64_t h = t->shape[1], d = t->shape[3];
    *t = attn_tensor_bhsd(t->data, t->dtype, t->device, pages, h, p->page_size, d);
    t->strides[1] = d, t->strides[2] = h * d; /* memory [pages, page, Hkv, D] */
  }
  in->seqs = (attn_seqs){
      .batch = p->b, .kv_lens = in->tables[0], .block_table = in->tables[1], .max_pages = per};
  in->args.seqs = &in->seqs;
  if (in->args.causal == ATTN_CAUSAL_TOP_LEFT) in->args.causal = ATTN_CAUSAL_BOTTOM_RIGHT;
  return ATTN_STATUS_OK;
}

attn_status cli_inputs_create(const cli_problem *p, cli_inputs *in) {
  memset(in, 0, sizeof *in);
  if (p->device != ATTN_DEVICE_CPU) { /* host inputs first, then device copies */
    cli_problem host = *p;
    host.device = ATTN_DEVICE_CPU;
    attn_status st = cli_inputs_create(&host, in);
    return st ? st : cli_inputs_to_device(p, in);
  }
  attn_status st = ATTN_STATUS_OK;
  attn_tensor q = make_tensor(p, p->hq, p->sq, &in->bufs[0], &st);
  cli_problem kp = *p; /* paged: K/V as [B, S_pad, Hkv, D], S_pad whole pages */
  if (p->page_size > 0)
    kp.bshd = 1, kp.sk = (p->sk + p->page_size - 1) / p->page_size * p->page_size;
  attn_tensor k = make_tensor(&kp, p->hkv, kp.sk, &in->bufs[1], &st);
  attn_tensor v = make_tensor(&kp, p->hkv, kp.sk, &in->bufs[2], &st);
  attn_tensor o = make_tensor(p, p->hq, p->sq, &in->bufs[3], &st);
  if (st) return st;
  in->args = attn_args_make(q, k, v, o);
  in->args.causal = p->causal;
  in->args.scale = p->scale;
  uint64_t seed = p->seed;
  if (p->page_size > 0 && (st = make_paged(p, in, &seed))) return st;
  fill_uniform(&in->args.q, &seed);
  fill_uniform(&in->args.k, &seed);
  fill_uniform(&in->args.v, &seed);
  if (p->mask != ATTN_MASK_NONE && (st = make_mask(p, in, &seed))) return st;
  if (p->want_lse) {
    size_t bytes = (size_t)(p->b * p->hq * p->sq) * sizeof(float);
    if (!(in->bufs[5] = malloc(bytes)))
      return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cannot allocate %zu bytes for lse", bytes);
    in->args.lse = in->bufs[5];
  }
  in->host = in->args;
  return ATTN_STATUS_OK;
}

void cli_inputs_destroy(cli_inputs *in) {
  cli_inputs_free_device(in);
  for (int i = 0; i < 6; i++) free(in->bufs[i]);
  free(in->tables[0]), free(in->tables[1]);
  memset(in, 0, sizeof *in);
}
