/* The callback path's sync records (cupti_api_cb.c, PROF_SYNC_FROM_CALLBACKS),
 * and its nested driver calls, on callbacks built by hand, through the converter that CUPTI's
 * own records go through: which calls make one, its type, context, stream
 * (the special stream handles included), correlation and times, and that a
 * failed call or a launch makes none. Needs CUPTI's headers, not a GPU;
 * test_cupti_sync compares the records with CUPTI's on a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "prof/collect/cupti_api_cb.h"
#include "prof/collect/cupti_records.h"
#include "prof_gpu/api_cb_call.h"

enum {
  CTX_ID = 5,
  STREAM_BASE = 40,
  CB_SYNC = 10,
  CB_SYNC_PTSZ = 11,
  CB_WAIT = 12,
  CB_EVENT = 13,
  CB_DEVICE = 14,
  CB_LAUNCH = 15,
  CB_CTX = 20
};

static const char *fake_name(CUpti_CallbackDomain d, uint32_t cbid) {
  static const char *const rt[] = {
      [CB_SYNC] = "cudaStreamSynchronize",   [CB_SYNC_PTSZ] = "cudaStreamSynchronize_ptsz",
      [CB_WAIT] = "cudaStreamWaitEvent",     [CB_EVENT] = "cudaEventSynchronize",
      [CB_DEVICE] = "cudaDeviceSynchronize", [CB_LAUNCH] = "cudaLaunchKernel"};
  if (d == CUPTI_CB_DOMAIN_DRIVER_API) return cbid == CB_CTX ? "cuCtxSynchronize" : NULL;
  return cbid < sizeof rt / sizeof rt[0] ? rt[cbid] : NULL;
}

/* CUPTI's two look-ups, faked: the stream id tells which stream and flag came. */
static CUstream seen_stream;
static uint8_t seen_per_thread;
static CUptiResult fake_context_id(CUcontext c, uint32_t *id) {
  (void)c;
  *id = CTX_ID;
  return CUPTI_SUCCESS;
}
static CUptiResult fake_stream_id(CUcontext c, CUstream s, uint8_t per_thread, uint32_t *id) {
  (void)c;
  seen_stream = s, seen_per_thread = per_thread;
  *id = STREAM_BASE + (uint32_t)(uintptr_t)s + 100u * per_thread;
  return CUPTI_SUCCESS;
}

static CUpti_Activity *got[16];
static int n_got;
static void take(const CUpti_Activity *rec) {
  if (rec->kind != CUPTI_ACTIVITY_KIND_SYNCHRONIZATION || n_got == 16) return;
  got[n_got] = malloc(sizeof(CUpti_ActivitySynchronization2));
  memcpy(got[n_got++], rec, sizeof(CUpti_ActivitySynchronization2));
}

static void drain(void) {
  for (int i = 0; i < n_got; i++) free(got[i]);
  n_got = 0;
  cupti_api_cb_drain(take);
}

