/* Dispatch: one why-not check used both to explain refusals and to run, and
 * AUTO's choice (the first backend in preference order that takes the inputs).
 * Every entry point takes the engine handle; with opts.locked the calls on one
 * handle take turns on its lock. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "attn/backend.h"

/* AUTO's preference, fastest first as measured on the H200 (2026-11-29,
 * README): cudnn 1.4-2.2x flash's throughput over the sweep grid (compare --sweep), flash
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

static const char *device_word(int device) { return device < 0 ? "the CPU" : "CUDA devices"; }

/* The why-not check of one implementation: availability, the table's
 * capabilities, then the backend's own check. */
static attn_status impl_why_not(attn_ctx *ctx, const attn_backend_impl *impl,
                                const attn_args *a, char *why, size_t len) {
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

static attn_status select_locked(attn_ctx *ctx, const attn_args *a, attn_backend *picked,
                                 char *log, size_t log_len) {
  attn_status st = attn_args_check(a);
  if (st) return st;
  size_t used = 0;
  int found = 0;
  if (log && log_len) log[0] = '\0';
  /* Without a log, stop at the first taker: a why-not check can be costly
   * (cuDNN builds a plan), and only an explanation needs the rest. */
  for (size_t i = 0; i < sizeof auto_order / sizeof auto_order[0] && !(found && !log); i++) {
    char why[512] = "";
    attn_status s = backend_why_not(ctx, auto_order[i], a, why, sizeof why);
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

static void ctx_lock(attn_ctx *ctx) {
  if (ctx->opts.locked) pthread_mutex_lock(&ctx->lock);
}
static void ctx_unlock(attn_ctx *ctx) {
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
  /* Entries kept from earlier calls may go now; none found in this call will
   * be freed before it ends (cache.h). */
  attn_cache_trim(ctx->cache);
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
