/* Dispatch: one why-not check used both to explain refusals and to run, and
 * AUTO's choice (the first backend in preference order that takes the inputs).
 * Every entry point takes the engine handle; with opts.locked the calls on one
 * handle take turns on its lock. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "attn/auto_table.h"
#include "attn/backend.h"

/* AUTO's order where nothing was measured (the CPU, a card family missing
 * from auto_table.c, backends a measured row lacks): the fused backends
 * first, then the careful reference. A backend that refuses passes to the
 * next (cuDNN when it has no engine or no library, flash for masks or fp32).
 * naive and naive_inplace are teaching baselines, never picked
 * automatically. */
static const attn_backend fixed_order[] = {ATTN_BACKEND_CUDNN, ATTN_BACKEND_FLASH,
                                           ATTN_BACKEND_EFFICIENT, ATTN_BACKEND_MATH};
enum { N_FIXED = sizeof fixed_order / sizeof fixed_order[0] };

const attn_auto_row *attn_auto_lookup(int cc, int64_t d, int64_t s, int causal) {
  const attn_auto_row *best = NULL;
  double best_score = 0;
  for (size_t i = 0; i < attn_auto_table_len; i++) {
    const attn_auto_row *r = &attn_auto_table[i];
    if (r->cc != cc || r->causal != causal) continue;
    /* D first (a kernel's tile follows D), then S on a log scale. */
    double score = fabs((double)(r->d - d)) * 1e6 + fabs(log2((double)r->s) - log2((double)s));
    if (!best || score < best_score) best = r, best_score = score;
  }
  return best;
}

/* The order AUTO tries for a: the measured row's (if any) then the fixed
 * order's remaining backends. Returns the count; *row is the row used. */
static int auto_order_of(const attn_args *a, attn_backend *order, const attn_auto_row **row) {
  int n = 0;
  *row = NULL;
  /* Several sequences: flash first. The measured rows are dense prefill; cuDNN
   * builds a plan per batch size and pool shape (tens of ms each time a
   * server's batch changes) and ran 3x slower than flash at 8 new tokens. */
  if (a->seqs) order[n++] = ATTN_BACKEND_FLASH;
  if (a->q.device >= 0 && !a->seqs) {
    int cc = attn_device_cc(a->q.device);
    *row = cc ? attn_auto_lookup(cc, attn_head_dim(a), attn_seq_k(a), a->causal != ATTN_CAUSAL_NONE)
              : NULL;
  }
  for (int i = 0; *row && i < (*row)->n; i++) order[n++] = (*row)->order[i];
  for (int i = 0; i < N_FIXED; i++) {
    int seen = 0;
    for (int j = 0; j < n; j++) seen |= order[j] == fixed_order[i];
    if (!seen) order[n++] = fixed_order[i];
  }
  return n;
}

/* The first line of AUTO's log: where its order came from. */
static size_t log_order(char *log, size_t len, const attn_auto_row *row, const attn_args *a) {
  if (a->seqs)
    return (size_t)snprintf(log, len, "order: fixed for several sequences (flash first)\n");
  if (!row) return (size_t)snprintf(log, len, "order: fixed (no measured table for this device)\n");
  size_t used = (size_t)snprintf(log, len,
                                 "order: measured on compute capability %d.%d at D=%d "
                                 "S=%lld%s (%s):",
                                 row->cc / 10, row->cc % 10, row->d, (long long)row->s,
                                 row->causal ? " causal" : "", attn_auto_table_source);
  for (int i = 0; i < row->n && used < len; i++)
    used += (size_t)snprintf(log + used, len - used, " %s %.0f", attn_backend_name(row->order[i]),
                             row->tflops[i]);
  if (used < len) used += (size_t)snprintf(log + used, len - used, " TFLOP/s\n");
  return used;
}

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
  if (impl->backend == ATTN_BACKEND_EFFICIENT)
    return ": its kernel reads one dense [B, Hkv, Sk, D] K/V; flash takes these problems";
  return "";
}

static const char *device_word(int device) { return device < 0 ? "the CPU" : "CUDA devices"; }

/* The why-not check of one implementation: availability, the table's
 * capabilities, then the backend's own check. */