static void sync_records_from_calls(void **state) {
  (void)state;
  cupti_fns f;
  memset(&f, 0, sizeof f);
  f.GetContextId = fake_context_id;
  f.GetStreamIdEx = fake_stream_id;
  for (uint32_t cbid = 1; cbid < 16; cbid++)
    cupti_api_cb_classify(CUPTI_CB_DOMAIN_RUNTIME_API, cbid,
                          fake_name(CUPTI_CB_DOMAIN_RUNTIME_API, cbid));
  cupti_api_cb_classify(CUPTI_CB_DOMAIN_DRIVER_API, CB_CTX, "cuCtxSynchronize");
  cupti_api_cb_switched();

  /* Off: no sync record, only the calls. */
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_SYNC, (void *)3, 0, 1);
  drain();
  assert_int_equal(n_got, 0);

  cupti_api_cb_set_sync(&f);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_SYNC, (void *)3, 0, 2);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_SYNC, (void *)CU_STREAM_PER_THREAD, 0, 3);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_SYNC_PTSZ, NULL, 0, 4);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_WAIT, (void *)CU_STREAM_LEGACY, 0, 5);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_EVENT, (void *)9, 0, 6);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_DEVICE, NULL, 0, 7);
  api_cb_call(CUPTI_CB_DOMAIN_DRIVER_API, CB_CTX, NULL, 0, 8);
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_SYNC, (void *)3, 700,
              9); /* failed: CUPTI writes none */
  api_cb_call(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, (void *)3, 0, 10);
  drain();
  assert_int_equal(n_got, 7);

  static const struct {
    uint32_t corr, type, stream;
    const char *name;
  } want[] = {
      {2, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, STREAM_BASE + 3, "Stream Sync"},
      {3, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, STREAM_BASE + 100, "Stream Sync"},
      {4, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, STREAM_BASE + 100, "Stream Sync"},
      {5, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, STREAM_BASE, "Stream Wait Event"},
      {6, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, "Event Sync"},
      {7, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, "Context Sync"},
      {8, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, "Context Sync"}};
  cupti_conv *cv = cupti_conv_create(fake_name);
  for (int i = 0; i < n_got; i++) {
    const CUpti_ActivitySynchronization2 *s =
        (const CUpti_ActivitySynchronization2 *)(void *)got[i];
    print_message("sync %u: type %d stream %u\n", s->correlationId, (int)s->type, s->streamId);
    assert_int_equal(s->correlationId, want[i].corr);
    assert_int_equal(s->type, want[i].type);
    assert_int_equal(s->streamId, want[i].stream);
    assert_int_equal(s->contextId, CTX_ID);
    assert_true(s->start > 0 && s->end >= s->start);
    prof_event e;
    assert_int_equal(cupti_conv_record(cv, got[i], &e), 1);
    assert_int_equal(e.cat, PROF_CAT_CUDA_SYNC);
    assert_string_equal(e.name, want[i].name);
    assert_int_equal(e.correlation, want[i].corr);
    assert_int_equal(e.tid, 1000000 + (want[i].stream == CUPTI_SYNCHRONIZATION_INVALID_VALUE
                                           ? 0
                                           : (int64_t)want[i].stream));
  }
  /* The legacy handle asks for stream 0 without the per-thread flag. */
  assert_null(seen_stream);
  assert_int_equal(seen_per_thread, 0);
  cupti_conv_destroy(cv);
  cupti_api_cb_set_sync(NULL);
  drain();
}

static CUpti_ActivityAPI api_got[4];
static int n_api;
static void take_api(const CUpti_Activity *rec) {
  if ((rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME || rec->kind == CUPTI_ACTIVITY_KIND_DRIVER) &&
      n_api < 4)
    memcpy(&api_got[n_api++], rec, sizeof api_got[0]);
}

/* The driver call a runtime launch makes inside itself is left out (the
 * runtime call is the launch its kernel is correlated with), a driver call of
 * its own is kept. */
static void nested_driver_calls(void **state) {
  (void)state;
  enum { CB_DRV_LAUNCH = 21 };
  cupti_api_cb_switched();
  uint64_t rt_slot = 0, drv_slot = 0;
  uint32_t ret = 0;
  CUpti_CallbackData rt, drv;
  memset(&rt, 0, sizeof rt);
  rt.correlationId = 30, rt.correlationData = &rt_slot, rt.functionReturnValue = &ret;
  drv = rt;
  drv.correlationId = 31, drv.correlationData = &drv_slot;
  rt.callbackSite = drv.callbackSite = CUPTI_API_ENTER;
  cupti_api_cb_on(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &rt);
  cupti_api_cb_on(CUPTI_CB_DOMAIN_DRIVER_API, CB_DRV_LAUNCH, &drv);
  rt.callbackSite = drv.callbackSite = CUPTI_API_EXIT;
  cupti_api_cb_on(CUPTI_CB_DOMAIN_DRIVER_API, CB_DRV_LAUNCH, &drv);
  cupti_api_cb_on(CUPTI_CB_DOMAIN_RUNTIME_API, CB_LAUNCH, &rt);
  api_cb_call(CUPTI_CB_DOMAIN_DRIVER_API, CB_DRV_LAUNCH, NULL, 0, 32);
  n_api = 0;
  cupti_api_cb_drain(take_api);
  assert_int_equal(n_api, 2);
  assert_int_equal(api_got[0].kind, CUPTI_ACTIVITY_KIND_RUNTIME);
  assert_int_equal(api_got[0].cbid, CB_LAUNCH);
  assert_int_equal(api_got[0].correlationId, 30);
  assert_int_equal(api_got[1].kind, CUPTI_ACTIVITY_KIND_DRIVER);
  assert_int_equal(api_got[1].correlationId, 32);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(sync_records_from_calls),
                                     cmocka_unit_test(nested_driver_calls)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
