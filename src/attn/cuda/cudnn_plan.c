/* Heuristics to plan: mode A (the trained heuristic), then FALLBACK (every
 * engine that may apply) when A offers nothing that finalizes. Failed
 * attempts are destroyed at once; only the winning config and plan stay with
 * the builder. See cudnn_plan.h. */
#include "attn/cuda/cudnn_plan.h"

#include <stdio.h>

enum { MAX_CONFIGS = 64 };

/* The engine behind a config: its global index and whether it compiles at
 * run time. Best effort: only used in descriptions. */
static void engine_facts(const attn_cudnn_api *api, attn_cudnn_desc cfg,
                         attn_cudnn_plan_choice *c) {
  attn_cudnn_desc eng = NULL;
  int64_t n = 0;
  c->engine = -1;
  if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng)) return;
  if (!api->BackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &n, &eng)) {
    api->BackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                             &c->engine);
    cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    if (!api->BackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, notes))
      for (int64_t i = 0; i < n; i++)
        if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) c->runtime_compiled = 1;
  }
  api->BackendDestroyDescriptor(eng);
}

/* Finalizes a plan for one config; the plan or NULL (status in *st). */
static attn_cudnn_desc try_config(const attn_cudnn_api *api, cudnnHandle_t handle,
                                  attn_cudnn_desc cfg, cudnnStatus_t *st) {
  attn_cudnn_desc plan = NULL;
  if ((*st = api->BackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)))
    return NULL;
  if (!(*st = api->BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                                       1, &handle)) &&
      !(*st = api->BackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg)) &&
      !(*st = api->BackendFinalize(plan)))
    return plan;
  api->BackendDestroyDescriptor(plan);
  return NULL;
}

/* The configs heuristics `mode` offers for the graph; returns the count. */
static int64_t heuristic_configs(attn_cudnn_builder *b, attn_cudnn_desc graph,
                                 cudnnBackendHeurMode_t mode, attn_cudnn_desc *cfgs) {
  static const char what[] = "the engine heuristics";
  const attn_cudnn_api *api = b->api;
  attn_cudnn_builder hb;
  attn_cudnn_builder_init(&hb, api);
  attn_cudnn_desc heur = attn_cudnn_create(&hb, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, what);
  attn_cudnn_set(&hb, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                 1, &graph, what);
  attn_cudnn_set(&hb, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, what);
  attn_cudnn_finalize(&hb, heur, what);
  int64_t n = 0, got = 0;
  if (hb.status == CUDNN_STATUS_SUCCESS) {
    cudnnStatus_t st = api->BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
    if (st) attn_cudnn_fail(&hb, st, "the heuristics' result count");
  }
  if (n > MAX_CONFIGS) n = MAX_CONFIGS;
  for (int64_t i = 0; i < n; i++)
    if (api->BackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[i])) n = i;
  if (n > 0) {
    cudnnStatus_t st = api->BackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs);
    if (st) attn_cudnn_fail(&hb, st, "the heuristics' results"), got = 0;
  }
  for (int64_t i = got; i < n; i++) api->BackendDestroyDescriptor(cfgs[i]);
  if (hb.status != CUDNN_STATUS_SUCCESS) attn_cudnn_fail(b, hb.status, hb.failed_call);
  attn_cudnn_desc_release(&hb);
  return got;
}

static int try_mode(attn_cudnn_builder *b, cudnnHandle_t handle, attn_cudnn_desc graph,
                    cudnnBackendHeurMode_t mode, attn_cudnn_plan_choice *c) {
  const attn_cudnn_api *api = b->api;
  attn_cudnn_desc cfgs[MAX_CONFIGS];
  int64_t n = heuristic_configs(b, graph, mode, cfgs), won = -1;
  cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
  for (int64_t i = 0; i < n && won < 0; i++, c->configs_tried++)
    if ((c->plan = try_config(api, handle, cfgs[i], &st))) won = i;
  if (won < 0 && n > 0) {
    char what[96];
    snprintf(what, sizeof what, "finalize of each of %lld execution plans (heuristics %s)",
             (long long)n, mode == CUDNN_HEUR_MODE_A ? "A" : "FALLBACK");
    attn_cudnn_fail(b, st, what);
  }
  if (won >= 0) {
    engine_facts(api, cfgs[won], c);
    int64_t m = 0;
    api->BackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                             1, &m, &c->workspace);
    if (!attn_cudnn_adopt(b, cfgs[won])) won = -1;        /* ENOMEM: give up */
    else if (!attn_cudnn_adopt(b, c->plan)) cfgs[won] = NULL, won = -1;
  }
  for (int64_t i = 0; i < n; i++)
    if (i != won && cfgs[i]) api->BackendDestroyDescriptor(cfgs[i]);
  return won >= 0;
}

int attn_cudnn_plan_build(attn_cudnn_builder *b, cudnnHandle_t handle, attn_cudnn_desc graph,
                          attn_cudnn_plan_choice *c) {
  *c = (attn_cudnn_plan_choice){.engine = -1};
  if (b->status != CUDNN_STATUS_SUCCESS) return 1;
  if (try_mode(b, handle, graph, CUDNN_HEUR_MODE_A, c)) {
    c->heuristics = "A";
    return 0;
  }
  /* Mode A may fail where FALLBACK works: forget its failure and retry. */
  cudnnStatus_t a_status = b->status;
  char a_call[sizeof b->failed_call];
  snprintf(a_call, sizeof a_call, "%s", b->failed_call);
  b->status = CUDNN_STATUS_SUCCESS;
  if (try_mode(b, handle, graph, CUDNN_HEUR_MODE_FALLBACK, c)) {
    c->heuristics = "FALLBACK";
    return 0;
  }
  if (b->status == CUDNN_STATUS_SUCCESS && a_status != CUDNN_STATUS_SUCCESS)
    attn_cudnn_fail(b, a_status, a_call); /* FALLBACK offered nothing: A's reason */
  else if (b->status == CUDNN_STATUS_SUCCESS)
    attn_cudnn_fail(b, CUDNN_STATUS_NOT_SUPPORTED, "the heuristics (no engine offered)");
  return 1;
}
