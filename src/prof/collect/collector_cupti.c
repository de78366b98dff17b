/* The CUPTI collector (see collector_cupti.h): which activity kinds and API
 * calls are recorded, the start/flush/stop of a session, and the faults that
 * turn GPU collection off with a reason (no driver, no GPU, no libcupti,
 * CUPTI held by another tool).
 *
 * The launch, copy, set and sync calls (the ones a GPU activity is attributed
 * through) are recorded through the callback API, subscribed by id
 * (cupti_api_cb.c): with the RUNTIME or DRIVER kind on, CUPTI hooks every call
 * of its domain, which costs each launch (docs/design/profiler-cost.md has the
 * figures). prof_session_opts.all_api records every call through the kinds,
 * except the four that PyTorch makes per launch to no purpose (the same ones
 * Kineto silences). Of the four other GPU kinds only SYNCHRONIZATION costs per
 * launch, so by default the sync records come from the sync calls' callbacks
 * instead. */
#include "prof/collect/collector_cupti.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "prof/collect/cupti_api_cb.h"
#include "prof/collect/cupti_buffers.h"
#include "prof/collect/cupti_device.h"

static const cupti_fns *F;
static CUpti_SubscriberHandle subscriber;
static int subscribed, injected, api_all, exit_hook, finalized;
/* Sync records from the sync calls' callbacks (cupti_api_cb.c) instead of the
 * SYNCHRONIZATION kind: the default, without all_api (docs/design/profiler-cost.md);
 * prof_session_opts.sync = PROF_SYNC_FROM_KIND keeps the kind. */
static int sync_cb;
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;

static const CUpti_ActivityKind gpu_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MARKER};
enum { N_GPU_KINDS = sizeof gpu_kinds / sizeof gpu_kinds[0] };

/* Calls recorded by default: those that put work on the GPU or wait for it. */
static const char *const launch_prefixes[] = {"cudaLaunch",
                                              "cudaMemcpy",
                                              "cudaMemset",
                                              "cudaGraphLaunch",
                                              "cudaDeviceSynchronize",
                                              "cudaStreamSynchronize",
                                              "cudaEventSynchronize",
                                              "cudaStreamWaitEvent",
                                              "cuLaunch",
                                              "cuMemcpy",
                                              "cuMemset",
                                              "cuGraphLaunch",
                                              "cuCtxSynchronize",
                                              "cuStreamSynchronize",
                                              "cuEventSynchronize",
                                              "cuStreamWaitEvent"};
/* Silenced under all_api (exact names). */
static const char *const chatty[] = {"cudaGetDevice", "cuKernelGetAttribute",
                                     "cuDevicePrimaryCtxGetState", "cuCtxGetCurrent"};

static int starts_with_any(const char *name, const char *const *list, size_t n, int exact) {
  for (size_t i = 0; name && i < n; i++)
    if (exact ? !strcmp(name, list[i]) : !strncmp(name, list[i], strlen(list[i]))) return 1;
  return 0;
}

void cupti_collector_set_injected(int on) { injected = on; }

void cupti_collector_set_sink(cupti_sink_fn sink, void *ctx, size_t chunk_events) {
  cupti_buffers_set_sink(sink, ctx, chunk_events);
}

void cupti_collector_stats(cupti_stats *out) {
  cupti_buffers_stats(out);
  out->api_all = api_all;
}

/* The clock CUPTI stamps every record with: the CPU collector's. */
static uint64_t CUPTIAPI clock_ns(void) { return (uint64_t)attn_clock_ns(); }

/* Reads every device's limits (idempotent; cheap after the first time). */
static void read_devices(void) {
  pthread_mutex_lock(&dev_mu);
  const cuda_drv_fns *d = cuda_drv_load(NULL, 0);
  int n = 0;
  if (d && d->DeviceGetCount(&n) == CUDA_SUCCESS) {
    for (int i = 0; i < n; i++) {
      prof_device dev;
      if (!cupti_read_device(i, &dev)) cupti_buffers_add_device(&dev);
    }
  }
  pthread_mutex_unlock(&dev_mu);
}

/* Injected, devices are read once the program has a context: the driver is
 * initialized then, and we are on the program's thread, outside cuInit. */
static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)ud;
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API || dom == CUPTI_CB_DOMAIN_DRIVER_API) {
    cupti_api_cb_on(dom, cbid, data);
    return;
  }
  if (dom == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
    read_devices();
}

