/* The zigzag layout: chunk boundaries, shard lengths, scatter and gather of
 * host tensors, and the variant names. */
#include <string.h>

#include "cp/cp_plan.h"
#include "core/error.h"

int64_t attn_cp_chunk_len(int64_t s, int n, int c) {
  int64_t parts = 2 * (int64_t)n;
  return s / parts + (c < s % parts ? 1 : 0);
}

int64_t attn_cp_chunk_start(int64_t s, int n, int c) {
  int64_t parts = 2 * (int64_t)n, rem = s % parts;
  return c * (s / parts) + (c < rem ? c : rem);
}

int64_t attn_cp_shard_len(int64_t s, int n, int rank) {
  return attn_cp_chunk_len(s, n, rank) + attn_cp_chunk_len(s, n, 2 * n - 1 - rank);
}

static attn_status layout_check(const attn_tensor *full, const attn_tensor *shard, int n,
                                int rank) {
  if (n < 1 || rank < 0 || rank >= n)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: rank %d of %d ranks: accepted are 0 <= rank < ranks, ranks >= 1", rank,
                     n);
  if (full->device != ATTN_DEVICE_CPU || shard->device != ATTN_DEVICE_CPU)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "cp: scatter/gather take host tensors");
  int64_t want = attn_cp_shard_len(full->shape[2], n, rank);
  if (full->dtype != shard->dtype || full->shape[0] != shard->shape[0] ||
      full->shape[1] != shard->shape[1] || full->shape[3] != shard->shape[3] ||
      shard->shape[2] != want)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: shard [%lld,%lld,%lld,%lld] does not match rank %d of %d over S=%lld: "
                     "expected [B,H,%lld,D] of the same dtype",
                     (long long)shard->shape[0], (long long)shard->shape[1],
                     (long long)shard->shape[2], (long long)shard->shape[3], rank, n,
                     (long long)full->shape[2], (long long)want);
  return ATTN_STATUS_OK;
}

/* Row r of the shard is row `map(r)` of the sequence; copies element by
 * element so that any strides and dtypes work (host helpers, not a hot path). */
static void copy_rows(const attn_tensor *src, attn_tensor *dst, int n, int rank, int to_shard) {
  const attn_tensor *full = to_shard ? src : dst;
  int64_t s = full->shape[2], la = attn_cp_chunk_len(s, n, rank);
  int64_t a0 = attn_cp_chunk_start(s, n, rank), b0 = attn_cp_chunk_start(s, n, 2 * n - 1 - rank);
  int64_t l = attn_cp_shard_len(s, n, rank);
  size_t es = attn_dtype_size(src->dtype);
  for (int64_t b = 0; b < full->shape[0]; b++)
    for (int64_t h = 0; h < full->shape[1]; h++)
      for (int64_t r = 0; r < l; r++) {
        int64_t g = r < la ? a0 + r : b0 + (r - la);
        int64_t rs = to_shard ? g : r, rd = to_shard ? r : g;
        for (int64_t d = 0; d < full->shape[3]; d++) {
          const char *ps =
              (const char *)src->data + (size_t)(b * src->strides[0] + h * src->strides[1] +
                                                 rs * src->strides[2] + d * src->strides[3]) *
                                            es;
          char *pd = (char *)dst->data + (size_t)(b * dst->strides[0] + h * dst->strides[1] +
                                                  rd * dst->strides[2] + d * dst->strides[3]) *
                                             es;
          memcpy(pd, ps, es);
        }
      }
}

attn_status attn_cp_scatter(const attn_tensor *full, int n, int rank, attn_tensor *shard) {
  attn_status st = layout_check(full, shard, n, rank);
  if (st == ATTN_STATUS_OK) copy_rows(full, shard, n, rank, 1);
  return st;
}

attn_status attn_cp_gather(const attn_tensor *shard, int n, int rank, attn_tensor *full) {
  attn_status st = layout_check(full, shard, n, rank);
  if (st == ATTN_STATUS_OK) copy_rows(shard, full, n, rank, 0);
  return st;
}

static const char *const variant_names[ATTN_CP_VARIANT_COUNT] = {"auto", "ring", "allgather"};

const char *attn_cp_variant_name(attn_cp_variant v) {
  return (unsigned)v < ATTN_CP_VARIANT_COUNT ? variant_names[v] : "?";
}

attn_status attn_cp_variant_from_name(const char *name, attn_cp_variant *out) {
  for (int i = 0; name && i < ATTN_CP_VARIANT_COUNT; i++)
    if (!strcmp(name, variant_names[i])) {
      *out = (attn_cp_variant)i;
      return ATTN_STATUS_OK;
    }
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "unknown cp variant '%s': accepted are ring, allgather, auto",
                   name ? name : "(null)");
}
