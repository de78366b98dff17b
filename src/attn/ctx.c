/* The engine handle: creation from options, the environment as a command
 * line's convenience, statistics, trim and teardown. See attn.h. */
#include "attn/ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/backend.h"
#include "core/opts.h"

enum { DEFAULT_CACHE_CAPACITY = 64 };

/* The values opts.cpu_isa takes (and ATTNPROF_CPU_ISA). */
static const char *const cpu_isas[] = {"auto", "portable", "avx2", "avx512"};

attn_ctx_opts attn_ctx_opts_default(void) {
  attn_ctx_opts o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.cache_capacity = DEFAULT_CACHE_CAPACITY;
  return o;
}

/* Index of `v` in names[0..n), or -1. */
static int name_index(const char *v, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) return i;
  return -1;
}

static attn_status env_choice(const char *var, const char *const *names, int n, int *out) {
  const char *v = getenv(var);
  if (!v || !*v) return ATTN_STATUS_OK;
  int i = name_index(v, names, n);
  if (i < 0) {
    char list[128] = "";
    for (int k = 0; k < n; k++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", names[k]);
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s=%s: accepted are %s", var, v, list);
  }
  *out = i;
  return ATTN_STATUS_OK;
}

static attn_status env_size(const char *var, size_t *out) {
  const char *v = getenv(var);
  if (!v || !*v) return ATTN_STATUS_OK;
  char *end;
  unsigned long long n = strtoull(v, &end, 10);
  if (*end || v[0] == '-')
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "%s=%s: accepted is a whole number", var, v);
  *out = (size_t)n;
  return ATTN_STATUS_OK;
}

attn_status attn_ctx_opts_from_env(attn_ctx_opts *o) {
  static const char *const kernels[] = {"auto", "mma_sync", "wgmma", "ws"};
  static const char *const graphs[] = {"auto", "composite", "node"};
  static const char *const onoff[] = {"0", "1"};
  size_t oldest = ATTN_OPTS_SIZE(attn_ctx_opts, locked);
  if (o->size < oldest || o->size > sizeof *o) /* it writes only fields every known size has */
    return attn_opts_take(o, sizeof *o, oldest, o, "attn_ctx_opts");
  int k = (int)o->flash_kernel, g = (int)o->cudnn_graph, cg = o->cuda_graphs != 0, isa = -1;
  attn_status st;
  if ((st = env_choice("ATTNPROF_FLASH_KERNEL", kernels, 4, &k)) ||
      (st = env_choice("ATTNPROF_CUDNN_GRAPH", graphs, 3, &g)) ||
      (st = env_choice("ATTNPROF_CUDA_GRAPHS", onoff, 2, &cg)) ||
      (st = env_choice("ATTNPROF_CPU_ISA", cpu_isas, 4, &isa)) ||
      (st = env_size("ATTNPROF_CACHE_CAPACITY", &o->cache_capacity)) ||
      (st = env_size("ATTNPROF_WORKSPACE_LIMIT", &o->workspace_limit)))
    return st;
  o->flash_kernel = (attn_flash_kernel)k, o->cudnn_graph = (attn_cudnn_graph)g;
  o->cuda_graphs = cg;
  if (isa >= 0) o->cpu_isa = cpu_isas[isa];
  return ATTN_STATUS_OK;
}

static attn_status opts_check(const attn_ctx_opts *o) {
  if ((unsigned)o->flash_kernel >= ATTN_FLASH_KERNEL_COUNT)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "opts.flash_kernel %d: accepted are ATTN_FLASH_KERNEL_AUTO..WS (0..3)",
                     (int)o->flash_kernel);
  if ((unsigned)o->cudnn_graph > ATTN_CUDNN_GRAPH_NODE)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "opts.cudnn_graph %d: accepted are AUTO, COMPOSITE, NODE (0..2)",
                     (int)o->cudnn_graph);
  if (o->cpu_threads < 0)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "opts.cpu_threads %d: accepted are 0 (OpenMP's default) or more",
                     o->cpu_threads);
  if (o->cpu_isa && name_index(o->cpu_isa, cpu_isas, 4) < 0)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "opts.cpu_isa \"%s\": accepted are auto, portable, avx2, avx512", o->cpu_isa);
  return ATTN_STATUS_OK;
}

attn_status attn_ctx_create(const attn_ctx_opts *opts, attn_ctx **out) {
  attn_ctx_opts o = attn_ctx_opts_default();
  *out = NULL;
  attn_status st =
      attn_opts_take(&o, sizeof o, ATTN_OPTS_SIZE(attn_ctx_opts, locked), opts, "attn_ctx_opts");
  if (!st) st = opts_check(&o);
  if (st) return st;
  attn_ctx *c = calloc(1, sizeof *c);
  if (!c) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for an engine handle");
  if (!o.cache_capacity) o.cache_capacity = DEFAULT_CACHE_CAPACITY;
  if (o.cpu_isa) {
    snprintf(c->cpu_isa, sizeof c->cpu_isa, "%s", o.cpu_isa);
    o.cpu_isa = c->cpu_isa;
  }
  c->opts = o;
  if (!(c->cache = attn_cache_create(o.cache_capacity)) || pthread_mutex_init(&c->lock, NULL)) {
    attn_cache_free(c->cache);
    free(c);
    return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "no host memory for an engine handle");
  }
  *out = c;
  return ATTN_STATUS_OK;
}

void attn_ctx_destroy(attn_ctx *c) {
  if (!c) return;
  /* Cached values (graphs, masks, plans) may use device state: they go first. */
  attn_cache_free(c->cache);
  attn_cuda_ctx_release(c, 0);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

const attn_ctx_opts *attn_ctx_options(const attn_ctx *c) { return &c->opts; }

void attn_ctx_stats_get(attn_ctx *c, attn_ctx_stats *out) {
  memset(out, 0, sizeof *out);
  if (c->opts.locked) pthread_mutex_lock(&c->lock);
  attn_cache_stats s = attn_cache_stats_of(c->cache);
  out->cache_entries = s.entries, out->cache_capacity = s.capacity;
  out->cache_hits = s.hits, out->cache_misses = s.misses, out->cache_evictions = s.evictions;
  out->workspace_bytes = attn_cuda_ctx_bytes(c);
  out->workspace_limit = c->opts.workspace_limit;
  if (c->opts.locked) pthread_mutex_unlock(&c->lock);
}

void attn_ctx_trim(attn_ctx *c) {
  if (c->opts.locked) pthread_mutex_lock(&c->lock);
  attn_cache_drop(c->cache, 0, NULL, NULL);
  attn_cuda_ctx_release(c, 1);
  if (c->opts.locked) pthread_mutex_unlock(&c->lock);
}

#ifndef ATTNPROF_HAVE_CUDA
int attn_device_cc(int device) {
  (void)device;
  return 0;
}
void attn_cuda_ctx_release(attn_ctx *c, int keep_handles) { (void)c, (void)keep_handles; }
size_t attn_cuda_ctx_bytes(const attn_ctx *c) {
  (void)c;
  return 0;
}
#endif
