// What the fused backends (flash, efficient) share on the host: attn_args ->
// kernel parameters, the 16-byte-copy test, device checks, and raising a
// kernel's dynamic shared-memory limit once per device.
#include <math.h>
#include <stdio.h>

#include "attn/cuda/fused/fused_params.h"
#include "attn/cuda/common/cuda_common.h"

extern "C" void attn_fused_params_fill(const attn_args *a, attn_fused_params *p) {
  const attn_tensor *q = &a->q, *k = &a->k, *v = &a->v, *o = &a->out, *m = &a->mask;
  *p = attn_fused_params{};
  p->q = q->data, p->k = k->data, p->v = v->data, p->o = o->data, p->lse = a->lse;
  p->q_sb = q->strides[0], p->q_sh = q->strides[1], p->q_ss = q->strides[2],
  p->q_sd = q->strides[3];
  p->k_sb = k->strides[0], p->k_sh = k->strides[1], p->k_ss = k->strides[2],
  p->k_sd = k->strides[3];
  p->v_sb = v->strides[0], p->v_sh = v->strides[1], p->v_ss = v->strides[2],
  p->v_sd = v->strides[3];
  p->o_sb = o->strides[0], p->o_sh = o->strides[1], p->o_ss = o->strides[2],
  p->o_sd = o->strides[3];
  p->b = (int)attn_batch(a), p->hq = (int)attn_heads_q(a), p->hkv = (int)attn_heads_kv(a);
  p->sq = (int)attn_seq_q(a), p->sk = (int)attn_seq_k(a), p->d = (int)attn_head_dim(a);
  if (a->mask_kind != ATTN_MASK_NONE) {
    p->mask = m->data;
    p->mask_kind = a->mask_kind == ATTN_MASK_BOOL ? ATTN_FUSED_MASK_BOOL : ATTN_FUSED_MASK_ADD;
    p->mask_dtype = (int)m->dtype;
    // A broadcast dimension (size 1) is read with stride 0 whatever was given.
    p->m_sb = m->shape[0] == 1 ? 0 : m->strides[0];
    p->m_sh = m->shape[1] == 1 ? 0 : m->strides[1];
    p->m_sq = m->strides[2], p->m_sk = m->strides[3];
    // The efficient kernel copies mask rows in 16-byte chunks when
    // the key stride is 1 and every row start is 16-byte aligned.
    const int64_t es = attn_fused_mask_esize(p);
    p->mask_vec = (p->m_sk == 1 || p->sk == 1) && ((uintptr_t)m->data & 15) == 0 &&
                  (p->sq == 1 || (p->m_sq * es) % 16 == 0) && (p->m_sb * es) % 16 == 0 &&
                  (p->m_sh * es) % 16 == 0;
  }
  p->causal = a->causal != ATTN_CAUSAL_NONE;
  p->causal_off = a->causal == ATTN_CAUSAL_BOTTOM_RIGHT ? p->sk - p->sq : 0;
  const double scale = attn_scale_of(a);
  p->scale = (float)scale;
  p->scale_log2 = (float)(scale * 1.4426950408889634);
}

extern "C" int attn_fused_vector_ok(const attn_args *a, char *why, size_t why_len) {
  static const char *const names[4] = {"q", "k", "v", "out"};
  const attn_tensor *ts[4] = {&a->q, &a->k, &a->v, &a->out};
  if (attn_head_dim(a) % 8) {
    snprintf(why, why_len, "head dim %lld is not a multiple of 8 (16-byte rows)",
             (long long)attn_head_dim(a));
    return 0;
  }
  for (int i = 0; i < 4; i++) {
    const attn_tensor *t = ts[i];
    if (((uintptr_t)t->data & 15) != 0) {
      snprintf(why, why_len, "%s is not 16-byte aligned", names[i]);
      return 0;
    }
    if (t->strides[3] != 1 && t->shape[3] > 1) {
      snprintf(why, why_len, "%s has head-dim stride %lld (needs 1)", names[i],
               (long long)t->strides[3]);
      return 0;
    }
    for (int j = 0; j < 3; j++)
      if (t->strides[j] % 8 != 0 && t->shape[j] > 1) {
        snprintf(why, why_len, "%s stride[%d] = %lld is not a multiple of 8 elements", names[i], j,
                 (long long)t->strides[j]);
        return 0;
      }
  }
  return 1;
}

extern "C" attn_status attn_fused_device_ok(const attn_args *a, const char *backend, char *why,
                                            size_t why_len) {
  const struct cudaDeviceProp *prop = attn_cuda_props(a->q.device);
  if (!prop) {
    snprintf(why, why_len, "%s: cannot read the properties of CUDA device %d", backend,
             a->q.device);
    return ATTN_STATUS_NO_DEVICE;
  }
  if (prop->major < 8) {
    snprintf(why, why_len,
             "%s needs compute capability 8.0 or newer (bf16 mma.sync); device %d "
             "(%s) is %d.%d",
             backend, a->q.device, prop->name, prop->major, prop->minor);
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (attn_batch(a) > 65535 || attn_heads_q(a) > 65535) {
    snprintf(why, why_len, "%s takes B and Hq up to 65535 (grid y/z), got B=%lld Hq=%lld", backend,
             (long long)attn_batch(a), (long long)attn_heads_q(a));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return ATTN_STATUS_OK;
}

#include "attn/cuda/fused/fused_launch.h"

attn_status attn_fused_call(attn_ctx *ctx, fused_fn fn, const attn_args *a) {
  attn_fused_params p;
  attn_fused_params_fill(a, &p);
  p.ctx = ctx;
  int prev = 0;
  ATTN_CUDA_TRY(cudaGetDevice(&prev));
  if (prev != a->q.device) ATTN_CUDA_TRY(cudaSetDevice(a->q.device));
  attn_status st = fn(p, (cudaStream_t)a->stream);
  if (prev != a->q.device) cudaSetDevice(prev);
  return st;
}