static const char *cuda_error_text(CUresult r) {
  switch ((int)r) {
    case 100:
      return "no CUDA-capable device is detected";
    case 35:
      return "the driver is older than the CUDA runtime";
    case 999:
      return "unknown error (is the device usable from this container?)";
    default:
      return "see cuda.h";
  }
}

static attn_status cupti_available(char *why, size_t len) {
  if (!injected) {
    const cuda_drv_fns *d = cuda_drv_load(why, len);
    if (!d) return ATTN_STATUS_NO_DEVICE;
    int n = 0;
    CUresult r = d->Init(0);
    if (r == CUDA_SUCCESS) r = d->DeviceGetCount(&n);
    if (r != CUDA_SUCCESS || n == 0) {
      snprintf(why, len, "no usable GPU: cuInit/cuDeviceGetCount gave CUDA error %d (%s)", (int)r,
               r == CUDA_SUCCESS ? "0 devices" : cuda_error_text(r));
      return ATTN_STATUS_NO_DEVICE;
    }
  }
  return cupti_lib_load(why, len) ? ATTN_STATUS_OK : ATTN_STATUS_NO_DEVICE;
}

/* One subscriber per process: a refusal means nsys, ncu, cuda-gdb, a
 * sanitizer or another profiler holds CUPTI, and we say which if told. */
static attn_status subscribe(void) {
  CUptiResult r;
  char holder[256] = "";
  if (F->Subscribe_v2) {
    CUpti_SubscriberParams p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "attnprof";
    p.oldSubscriberName = holder;
    p.oldSubscriberSize = sizeof holder;
    r = F->Subscribe_v2(&subscriber, (CUpti_CallbackFunc)on_callback, NULL, &p);
  } else {
    r = F->Subscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL);
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return attn_fail(ATTN_STATUS_BACKEND_ERROR,
                     "CUPTI is already held by another tool (%s); only one profiler can trace "
                     "a process (nsys, ncu, cuda-gdb, compute-sanitizer and torch.profiler each "
                     "take it)",
                     holder[0] ? holder : "not named");
  if (r != CUPTI_SUCCESS)
    return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cuptiSubscribe failed: %s", cupti_error(r));
  subscribed = 1;
  F->EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  return ATTN_STATUS_OK;
}

/* Which calls are recorded, by callback id: default, only launch, copy, set
 * and sync calls (what GPU activity is attributed through);
 * all_api: every call but the chatty four. */
static uint8_t keep_rt[CUPTI_RUNTIME_TRACE_CBID_SIZE], keep_drv[CUPTI_DRIVER_TRACE_CBID_SIZE];

static void choose_calls(void) {
  for (int d = 0; d < 2; d++) {
    uint8_t *keep = d ? keep_drv : keep_rt;
    uint32_t size = d ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    for (uint32_t cbid = 1; cbid < size; cbid++) {
      const char *name =
          cupti_cbid_name(d ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
      keep[cbid] = (uint8_t)(api_all ? name && !starts_with_any(name, chatty, 4, 1)
                                     : starts_with_any(name, launch_prefixes, 16, 0));
      cupti_api_cb_classify(d ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid,
                            keep[cbid] ? name : NULL);
    }
  }
}

/* all_api: the RUNTIME and DRIVER kinds, then the ids we do not want switched
 * off, as Kineto does. Enabling single ids without their kind gave no records
 * when CUDA was initialized before the session (in-process). */
static void set_api_kinds(uint8_t on) {
  (on ? F->ActivityEnable : F->ActivityDisable)(CUPTI_ACTIVITY_KIND_RUNTIME);
  (on ? F->ActivityEnable : F->ActivityDisable)(CUPTI_ACTIVITY_KIND_DRIVER);
  if (!on) return;
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; cbid++)
    if (!keep_rt[cbid]) F->ActivityEnableRuntimeApi(cbid, 0);
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++)
    if (!keep_drv[cbid]) F->ActivityEnableDriverApi(cbid, 0);
}

/* The default: the wanted ids of both domains through the callback API
 * (cupti_api_cb.c). */
static void set_api_callback(uint8_t on) {
  cupti_api_cb_switched();
  for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; cbid++)
    if (keep_rt[cbid]) F->EnableCallback(on, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++)
    if (keep_drv[cbid]) F->EnableCallback(on, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
}

