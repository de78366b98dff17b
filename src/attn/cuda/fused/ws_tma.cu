// Host side of the warp-specialized flash kernel's TMA maps (ws_tma.h): the
// driver entry point looked up once, the stride rules checked for the
// why-not, and the encoded maps kept in the engine handle's cache
// (src/attn/cache.h, kind ATTN_CACHE_TMA_DESC) keyed by the problem.
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/cuda/common/cuda_common.h"
#include "attn/cache.h"
#include "attn/ctx.h"
#include "attn/cuda/fused/ws_tma.h"

typedef CUresult (*ws_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                 const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                 const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's encoder, looked up once per process (as the library loaders
// are: a property of the driver, not of a handle).
static pthread_once_t ws_encoder_once = PTHREAD_ONCE_INIT;
static ws_encode_fn ws_encoder_fn;

static void ws_encoder_load(void) {
  void *f = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                       &q) == cudaSuccess &&
      q == cudaDriverEntryPointSuccess)
    ws_encoder_fn = (ws_encode_fn)f;
}

static ws_encode_fn ws_encoder(void) {
  pthread_once(&ws_encoder_once, ws_encoder_load);
  return ws_encoder_fn;
}

extern "C" int attn_ws_tma_ok(const attn_args *a, char *why, size_t why_len) {
  static const char *const names[4] = {"q", "k", "v", "out"};
  const attn_tensor *ts[4] = {&a->q, &a->k, &a->v, &a->out};
  for (int i = 0; i < 4; i++) {
    const attn_tensor *t = ts[i];
    if ((uintptr_t)t->data & 15) {
      snprintf(why, why_len, "TMA needs 16-byte aligned bases: %s is not", names[i]);
      return 0;
    }
    for (int j = 0; j < 3; j++) {
      const int64_t bytes = t->strides[j] * 2;
      if (t->shape[j] > 1 && (bytes % 16 || bytes <= 0 || bytes >= ((int64_t)1 << 40))) {
        snprintf(why, why_len,
                 "TMA takes strides that are positive multiples of 16 bytes below "
                 "2^40: %s stride[%d] = %lld elements",
                 names[i], j, (long long)t->strides[j]);
        return 0;
      }
    }
  }
  if (!ws_encoder()) {
    snprintf(why, why_len, "the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12)");
    return 0;
  }
  return 1;
}

// One map: dims (D, S, H, B), byte strides of S, H, B; a dimension of size 1
// gets a harmless stride (TMA checks it though it is never stepped).
static attn_status ws_encode(CUtensorMap *m, const void *base, int bf16, int d, int s, int h, int b,
                             int64_t ss, int64_t sh, int64_t sb, int rows) {
  const cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)s, (cuuint64_t)h, (cuuint64_t)b};
  int64_t st[3] = {ss * 2, sh * 2, sb * 2};
  const int64_t ext[3] = {s, h, b};
  int64_t span = (int64_t)d * 2;
  for (int j = 0; j < 3; j++) {
    if (ext[j] <= 1) st[j] = (span + 15) / 16 * 16;
    span = st[j] * ext[j];
  }
  const cuuint64_t strides[3] = {(cuuint64_t)st[0], (cuuint64_t)st[1], (cuuint64_t)st[2]};
  const cuuint32_t box[4] = {64, (cuuint32_t)rows, 1, 1}, estr[4] = {1, 1, 1, 1};
  CUresult r = ws_encoder()(
      m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, (void *)base,
      dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return attn_fail(ATTN_STATUS_UNSUPPORTED,
                     "flash (ws): cuTensorMapEncodeTiled refused a map "
                     "(error %d; dims %d x %d x %d x %d, strides %lld/%lld/%lld bytes)",
                     (int)r, d, s, h, b, (long long)st[0], (long long)st[1], (long long)st[2]);
  return ATTN_STATUS_OK;
}

static attn_status ws_encode_all(const attn_fused_params *p, int bf16, int q_rows, int kv_rows,
                                 int o_rows, attn_ws_maps *m) {
  attn_status st;
  if ((st = ws_encode(&m->q, p->q, bf16, p->d, p->sq, p->hq, p->b, p->q_ss, p->q_sh, p->q_sb,
                      q_rows)))
    return st;
  if ((st = ws_encode(&m->k, p->k, bf16, p->d, p->sk, p->hkv, p->b, p->k_ss, p->k_sh, p->k_sb,
                      kv_rows)))
    return st;
  if ((st = ws_encode(&m->v, p->v, bf16, p->d, p->sk, p->hkv, p->b, p->v_ss, p->v_sh, p->v_sb,
                      kv_rows)))
    return st;
  return ws_encode(&m->o, p->o, bf16, p->d, p->sq, p->hq, p->b, p->o_ss, p->o_sh, p->o_sb, o_rows);
}

// The problem's identity for the cache: pointers, extents, strides, boxes.
typedef struct {
  const void *q, *k, *v, *o;
  int64_t strides[12];
  int dims[6], boxes[3], bf16, pad;
} ws_key;

// A miss encodes the four maps and puts them in the handle's cache; a map is
// copied into the kernel's parameters at launch, within the same call, and
// the cache frees nothing before the call ends.
static const attn_ws_maps *attn_ws_maps_cached(const ws_key *key, const attn_fused_params *p,
                                               attn_status *st) {
  attn_cache *cache = p->ctx->cache;
  attn_ws_maps *m = (attn_ws_maps *)attn_cache_find(cache, ATTN_CACHE_TMA_DESC, key, sizeof *key);
  if (m) return m;
  if (!(m = (attn_ws_maps *)malloc(sizeof *m))) {
    *st = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for TMA maps");
    return NULL;
  }
  *st = ws_encode_all(p, key->bf16, key->boxes[0], key->boxes[1], key->boxes[2], m);
  if (*st) {
    free(m);
    return NULL;
  }
  if (attn_cache_put(cache, ATTN_CACHE_TMA_DESC, key, sizeof *key, m, free)) {
    *st = attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for TMA maps");
    return NULL;
  }
  return m;
}

extern "C" attn_status attn_ws_maps_get(const attn_fused_params *p, int bf16, int q_rows,
                                        int kv_rows, int o_rows, const attn_ws_maps **out) {
  if (!ws_encoder())
    return attn_fail(ATTN_STATUS_UNSUPPORTED,
                     "flash (ws): the driver has no cuTensorMapEncodeTiled");
  ws_key key;
  memset(&key, 0, sizeof key);
  key.q = p->q, key.k = p->k, key.v = p->v, key.o = p->o;
  const int64_t s[12] = {p->q_sb, p->q_sh, p->q_ss, p->k_sb, p->k_sh, p->k_ss,
                         p->v_sb, p->v_sh, p->v_ss, p->o_sb, p->o_sh, p->o_ss};
  memcpy(key.strides, s, sizeof s);
  key.dims[0] = p->b, key.dims[1] = p->hq, key.dims[2] = p->hkv;
  key.dims[3] = p->sq, key.dims[4] = p->sk, key.dims[5] = p->d;
  key.boxes[0] = q_rows, key.boxes[1] = kv_rows, key.boxes[2] = o_rows, key.bf16 = bf16;
  attn_status st = ATTN_STATUS_OK;
  *out = attn_ws_maps_cached(&key, p, &st);
  return st;
}
