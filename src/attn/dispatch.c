/* Dispatch: one why-not check used both to explain refusals and to run, and
 * AUTO's choice (the first backend in preference order that takes the inputs). */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "attn/backend.h"

/* AUTO's preference, fastest first as measured on the H200 (2026-11-29,
 * README): cudnn 1.4-2.2x flash's throughput over DESIGN.md's grid, flash
 * 1.2-1.4x efficient; then the careful reference. A backend that refuses
 * passes to the next (cuDNN when it has no engine or no library, flash for
 * masks or fp32). naive and naive_inplace are teaching baselines, never
 * picked automatically. */
static const attn_backend auto_order[] = {ATTN_BACKEND_CUDNN, ATTN_BACKEND_FLASH,
                                          ATTN_BACKEND_EFFICIENT, ATTN_BACKEND_MATH};

static int device_matches(const attn_backend_impl *impl, int device) {
  return device < 0 ? impl->device_kind == ATTN_DEVICE_CPU : impl->device_kind >= 0;
}

const attn_backend_impl *attn_backend_find(attn_backend backend, int device) {
  for (size_t i = 0; i < attn_backend_table_len; i++) {
    const attn_backend_impl *impl = attn_backend_table[i];
    if (impl->backend == backend && device_matches(impl, device)) return impl;
  }
  return NULL;
}

/* What a backend would need for attn_seqs problems, where it is not plain. */
static const char *attn_seqs_refusal_detail(const attn_backend_impl *impl) {
  if (impl->backend == ATTN_BACKEND_CUDNN)
    return ": not wired. cuDNN 9's headers have the pieces (OPERATION_PAGED_CACHE_LOAD, "
           "SDPA_FWD_PAGE_TABLE_K/VDESC, SDPA_FWD_SEQ_LEN_Q/KVDESC, TENSOR_RAGGED_OFFSET_DESC) "
           "but this backend's graph builder sets none of them, and which engines on the "
           "device take them is untested; flash takes these problems";
  if (impl->backend == ATTN_BACKEND_EFFICIENT)
    return ": its kernel reads one dense [B, Hkv, Sk, D] K/V; flash takes these problems";
  return "";
}

static const char *device_word(int device) { return device < 0 ? "the CPU" : "CUDA devices"; }

/* The why-not check of one implementation: availability, the table's
 * capabilities, then the backend's own check. */
static attn_status impl_why_not(const attn_backend_impl *impl, const attn_args *a, char *why,
                                size_t len) {
  attn_status st;
  if (impl->available && (st = impl->available(why, len)) != ATTN_STATUS_OK) return st;
  if (!(impl->dtypes & ATTN_DTYPE_BIT(a->q.dtype))) {
    snprintf(why, len, "%s does not take dtype %s", impl->impl, attn_dtype_name(a->q.dtype));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (attn_head_dim(a) > impl->max_head_dim) {
    snprintf(why, len, "%s takes head dims up to %d, got D=%lld", impl->impl,
             impl->max_head_dim, (long long)attn_head_dim(a));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (a->seqs && !impl->takes_seqs) {
    snprintf(why, len, "%s does not take several sequences (attn_seqs: packed queries, "
             "paged or per-sequence KV)%s", impl->impl, attn_seqs_refusal_detail(impl));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return impl->why_not ? impl->why_not(a, why, len) : ATTN_STATUS_OK;
}

static attn_status backend_why_not(attn_backend b, const attn_args *a, char *why, size_t len) {
  const attn_backend_impl *impl = attn_backend_find(b, a->q.device);
  if (!impl) {
    snprintf(why, len, "%s has no implementation for %s in this build", attn_backend_name(b),
             device_word(a->q.device));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return impl_why_not(impl, a, why, len);
}

attn_status attn_select(const attn_args *a, attn_backend *picked, char *log, size_t log_len) {
  attn_status st = attn_args_check(a);
  if (st) return st;
  size_t used = 0;
  int found = 0;
  if (log && log_len) log[0] = '\0';
  /* Without a log, stop at the first taker: a why-not check can be costly
   * (cuDNN builds a plan), and only an explanation needs the rest. */
  for (size_t i = 0; i < sizeof auto_order / sizeof auto_order[0] && !(found && !log); i++) {
    char why[512] = "";
    attn_status s = backend_why_not(auto_order[i], a, why, sizeof why);
    const char *verdict = s ? "refused" : found ? "would also run" : "taken";
    if (!s && !found) found = 1, *picked = auto_order[i];
    if (log && used < log_len)
      used += (size_t)snprintf(log + used, log_len - used, "%-14s %-15s%s%s\n",
                               attn_backend_name(auto_order[i]), verdict, s ? ": " : "", why);
  }
  if (!found)
    return attn_fail(ATTN_STATUS_UNSUPPORTED, "no backend takes these inputs on %s",
                     device_word(a->q.device));
  return ATTN_STATUS_OK;
}

attn_status attn_why_not(attn_backend backend, const attn_args *a, char *why, size_t why_len) {
  char local[512];
  if (!why || !why_len) why = local, why_len = sizeof local;
  why[0] = '\0';
  attn_status st = attn_args_check(a);
  if (st) {
    snprintf(why, why_len, "%s", attn_last_error());
    return st;
  }
  if (backend == ATTN_BACKEND_AUTO) {
    st = attn_select(a, &backend, NULL, 0);
    if (st) snprintf(why, why_len, "%s", attn_last_error());
    return st;
  }
  if ((unsigned)backend >= ATTN_BACKEND_COUNT) {
    snprintf(why, why_len, "backend %d unknown", (int)backend);
    return ATTN_STATUS_INVALID_ARGUMENT;
  }
  return backend_why_not(backend, a, why, why_len);
}

attn_status attn_forward(attn_backend backend, const attn_args *a) {
  char why[512];
  attn_status st;
  if (backend == ATTN_BACKEND_AUTO) {
    /* attn_select already ran the chosen backend's why-not check. */
    if ((st = attn_select(a, &backend, NULL, 0))) return st;
  } else if ((st = attn_why_not(backend, a, why, sizeof why))) {
    return attn_fail(st, "%s: %s", attn_backend_name(backend), why);
  }
  return attn_backend_find(backend, a->q.device)->forward(a);
}

size_t attn_backend_list(attn_backend_info *info, size_t max) {
  for (size_t i = 0; i < attn_backend_table_len && i < max; i++) {
    const attn_backend_impl *impl = attn_backend_table[i];
    info[i] = (attn_backend_info){impl->backend, attn_backend_name(impl->backend), impl->impl,
                                  impl->device_kind, impl->summary};
  }
  return attn_backend_table_len;
}

void attn_set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}