static attn_status impl_why_not(attn_ctx *ctx, const attn_backend_impl *impl, const attn_args *a,
                                char *why, size_t len) {
  attn_status st;
  if (impl->available && (st = impl->available(why, len)) != ATTN_STATUS_OK) return st;
  if (!(impl->dtypes & ATTN_DTYPE_BIT(a->q.dtype))) {
    snprintf(why, len, "%s does not take dtype %s", impl->impl, attn_dtype_name(a->q.dtype));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (attn_head_dim(a) > impl->max_head_dim) {
    snprintf(why, len, "%s takes head dims up to %d, got D=%lld", impl->impl, impl->max_head_dim,
             (long long)attn_head_dim(a));
    return ATTN_STATUS_UNSUPPORTED;
  }
  if (a->seqs && !impl->takes_seqs) {
    snprintf(why, len,
             "%s does not take several sequences (attn_seqs: packed queries, "
             "paged or per-sequence KV)%s",
             impl->impl, attn_seqs_refusal_detail(impl));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return impl->why_not ? impl->why_not(ctx, a, why, len) : ATTN_STATUS_OK;
}

static attn_status backend_why_not(attn_ctx *ctx, attn_backend b, const attn_args *a, char *why,
                                   size_t len) {
  const attn_backend_impl *impl = attn_backend_find(b, a->q.device);
  if (!impl) {
    snprintf(why, len, "%s has no implementation for %s in this build", attn_backend_name(b),
             device_word(a->q.device));
    return ATTN_STATUS_UNSUPPORTED;
  }
  return impl_why_not(ctx, impl, a, why, len);
}

/* A log line names the backend once: a reason starting with its name drops it. */
static const char *without_name(const char *why, attn_backend b) {
  size_t n = strlen(attn_backend_name(b));
  return strncmp(why, attn_backend_name(b), n) == 0 && why[n] == ' ' ? why + n + 1 : why;
}

static attn_status select_locked(attn_ctx *ctx, const attn_args *a, attn_backend *picked, char *log,
                                 size_t log_len) {
  attn_status st = attn_args_check(a);
  if (st) return st;
  size_t used = 0;
  int found = 0;
  attn_backend order[ATTN_AUTO_MAX + N_FIXED];
  const attn_auto_row *row;
  int n = auto_order_of(a, order, &row);
  if (log && log_len) used = log_order(log, log_len, row, a);
  /* Without a log, stop at the first taker: a why-not check can be costly
   * (cuDNN builds a plan), and only an explanation needs the rest. */
  for (int i = 0; i < n && !(found && !log); i++) {
    char why[512] = "";
    attn_status s = backend_why_not(ctx, order[i], a, why, sizeof why);
    const char *verdict = s ? "refused" : found ? "would also run" : "taken";
    if (!s && !found) found = 1, *picked = order[i];
    if (log && used < log_len)
      used += (size_t)snprintf(log + used, log_len - used, "%-14s %-15s%s%s\n",
                               attn_backend_name(order[i]), verdict, s ? ": " : "",
                               without_name(why, order[i]));
  }
  if (!found)
    return attn_fail(ATTN_STATUS_UNSUPPORTED, "no backend takes these inputs on %s",
                     device_word(a->q.device));
  return ATTN_STATUS_OK;
}

static void ctx_lock(attn_ctx *ctx) {
  if (ctx->opts.locked) pthread_mutex_lock(&ctx->lock);
}
/* Every call ends here: what the call put in the cache is bounded now that
 * nothing of the call still holds a pointer into it (cache.h). */
static void ctx_unlock(attn_ctx *ctx) {
  attn_cache_trim(ctx->cache);
  if (ctx->opts.locked) pthread_mutex_unlock(&ctx->lock);
}

static attn_status no_ctx(void) {
  return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                   "no engine handle: pass one made by attn_ctx_create");
}

attn_status attn_select(attn_ctx *ctx, const attn_args *a, attn_backend *picked, char *log,
                        size_t log_len) {
  if (!ctx) return no_ctx();
  ctx_lock(ctx);
  attn_status st = select_locked(ctx, a, picked, log, log_len);
  ctx_unlock(ctx);
  return st;
}

static attn_status why_not_locked(attn_ctx *ctx, attn_backend backend, const attn_args *a,
                                  char *why, size_t why_len) {
  attn_status st = attn_args_check(a);
  if (st) {
    snprintf(why, why_len, "%s", attn_last_error());
    return st;
  }
  if (backend == ATTN_BACKEND_AUTO) {
    st = select_locked(ctx, a, &backend, NULL, 0);
    if (st) snprintf(why, why_len, "%s", attn_last_error());
    return st;
  }
  if ((unsigned)backend >= ATTN_BACKEND_COUNT) {
    snprintf(why, why_len, "backend %d unknown", (int)backend);
    return ATTN_STATUS_INVALID_ARGUMENT;
  }
  return backend_why_not(ctx, backend, a, why, why_len);
}

attn_status attn_why_not(attn_ctx *ctx, attn_backend backend, const attn_args *a, char *why,
                         size_t why_len) {
  char local[512];
  if (!why || !why_len) why = local, why_len = sizeof local;
  why[0] = '\0';
  if (!ctx) {
    attn_status st = no_ctx();
    snprintf(why, why_len, "%s", attn_last_error());
    return st;
  }
  ctx_lock(ctx);
  attn_status st = why_not_locked(ctx, backend, a, why, why_len);
  ctx_unlock(ctx);
  return st;
}

static attn_status forward_locked(attn_ctx *ctx, attn_backend backend, const attn_args *a) {
  char why[512];
  attn_status st;
  if (backend == ATTN_BACKEND_AUTO) {
    /* select already ran the chosen backend's why-not check. */
    if ((st = select_locked(ctx, a, &backend, NULL, 0))) return st;
  } else if ((st = why_not_locked(ctx, backend, a, why, sizeof why))) {
    return attn_fail(st, "%s", why);
  }
  const attn_backend_impl *impl = attn_backend_find(backend, a->q.device);
  /* OpenMP's thread count is per calling thread: set it for this call. */
  if (impl->device_kind == ATTN_DEVICE_CPU && ctx->opts.cpu_threads > 0)
    omp_set_num_threads(ctx->opts.cpu_threads);
  return impl->forward(ctx, a);
}

attn_status attn_forward(attn_ctx *ctx, attn_backend backend, const attn_args *a) {
  if (!ctx) return no_ctx();
  ctx_lock(ctx);
  attn_status st = forward_locked(ctx, backend, a);
  ctx_unlock(ctx);
  return st;
}

size_t attn_backend_list(attn_backend_info *info, size_t max) {
  for (size_t i = 0; i < attn_backend_table_len && i < max; i++) {
    const attn_backend_impl *impl = attn_backend_table[i];
    info[i] = (attn_backend_info){impl->backend, attn_backend_name(impl->backend), impl->impl,
                                  impl->device_kind, impl->summary};
  }
  return attn_backend_table_len;
}