static void set_api(uint8_t on) {
  if (api_all) set_api_kinds(on);
  else set_api_callback(on);
}

static void disable_all(void) {
  for (int i = 0; i < N_GPU_KINDS; i++) F->ActivityDisable(gpu_kinds[i]);
  set_api(0);
  cupti_api_cb_set_sync(NULL);
}

static attn_status enable_all(void) {
  for (int i = 0; i < N_GPU_KINDS; i++) {
    if (sync_cb && gpu_kinds[i] == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) continue;
    CUptiResult r = F->ActivityEnable(gpu_kinds[i]);
    if (r != CUPTI_SUCCESS) {
      disable_all();
      return attn_fail(ATTN_STATUS_BACKEND_ERROR, "cuptiActivityEnable(kind %d) failed: %s",
                       (int)gpu_kinds[i], cupti_error(r));
    }
  }
  set_api(1);
  cupti_api_cb_set_sync(sync_cb ? F : NULL);
  return ATTN_STATUS_OK;
}

static void at_exit(void) { cupti_collector_shutdown(); }

static attn_status cupti_start(prof_trace *t, unsigned collect, const prof_session_opts *opts) {
  (void)collect;
  char why[512];
  if (!(F = cupti_lib_load(why, sizeof why))) return attn_fail(ATTN_STATUS_NO_DEVICE, "%s", why);
  if (finalized) return attn_fail(ATTN_STATUS_BACKEND_ERROR, "CUPTI was shut down at exit");
  api_all = opts->all_api;
  sync_cb = !api_all && opts->sync == PROF_SYNC_FROM_CALLBACKS;
  cupti_buffers_configure(F, opts);
  attn_status st = subscribe();
  if (st) return st;
  /* Before any kind is enabled: system thread ids (gettid, as the CPU
   * collector's) and our clock for every timestamp. */
  F->SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  /* Refused (CUPTI not ready, or older than 12.x): CUPTI then stamps
   * CLOCK_REALTIME, and the converter moves those times onto ours. */
  int64_t offset = F->ActivityRegisterTimestampCallback(clock_ns) == CUPTI_SUCCESS
                       ? 0
                       : attn_clock_epoch_offset();
  cupti_buffers_set_clock_offset(offset);
  cupti_api_cb_set_clock_offset(offset);
  CUptiResult r = F->ActivityRegisterCallbacks(cupti_buffer_requested, cupti_buffer_completed);
  if (r == CUPTI_SUCCESS && cupti_buffers_set_target(t)) r = CUPTI_ERROR_OUT_OF_MEMORY;
  if (r == CUPTI_SUCCESS && !injected) read_devices();
  if (r == CUPTI_SUCCESS) choose_calls();
  if (r == CUPTI_SUCCESS && (st = enable_all()) == ATTN_STATUS_OK) {
    if (!exit_hook) exit_hook = !atexit(at_exit);
    return ATTN_STATUS_OK;
  }
  cupti_buffers_set_target(NULL);
  F->Unsubscribe(subscriber);
  subscribed = 0;
  if (r != CUPTI_SUCCESS)
    return attn_fail(ATTN_STATUS_BACKEND_ERROR, "CUPTI activity setup failed: %s", cupti_error(r));
  return st;
}

static void cupti_flush(prof_trace *t) {
  (void)t;
  if (!subscribed) return;
  /* A forced flush also returns buffers holding records of work still
   * running; those records are counted as incomplete, not kept. */
  F->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  read_devices(); /* a device that appeared mid-session (injected: all of them) */
  cupti_buffers_hand_off();
}

static void cupti_stop(prof_trace *t) {
  (void)t;
  if (!subscribed) return;
  disable_all();
  F->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cupti_buffers_set_target(NULL);
  F->Unsubscribe(subscriber);
  subscribed = 0;
}

void cupti_collector_shutdown(void) {
  if (!F || finalized) return;
  if (subscribed) cupti_stop(NULL);
  finalized = 1;
  F->Finalize();
}

const prof_collector prof_collector_cupti = {
    .name = "cupti",
    .serves = PROF_COLLECT_GPU,
    .available = cupti_available,
    .start = cupti_start,
    .flush = cupti_flush,
    .stop = cupti_stop,
};
