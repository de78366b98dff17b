/* The backend table: every implementation registers one attn_backend_impl
 * (name, capabilities, why-not check, launcher) in registry.c. Dispatch and
 * attn_why_not read only this table, so the check a user sees and the code
 * that runs never disagree. */
#ifndef ATTNPROF_SRC_ATTN_BACKEND_H
#define ATTNPROF_SRC_ATTN_BACKEND_H

#include <stddef.h>

#include "attn/ctx.h"
#include "attnprof/attn.h"
#include "core/error.h"

#ifdef __cplusplus /* the CUDA backends (.cu) include this too */
extern "C" {
#endif

#define ATTN_DTYPE_BIT(d) (1u << (d))

typedef struct {
  attn_backend backend;
  const char *impl;    /* unique, e.g. "flash_cpu" */
  int device_kind;     /* ATTN_DEVICE_CPU, or 0 for any CUDA device */
  const char *summary; /* one line for --version and docs */
  unsigned dtypes;     /* ATTN_DTYPE_BIT mask of q/k/v dtypes taken */
  int max_head_dim;
  /* Checks that need more than the fields above (memory, strides, ...).
   * Returns ATTN_STATUS_OK or writes a reason into why. May be NULL. */
  attn_status (*why_not)(attn_ctx *ctx, const attn_args *args, char *why, size_t why_len);
  attn_status (*forward)(attn_ctx *ctx, const attn_args *args);
  /* Whether this implementation can run at all here (a GPU present, a
   * library loadable). May be NULL (always available). */
  attn_status (*available)(char *why, size_t why_len);
  /* 1: forward takes several sequences (args->seqs, attn_seqs); 0: dispatch
   * refuses them before why_not is asked. */
  int takes_seqs;
} attn_backend_impl;

/* The table: which implementations exist (AUTO's preference is dispatch.c's). */
extern const attn_backend_impl *const attn_backend_table[];
extern const size_t attn_backend_table_len;

/* The implementation of `backend` for the device the tensors are on, or NULL. */
const attn_backend_impl *attn_backend_find(attn_backend backend, int device);

/* Byte count of the S x S score buffer(s) naive and math need; the memory
 * check reports it before anything is allocated. */
size_t attn_scores_bytes(const attn_args *args, int n_buffers);

/* Compute capability of a CUDA device as major * 10 + minor; 0 when unknown
 * or in a build without CUDA. AUTO's measured table is keyed by it. */
int attn_device_cc(int device);

/* Accessors used by every CPU backend. */
int64_t attn_batch(const attn_args *a);
int64_t attn_heads_q(const attn_args *a);
int64_t attn_heads_kv(const attn_args *a);
int64_t attn_seq_q(const attn_args *a);
int64_t attn_seq_k(const attn_args *a);
int64_t attn_head_dim(const attn_args *a);
double attn_scale_of(const attn_args *a);
/* Last key index (inclusive) query i may see under the causal rule, or
 * Sk - 1 when not causal. May be < 0: a fully masked row. */
int64_t attn_causal_last_key(const attn_args *a, int64_t i);

#ifdef __cplusplus
}
#endif

#endif
